#!/usr/bin/env bash
# What consolidation buys: an array of N small fragments written with
# `tfs ingest` (sparse 1-D, 10 cells each, overlapping), then the time to
# open it (`tfs info`) and to read all of it (`tfs export`) before and
# after each consolidation mode, the time each consolidation and vacuum
# takes, and a check that every read is the same throughout.
#   usage: tools/bench/bench_consolidate.sh [TFS] [N]
#   TFS: the tfs binary (default build-release/tools/tfs), N: fragments
#   (default 1000). Works in a temporary folder, removed at the end.
set -euo pipefail
tfs=${1:-build-release/tools/tfs}
n=${2:-1000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
arr=$work/A

ms() { date +%s%3N; }
# median of 5 runs of a command, in ms
median5() {
  local t=()
  for _ in 1 2 3 4 5; do
    local a b
    a=$(ms); "$@" >/dev/null; b=$(ms)
    t+=($((b - a)))
  done
  printf '%s\n' "${t[@]}" | sort -n | sed -n 3p
}

cat >"$work/schema.json" <<'JSON'
{"array_type": "sparse",
 "schema": {"dims": [{"name": "d", "type": "INT64", "domain": [0, 999999],
                      "tile": 1000}],
            "attrs": [{"name": "v", "type": "FLOAT64", "cell_val_num": 1,
                       "nullable": false, "filters": ["ZSTD(level=3)"]}]}}
JSON
"$tfs" create "$arr" "$work/schema.json"
a=$(ms)
for ((i = 0; i < n; i++)); do
  awk -v i="$i" 'BEGIN { print "d,v"; for (k = 0; k < 10; k++) printf "%d,%d.5\n", i * 5 + k, i }' >"$work/f.csv"
  "$tfs" ingest "$arr" "$work/f.csv"
done
b=$(ms)
echo "wrote $n fragments with tfs ingest: $((b - a)) ms ($(( (b - a) / n )) ms each)"
"$tfs" export "$arr" >"$work/expected.csv"

report() {
  printf '%-32s open %5s ms   read all %5s ms\n' "$1" \
    "$(median5 "$tfs" info "$arr")" "$(median5 "$tfs" export "$arr")"
  "$tfs" export "$arr" | cmp -s - "$work/expected.csv" || { echo "reads changed after: $1"; exit 1; }
}
step() {
  local what=$1 a b
  shift
  a=$(ms); "$@" >/dev/null; b=$(ms)
  printf '%-32s %6s ms\n' "$what" "$((b - a))"
}

report "$n fragments"
step "consolidate --mode fragment-meta" "$tfs" consolidate "$arr" --mode fragment-meta
report "+ fragment metadata"
step "consolidate --mode commits" "$tfs" consolidate "$arr" --mode commits
step "vacuum --mode commits" "$tfs" vacuum "$arr" --mode commits
report "+ commits"
step "consolidate (fragments)" "$tfs" consolidate "$arr"
report "+ fragments"
step "vacuum (fragments)" "$tfs" vacuum "$arr"
report "+ vacuum"
