#!/usr/bin/env bash
# 8 readers at once, each of a different slice and format, repeatedly, get
# the same bytes as a reader alone.
source "$(dirname "$0")/lib/common.sh"

mount_tilefs "$CORPUS" "$WORK/mnt" -o threads=2,whole_max=64
m=$WORK/mnt
files=(
  "dense_2d_rowmajor/a/slice[1:11,1:13]"
  "dense_2d_rowmajor/f/slice[2:9,3:12].npy"
  "dense_2d_rowmajor/data.csv"
  "dense_3d/slice[:].json"
  "dense_big_tile/data.csv"
  "sparse_2d_int/slice[:].csv"
  "dense_nullable/ns/slice[:].txt"
  "filters_pipelines/data.csv"
)
mkdir "$WORK/alone"
for i in "${!files[@]}"; do
  cat "$m/${files[$i]}" >"$WORK/alone/$i" || fail "cat ${files[$i]}"
done
for round in 1 2 3; do
  pids=()
  for i in "${!files[@]}"; do
    ( for _ in 1 2 3 4; do
        cat "$m/${files[$i]}" >"$WORK/out.$i.$round" || exit 1
        cmp -s "$WORK/out.$i.$round" "$WORK/alone/$i" || exit 2
      done ) &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || fail "reader of ${files[$i]} (round $round) got other bytes"
  done
done
echo "8 concurrent readers x 4 reads x 3 rounds: identical"
pass
