#!/usr/bin/env bash
# with-postgres.sh: run a command with DATABASE_URL pointing at a PostgreSQL server.
#
# Usage: scripts/with-postgres.sh CMD [ARGS...]
#
# If DATABASE_URL is already set, the server it names is checked for
# reachability and CMD is exec'd with it unchanged.
#
# Otherwise a throwaway PostgreSQL cluster is created from the locally
# installed binaries (initdb/pg_ctl on PATH, or the newest of
# /usr/lib/postgresql/*/bin and similar locations), started on a free port
# of 127.0.0.1 with durability turned off for speed, a database
# "rowfate_test" is created, and CMD is run with
#   DATABASE_URL=postgres://postgres@127.0.0.1:PORT/rowfate_test?sslmode=disable
# The server is stopped and its directory removed when the script exits
# (including on INT/TERM). The script exits with CMD's exit status.
#
# Environment:
#   DATABASE_URL   use this server instead of starting one
#   PG_BINDIR      directory holding initdb/pg_ctl (overrides the search)
#   WITH_PG_USER   system user to run the server as when invoked as root
#                  (default: rowfate-pg; created if missing)
set -euo pipefail

prog=with-postgres
log() { printf '%s: %s\n' "$prog" "$*" >&2; }
die() { log "$*"; exit 1; }

if [ "$#" -eq 0 ]; then
	echo "usage: $0 CMD [ARGS...]" >&2
	exit 2
fi

# ---------------------------------------------------------------------------
# Existing server.
# ---------------------------------------------------------------------------
if [ -n "${DATABASE_URL:-}" ]; then
	if command -v pg_isready >/dev/null 2>&1; then
		ok=0
		for _ in 1 2 3 4 5; do
			if pg_isready -q -t 5 -d "$DATABASE_URL"; then
				ok=1
				break
			fi
			sleep 1
		done
		if [ "$ok" -ne 1 ]; then
			pg_isready -t 5 -d "$DATABASE_URL" >&2 || true
			die "DATABASE_URL is set but the server is not reachable (pg_isready failed); start it or unset DATABASE_URL to use a throwaway local server"
		fi
	elif command -v psql >/dev/null 2>&1; then
		if ! PGCONNECT_TIMEOUT=10 psql "$DATABASE_URL" -X -q -A -t -c 'select 1' >/dev/null; then
			die "DATABASE_URL is set but 'select 1' failed (see error above); fix it or unset DATABASE_URL to use a throwaway local server"
		fi
	else
		log "warning: neither pg_isready nor psql found; not checking DATABASE_URL"
	fi
	export DATABASE_URL
	exec "$@"
fi

# ---------------------------------------------------------------------------
# Throwaway server: locate binaries.
# ---------------------------------------------------------------------------
install_help() {
	cat >&2 <<'EOF'
with-postgres: no PostgreSQL server binaries (initdb, pg_ctl) found.
Install them, or point DATABASE_URL at an existing server:
  Debian/Ubuntu:  sudo apt-get install postgresql
  Fedora/RHEL:    sudo dnf install postgresql-server
  macOS:          brew install postgresql@15   (keg-only; found automatically)
  or:             export DATABASE_URL='postgres://user:pass@host:5432/db?sslmode=disable'
EOF
	exit 1
}

bindir=""
if [ -n "${PG_BINDIR:-}" ]; then
	[ -x "$PG_BINDIR/initdb" ] && [ -x "$PG_BINDIR/pg_ctl" ] ||
		die "PG_BINDIR=$PG_BINDIR does not contain initdb and pg_ctl"
	bindir=$PG_BINDIR
elif command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
	p=$(command -v pg_ctl)
	# Resolve symlinks so sibling tools (createdb, pg_isready) match the server version.
	p=$(readlink -f "$p" 2>/dev/null || echo "$p")
	bindir=$(dirname "$p")
else
	best_v=-1
	for d in /usr/lib/postgresql/*/bin /usr/pgsql-*/bin \
		/opt/homebrew/opt/postgresql@*/bin /usr/local/opt/postgresql@*/bin \
		/opt/homebrew/opt/postgresql/bin /usr/local/opt/postgresql/bin; do
		[ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] || continue
		v=$(printf '%s\n' "$d" | sed -nE 's/.*(postgresql\/|pgsql-|postgresql@)([0-9]+).*/\2/p')
		[ -n "$v" ] || v=0
		if [ "$v" -gt "$best_v" ]; then
			best_v=$v
			bindir=$d
		fi
	done
fi
[ -n "$bindir" ] || install_help

# pgtool NAME: path of NAME from the server's bin dir, else from PATH.
pgtool() {
	if [ -x "$bindir/$1" ]; then
		printf '%s\n' "$bindir/$1"
	elif command -v "$1" >/dev/null 2>&1; then
		command -v "$1"
	else
		die "$1 not found (looked in $bindir and PATH)"
	fi
}
INITDB=$(pgtool initdb)
PG_CTL=$(pgtool pg_ctl)
CREATEDB=$(pgtool createdb)

