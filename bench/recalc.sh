#!/usr/bin/env bash
# Time and peak RSS of a bulk recalculation, `batchctl recalc customers-tier`,
# over ROWS customers on PostgreSQL, RUNS times; prints every run and the
# median. The customers are imported once first (a generated file); each
# run recalculates all of them as a new batch. Needs /usr/bin/time (GNU).
#
#   DATABASE_URL=postgres://... bench/recalc.sh [ROWS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-100000}
runs=${2:-3}
: "${DATABASE_URL:?set DATABASE_URL to a PostgreSQL database}"
export PGOPTIONS='-c client_min_messages=warning'
tmp=$(mktemp -d)
schema="bench_recalc_$$"
trap 'rm -rf "$tmp"; psql -q "$DATABASE_URL" -c "DROP SCHEMA IF EXISTS $schema CASCADE"' EXIT

go build -o "$tmp/batchctl" ./cmd/batchctl
go run ./bench/gencustomers -n "$rows" > "$tmp/gen.csv"
sep='?'; [[ $DATABASE_URL == *\?* ]] && sep='&'
psql -q "$DATABASE_URL" -c "CREATE SCHEMA $schema"
db="${DATABASE_URL}${sep}search_path=$schema"
"$tmp/batchctl" import customers "$tmp/gen.csv" --database "$db" >/dev/null || [ $? -eq 3 ]
n=$(psql -qtA "$DATABASE_URL" -c "SELECT count(*) FROM $schema.customers")

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
secs=() kbs=()
for i in $(seq "$runs"); do
	/usr/bin/time -f '%e %M' -o "$tmp/time" "$tmp/batchctl" recalc customers-tier --database "$db" >/dev/null
	read -r s kb < <(tail -n 1 "$tmp/time")
	secs+=("$s"); kbs+=("$kb")
done
printf 'recalc customers-tier (%s customers)  runs: %s s   median %s s   peak RSS median %s MiB\n' "$n" "${secs[*]}" \
	"$(printf '%s\n' "${secs[@]}" | median)" \
	"$(printf '%s\n' "${kbs[@]}" | median | awk '{printf "%.1f", $1/1024}')"
