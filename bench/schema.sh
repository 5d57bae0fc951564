#!/usr/bin/env bash
# A schema kind beside the Go kind it mirrors: `batchctl import customers`
# and `batchctl import --schema bench/customers.schema.json` on the same
# generated file, on PostgreSQL, RUNS rounds, the two alternating within
# each round so that the machine's noise hits both alike. Prints every run,
# the medians and their ratio. Needs /usr/bin/time (GNU time).
#
#   DATABASE_URL=postgres://... bench/schema.sh [ROWS] [RUNS]
#
# Each run uses a fresh PostgreSQL schema (search_path in the URL): the
# engine's tables and the target table start empty every time.
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-1000000}
runs=${2:-3}
: "${DATABASE_URL:?set DATABASE_URL to a PostgreSQL database}"
export PGOPTIONS='-c client_min_messages=warning'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/batchctl" ./cmd/batchctl
go run ./bench/gencustomers -n "$rows" > "$tmp/gen.csv"
sep='?'; [[ $DATABASE_URL == *\?* ]] && sep='&'
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

go_secs=(); schema_secs=()
run() { # label args...
	local label=$1; shift
	local schema="bench_schema_$$_${label}_$RANDOM"
	psql -q "$DATABASE_URL" -c "DROP SCHEMA IF EXISTS $schema CASCADE; CREATE SCHEMA $schema"
	local db="${DATABASE_URL}${sep}search_path=$schema"
	/usr/bin/time -f '%e %M' -o "$tmp/time" "$tmp/batchctl" import "$@" --database "$db" >/dev/null 2>"$tmp/err" || [ $? -eq 3 ]
	psql -q "$DATABASE_URL" -c "DROP SCHEMA $schema CASCADE"
	read -r s kb < <(tail -n 1 "$tmp/time")
	echo "$s $kb"
}
for i in $(seq "$runs"); do
	read -r s kb < <(run go customers "$tmp/gen.csv")
	go_secs+=("$s"); echo "round $i  go kind      ${s} s  peak RSS $((kb / 1024)) MiB"
	read -r s kb < <(run schema --schema bench/customers.schema.json --create-table "$tmp/gen.csv")
	schema_secs+=("$s"); echo "round $i  schema kind  ${s} s  peak RSS $((kb / 1024)) MiB"
done
g=$(printf '%s\n' "${go_secs[@]}" | median)
s=$(printf '%s\n' "${schema_secs[@]}" | median)
awk -v g="$g" -v s="$s" -v n="$rows" 'BEGIN {
	printf "median: go kind %.2f s (%.0f rows/s), schema kind %.2f s (%.0f rows/s); schema/go time %.3f\n", g, n/g, s, n/s, s/g }'
