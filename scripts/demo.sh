#!/usr/bin/env bash
# The main job, until the daemon exists: installs the Debian packages,
# builds tilefs, and prints a few arrays of the TileDB corpus with
# `tfs dump` (schema, fragments, metadata and cells as JSON).
#   TFS_CORPUS_DIR=DIR   the corpus (default ../shared/corpus/public)
set -euo pipefail
cd "$(dirname "$0")/.."

corpus=${TFS_CORPUS_DIR:-../shared/corpus/public}
bash scripts/install-deps.sh
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-release -j "${TFS_JOBS:-2}" --target tfs
tfs=build-release/tools/tfs

if [ ! -d "$corpus" ]; then
  echo "demo: no corpus at $corpus (set TFS_CORPUS_DIR)" >&2
  exit 1
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
show() {
  echo
  echo "\$ tfs dump $*"
  "$tfs" dump "$@" >"$out"
  head -c 2500 "$out"
  [ "$(wc -c <"$out")" -le 2500 ] || echo "... ($(wc -c <"$out") bytes in all)"
}

# A 2-D dense array with a var-size string attribute: two cells of a slice.
show "$corpus/dense_2d_rowmajor" --no-full --subarray 2:3,3:4
# A sparse array keyed by strings, read between "b" and "d".
show "$corpus/sparse_string_dim" --no-full --subarray b:d
# Array metadata of many types, as of a point in time.
show "$corpus/metadata" --timestamp 1700000002000 --no-full
# An encrypted array, with its AES-256 key.
key=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["key_hex"])' "$corpus/encrypted.json")
show "$corpus/encrypted" --key "$key" --no-full --subarray 1:2,1:31

echo
echo "demo: every array of the corpus through tfs dump:"
/usr/bin/python3 "$corpus/../../tools/corpus_check.py" --dump "$tfs dump" --corpus "$corpus" | tail -1 || true
