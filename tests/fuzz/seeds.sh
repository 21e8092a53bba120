#!/usr/bin/env bash
# Writes the seed inputs of every fuzz target into OUTDIR/<target>/:
#   tests/fuzz/seeds.sh OUTDIR [SEEDGEN [CORPUS]]
# SEEDGEN is the fuzz_seedgen program (default build-fuzz's), CORPUS the
# public TileDB corpus (default $TFS_CORPUS_DIR, else
# ../shared/corpus/public beside the tree).
# fuzz_seedgen extracts the corpus files and makes the synthetic filter
# and condition seeds; the selection seeds are selection_seeds.txt, one
# file per line and array choice. OUTDIR is emptied first.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: seeds.sh OUTDIR [SEEDGEN [CORPUS]]}
seedgen=${2:-$here/../../build-fuzz/tests/fuzz/fuzz_seedgen}
corpus=${3:-${TFS_CORPUS_DIR:-$here/../../../shared/corpus/public}}

rm -rf "$out"
mkdir -p "$out/fuzz_selection" "$out/fuzz_where" "$out/fuzz_csv" \
  "$out/fuzz_schema_json"
"$seedgen" "$corpus" "$out"

# Selection: the first byte picks the array (bit 7: no non-empty
# domain); fuzz_selection.c has 12 arrays.
n=0
while IFS= read -r line; do
  for choice in 0 1 2 3 4 5 6 7 8 9 10 11 128 129; do
    { printf "\\$(printf '%03o' "$choice")"; printf '%s' "$line"; } \
      > "$out/fuzz_selection/line$n-array$choice"
  done
  n=$((n + 1))
done < "$here/selection_seeds.txt"
# Filters: the first byte picks the array; fuzz_where.c has 8.
n=0
while IFS= read -r line; do
  for choice in 0 1 2 3 4 5 6 7; do
    { printf "\\$(printf '%03o' "$choice")"; printf '%s' "$line"; } \
      > "$out/fuzz_where/line$n-array$choice"
  done
  n=$((n + 1))
done < "$here/where_seeds.txt"
# Schema JSON: the corpus's documents, each with a "schema" object.
for f in "$corpus"/*.json; do
  cp "$f" "$out/fuzz_schema_json/"
done

echo "seeds.sh: $(find "$out" -type f | wc -l) seeds in $out"
