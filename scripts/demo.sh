#!/usr/bin/env bash
# The main job: installs the Debian packages, builds tilefs, mounts the
# TileDB arrays of the corpus (read-only, the encrypted one with its key)
# and shows a short tour of what plain tools see. The mount stays up;
#   fusermount3 -u MOUNTPOINT     unmounts it (the tour prints the command).
#   TFS_CORPUS_DIR=DIR   the arrays (default ../shared/corpus/public)
#   TFS_DEMO_MNT=DIR     the mountpoint (default /tmp/tilefs-demo)
set -euo pipefail
cd "$(dirname "$0")/.."

corpus=${TFS_CORPUS_DIR:-../shared/corpus/public}
mnt=${TFS_DEMO_MNT:-/tmp/tilefs-demo}
bash scripts/install-deps.sh
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-release -j "${TFS_JOBS:-2}" --target tfs tilefs_daemon
tilefs=$PWD/build-release/fs/tilefs

if [ ! -d "$corpus" ]; then
  echo "demo: no arrays at $corpus (set TFS_CORPUS_DIR)" >&2
  exit 1
fi
corpus=$(cd "$corpus" && pwd)

# The encrypted array's key goes into a keyfile (keys never appear in ps).
keyfile=$(mktemp /tmp/tilefs-demo-keys.XXXXXX)
key=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["key_hex"])' "$corpus/encrypted.json")
echo "encrypted $key" >"$keyfile"

if mountpoint -q "$mnt"; then
  fusermount3 -u "$mnt"
fi
mkdir -p "$mnt"
"$tilefs" -o ro,keyfile="$keyfile" "$corpus" "$mnt"
rm -f "$keyfile"

run() {
  echo
  echo "\$ $*"
  (cd "$mnt" && eval "$@") 2>&1 | head -n 14 || true
}

echo "tilefs: $corpus is mounted read-only on $mnt"
run "ls | head -n 12"
run "ls -l dense_2d_rowmajor"
run "head -n 4 dense_2d_rowmajor/data.csv"
run "ls dense_2d_rowmajor/a dense_2d_rowmajor/a/tiles | head -n 12"
run "cat 'dense_2d_rowmajor/a/slice[2:4,3:7].txt'"
run "cat 'dense_2d_rowmajor/f/slice[2:4,3:7].json'"
run "cat 'sparse_string_dim/slice[\"b\":\"d\"].csv'"
run "dd if='dense_2d_rowmajor/a/slice[1:11,1:13]' bs=4 skip=13 count=2 status=none | od -An -td4"
run "/usr/bin/python3 -c 'import numpy as np; print(np.load(\"dense_2d_rowmajor/a/slice[1:4,1:6].npy\"))'"
run "ls dense_fragments_overlap/versions"
run "cat 'dense_fragments_overlap/versions/2023-11-14T22:13:21.000Z/a/slice[4:8,2:8].json'"
run "cat 'dense_fragments_overlap/a/slice[4:8,2:8].json'"
run "ls metadata/metadata; cat metadata/metadata/ascii"
run "head -n 4 encrypted/data.csv"
run "cat 'dense_2d_rowmajor/a/slice[0:5]'"
run "cat 'dense_2d_rowmajor/a/slice[5:1]'"
echo
echo "Try any tool on $mnt (see README.md for the view and the slice grammar)."
echo "Unmount with:  fusermount3 -u $mnt"
