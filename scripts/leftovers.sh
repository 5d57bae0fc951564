#!/usr/bin/env bash
# leftovers.sh: run a command (the test suite), then fail if it left
# anything behind: a PostgreSQL schema, role or database on DATABASE_URL's
# server that was not there before, or a process it started that still
# runs (a batchctl, a test binary, a program a test ran, the chaos
# harness's PostgreSQL): any process that carries this run's
# ROWFATE_LEFTOVERS_RUN in its environment.
#
# Usage: scripts/leftovers.sh CMD [ARGS...]
# Exits with CMD's status, or 1 when CMD passed but left something.
set -uo pipefail

prog=leftovers
snapshot() {
	[ -n "${DATABASE_URL:-}" ] && command -v psql >/dev/null 2>&1 || return 0
	psql "$DATABASE_URL" -X -q -A -t -c "
		SELECT 'schema ' || nspname FROM pg_namespace
		UNION ALL SELECT 'role ' || rolname FROM pg_roles
		UNION ALL SELECT 'database ' || datname FROM pg_database" | sort
}

before=$(mktemp)
after=$(mktemp)
trap 'rm -f "$before" "$after"' EXIT
snapshot >"$before" || { echo "$prog: cannot list the server's schemas and roles" >&2; exit 1; }
run="$$-$(date +%s%N)"
export ROWFATE_LEFTOVERS_RUN="$run"

"$@"
status=$?
unset ROWFATE_LEFTOVERS_RUN # what this script runs now is not the command's

left=0
snapshot >"$after" || { echo "$prog: cannot list the server's schemas and roles" >&2; exit 1; }
new=$(comm -13 "$before" "$after")
if [ -n "$new" ]; then
	echo "$prog: the tests left these on the PostgreSQL server:" >&2
	echo "$new" | head -50 | sed 's/^/  /' >&2
	left=1
fi
# Processes of this run that still run: every process the command
# started, and whatever those started, inherits ROWFATE_LEFTOVERS_RUN.
sleep 1
stray=$(for env in /proc/[0-9]*/environ; do
	pid=${env#/proc/}
	pid=${pid%/environ}
	[ "$pid" = "$$" ] && continue
	if tr '\0' '\n' 2>/dev/null <"$env" | grep -qx "ROWFATE_LEFTOVERS_RUN=$run"; then
		echo "  $pid $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
	fi
done)
if [ -n "$stray" ]; then
	echo "$prog: the tests left these processes running:" >&2
	echo "$stray" >&2
	left=1
fi
if [ "$status" -eq 0 ] && [ "$left" -ne 0 ]; then
	exit 1
fi
exit "$status"
