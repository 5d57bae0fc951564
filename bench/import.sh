#!/usr/bin/env bash
# Import time and peak RSS of `batchctl import customers` on SQLite and on
# PostgreSQL, for the fixture and a generated file, RUNS times each; prints
# every run and the median. Needs /usr/bin/time (GNU time).
#
#   DATABASE_URL=postgres://... bench/import.sh [ROWS] [RUNS]
#   BATCHCTL=/path/to/batchctl ...   measures that binary instead of building
#
# Each PostgreSQL run uses a fresh schema (search_path in the URL) so runs
# don't see each other's customers; each SQLite run a fresh file.
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-100000}
runs=${2:-3}
: "${DATABASE_URL:?set DATABASE_URL to a PostgreSQL database}"
export PGOPTIONS='-c client_min_messages=warning'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ -n "${BATCHCTL:-}" ]; then
	cp "$BATCHCTL" "$tmp/batchctl" # a prebuilt binary, e.g. to compare two versions
else
	go build -o "$tmp/batchctl" ./cmd/batchctl
fi
go run ./bench/gencustomers -n "$rows" > "$tmp/gen.csv"
sep='?'; [[ $DATABASE_URL == *\?* ]] && sep='&'

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

measure() { # name file store
	local name=$1 file=$2 store=$3 secs=() kbs=()
	for i in $(seq "$runs"); do
		local db
		if [ "$store" = sqlite ]; then
			db="$tmp/run$i.db"; rm -f "$db"*
		else
			local schema="bench_$$_$i"
			psql -q "$DATABASE_URL" -c "DROP SCHEMA IF EXISTS $schema CASCADE; CREATE SCHEMA $schema"
			db="${DATABASE_URL}${sep}search_path=$schema"
		fi
		/usr/bin/time -f '%e %M' -o "$tmp/time" "$tmp/batchctl" import customers "$file" --database "$db" >/dev/null || [ $? -eq 3 ]
		read -r s kb < <(tail -n 1 "$tmp/time") # GNU time first notes a non-zero exit
		secs+=("$s"); kbs+=("$kb")
		[ "$store" = sqlite ] || psql -q "$DATABASE_URL" -c "DROP SCHEMA $schema CASCADE"
	done
	printf '%-28s runs: %s s   median %s s   peak RSS median %s MiB\n' "$name/$store" "${secs[*]}" \
		"$(printf '%s\n' "${secs[@]}" | median)" \
		"$(printf '%s\n' "${kbs[@]}" | median | awk '{printf "%.1f", $1/1024}')"
}

for store in sqlite postgres; do
	measure "fixture (300 rows)" fixtures/customers.csv "$store"
	measure "generated ($rows rows)" "$tmp/gen.csv" "$store"
done