# ---------------------------------------------------------------------------
# Running as root: PostgreSQL refuses, so use an unprivileged system user.
# ---------------------------------------------------------------------------
pg_user=""
if [ "$(id -u)" -eq 0 ]; then
	pg_user=${WITH_PG_USER:-rowfate-pg}
	if ! id -u "$pg_user" >/dev/null 2>&1; then
		nologin=/usr/sbin/nologin
		[ -x "$nologin" ] || nologin=/sbin/nologin
		[ -x "$nologin" ] || nologin=/bin/false
		if command -v useradd >/dev/null 2>&1; then
			useradd --system --no-create-home --home-dir /nonexistent \
				--shell "$nologin" --user-group "$pg_user" 2>/dev/null ||
				id -u "$pg_user" >/dev/null 2>&1 || # lost a race with a parallel run
				die "could not create system user $pg_user (useradd failed)"
		elif command -v adduser >/dev/null 2>&1; then # BusyBox/Alpine
			adduser -S -D -H -s "$nologin" "$pg_user" 2>/dev/null ||
				id -u "$pg_user" >/dev/null 2>&1 ||
				die "could not create system user $pg_user (adduser failed)"
		else
			die "running as root and cannot create user $pg_user (no useradd/adduser); run as a normal user or set DATABASE_URL"
		fi
	fi
fi

# sq ARG: single-quote ARG for /bin/sh.
sq() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }

# as_pg CMD ARGS...: run as the server user (cwd /, which it can always enter).
as_pg() {
	if [ -z "$pg_user" ]; then
		(cd / && "$@")
	elif command -v runuser >/dev/null 2>&1; then
		(cd / && runuser -u "$pg_user" -- "$@")
	else
		local cmd="" a
		for a in "$@"; do cmd="$cmd $(sq "$a")"; done
		(cd / && su -s /bin/sh "$pg_user" -c "exec $cmd")
	fi
}

# ---------------------------------------------------------------------------
# Create the cluster.
# ---------------------------------------------------------------------------
tmp=$(mktemp -d /tmp/rowfate-pg.XXXXXX)
datadir=$tmp/data
logfile=$tmp/postgres.log
started=0

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	# Stop the server if it was (or may have been) started: a signal can
	# arrive while pg_ctl start is still running, so go by postmaster.pid.
	if [ "$started" -eq 1 ] || [ -f "$datadir/postmaster.pid" ]; then
		if ! as_pg "$PG_CTL" -D "$datadir" -m fast -w -t 30 stop >/dev/null 2>&1; then
			as_pg "$PG_CTL" -D "$datadir" -m immediate -w -t 10 stop >/dev/null 2>&1 || true
		fi
		# Last resort: kill the postmaster if it is still around.
		if [ -f "$datadir/postmaster.pid" ]; then
			pid=$(head -n 1 "$datadir/postmaster.pid" 2>/dev/null || true)
			if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
				kill -KILL "$pid" 2>/dev/null || true
				sleep 1
			fi
		fi
	fi
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

chmod 755 "$tmp"
if [ -n "$pg_user" ]; then
	chown "$pg_user" "$tmp"
fi

if ! as_pg "$INITDB" -D "$datadir" --auth=trust -U postgres --encoding=UTF8 \
	--no-sync >"$tmp/initdb.log" 2>&1; then
	cat "$tmp/initdb.log" >&2
	die "initdb failed"
fi

# ---------------------------------------------------------------------------
# Pick a port and start the server (retrying if the port gets taken).
# ---------------------------------------------------------------------------
port_in_use() {
	# A successful connect means something is listening.
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

free_port() {
	local p
	if command -v python3 >/dev/null 2>&1 &&
		p=$(python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])' 2>/dev/null) && [ -n "$p" ]; then
		printf '%s\n' "$p"
		return 0
	fi
	for p in $(seq 55432 55631); do
		if ! port_in_use "$p"; then
			printf '%s\n' "$p"
			return 0
		fi
	done
	return 1
}

port=""
for attempt in 1 2 3 4 5; do
	port=$(free_port) || die "could not find a free TCP port"
	started=1 # from here on, cleanup must stop the server
	if as_pg "$PG_CTL" -D "$datadir" -l "$logfile" -w -t 60 \
		-o "-p $port -k $tmp -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
		start >"$tmp/pg_ctl.log" 2>&1; then
		break
	fi
	if grep -Eq 'could not bind|Address already in use' "$logfile" 2>/dev/null && [ "$attempt" -lt 5 ]; then
		log "port $port was taken, retrying"
		as_pg "$PG_CTL" -D "$datadir" -m immediate -w stop >/dev/null 2>&1 || true
		: >"$logfile"
		continue
	fi
	cat "$tmp/pg_ctl.log" >&2 || true
	echo "----- server log -----" >&2
	cat "$logfile" >&2 || true
	die "PostgreSQL failed to start"
done

if ! "$CREATEDB" -h 127.0.0.1 -p "$port" -U postgres rowfate_test; then
	echo "----- server log -----" >&2
	cat "$logfile" >&2 || true
	die "createdb rowfate_test failed"
fi

export DATABASE_URL="postgres://postgres@127.0.0.1:$port/rowfate_test?sslmode=disable"
log "PostgreSQL $("$PG_CTL" --version | awk '{print $3}') running at $DATABASE_URL"

# ---------------------------------------------------------------------------
# Run the command (not exec: the trap must stop the server afterwards).
# ---------------------------------------------------------------------------
set +e
"$@"
rc=$?
set -e
exit "$rc"
