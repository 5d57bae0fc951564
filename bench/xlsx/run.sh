#!/usr/bin/env bash
# Reads and writes a ROWS-row customers file as XLSX (inline strings, as
# excelize's StreamWriter writes them, and shared strings, as Excel does) and
# as CSV, and exports
# ROWS rows (XLSX and CSV) into a fresh SQLite store, RUNS times each, one
# process per operation; prints rows/s and the peak RSS from
# /usr/bin/time -v. Usage: bench/xlsx/run.sh [ROWS] [RUNS] [DIR]
set -euo pipefail
rows=${1:-1000000}
runs=${2:-3}
dir=${3:-$(mktemp -d)}
go build -o "$dir/xlsxbench" ./bench/xlsx
ops=(
	"write-xlsx -rows $rows -file $dir/c.xlsx"
	"read-xlsx -file $dir/c.xlsx"
	"read-excelize -file $dir/c.xlsx"
	"write-xlsx-sst -rows $rows -file $dir/s.xlsx"
	"read-xlsx -file $dir/s.xlsx"
	"read-excelize -file $dir/s.xlsx"
	"write-csv -rows $rows -file $dir/c.csv"
	"read-csv -file $dir/c.csv"
	"export -rows $rows -file $dir/e.xlsx"
	"export -rows $rows -file $dir/e.csv"
)
for op in "${ops[@]}"; do
	for i in $(seq "$runs"); do
		out=$( { /usr/bin/time -v "$dir/xlsxbench" $op; } 2>&1 )
		rss=$(grep 'Maximum resident' <<<"$out" | awk '{print $6}')
		echo "$(grep 'rows/s' <<<"$out")  peak RSS ${rss} KiB"
	done
done
