#!/usr/bin/env bash
# `tfs export` serves the bytes the mount serves: for arrays of every kind
# (dense, sparse, strings, nulls, multi-value cells, datetimes, encryption,
# time travel) and every format, the tool's output and the mounted file are
# compared byte for byte. Then arrays that the consolidation of `tfs` has
# rewritten read the same through the mount as before.
source "$(dirname "$0")/lib/common.sh"

TFS=${TFS:-$(dirname "$TILEFS")/../tools/tfs}
[ -x "$TFS" ] || fail "no tfs binary at $TFS"
key=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["key_hex"])' "$CORPUS/encrypted.json")
echo "encrypted $key" >"$WORK/keys"
chmod 600 "$WORK/keys"
mount_tilefs "$CORPUS" "$WORK/mnt" -o ro,keyfile="$WORK/keys"
m=$WORK/mnt

# same ARRAY FIELD SEL EXT [tfs options...]: tfs export vs the mounted file.
n=0
same() {
  local arr=$1 field=$2 sel=$3 ext=$4 fmt
  shift 4
  fmt=${ext#.}
  [ -n "$fmt" ] || fmt=raw
  local path="$m/$arr/${field:+$field/}slice[$sel]$ext"
  cat "$path" >"$WORK/mounted" || fail "reading $path"
  "$TFS" export "$CORPUS/$arr" "$sel" ${field:+--field "$field"} --format "$fmt" "$@" \
    >"$WORK/exported" || fail "tfs export $arr $sel $field $fmt"
  cmp -s "$WORK/mounted" "$WORK/exported" || fail "$arr ${field:-*} [$sel] $fmt: tfs export and the mount differ"
  n=$((n + 1))
}

for ext in "" .txt .csv .json .npy; do
  same dense_2d_rowmajor a '2:5,3:9' "$ext"
  same dense_2d_rowmajor s '1:11,1:13' "$ext"
  same dense_nullable ns ':' "$ext"
  same dense_cellvalnum "$(ls "$m/dense_cellvalnum" | grep -v -e '\.' -e fragments -e metadata -e versions -e '^d$' | head -n 1)" ':' "$ext"
  same sparse_2d_int s ':,:' "$ext"
  same dense_datetime_dim "$(ls "$m/dense_datetime_dim" | grep -v -e '\.' -e fragments -e metadata -e versions | tail -n 1)" ':' "$ext"
done
# Pictures: the same PNG bytes (colormap, range, transparency).
for ext in .png .gray.png; do
  same dense_2d_rowmajor a '2:9,3:12' "$ext"
  same dense_2d_rowmajor a '1:11:2,1:13:3' "$ext"
  same dense_fragments_overlap a ':' "$ext"
  same sparse_2d_int a '0:30,10:60' "$ext"
done
for ext in .csv .json .npy; do
  same dense_2d_rowmajor '' '2:5,3:9' "$ext"
  same sparse_string_dim '' '"b":"d"' "$ext"
  same sparse_dups '' ':' "$ext"
  same encrypted '' ':' "$ext" --key "$key"
done
same dense_2d_rowmajor s '1:11,1:13' .offsets
same dense_nullable ns ':' .validity
same dense_1d a '1:100:7' .txt

# Time travel: a version folder and --timestamp agree.
v=$(ls "$m/dense_fragments_overlap/versions" | head -n 1)
cat "$m/dense_fragments_overlap/versions/$v/a/slice[1:13,1:13].csv" >"$WORK/mounted"
"$TFS" export "$CORPUS/dense_fragments_overlap" '1:13,1:13' --field a --timestamp "$v" >"$WORK/exported"
cmp -s "$WORK/mounted" "$WORK/exported" || fail "versions/$v and --timestamp $v differ"
n=$((n + 1))

# Consolidated and vacuumed copies read the same through a mount.
mkdir -p "$WORK/src"
for arr in dense_fragments_overlap sparse_timetravel many_fragments metadata; do
  cp -r "$CORPUS/$arr" "$WORK/src/"
done
chmod -R u+w "$WORK/src"
for arr in dense_fragments_overlap sparse_timetravel many_fragments; do
  cat "$m/$arr/data.csv" >"$WORK/$arr.before"
done
cat "$m/metadata/metadata.json" >"$WORK/metadata.before"
for arr in dense_fragments_overlap sparse_timetravel many_fragments metadata; do
  for mode in fragments fragment-meta commits array-meta; do
    "$TFS" consolidate "$WORK/src/$arr" --mode "$mode" >/dev/null || fail "consolidate $arr $mode"
    "$TFS" vacuum "$WORK/src/$arr" --mode "$mode" >/dev/null || fail "vacuum $arr $mode"
  done
done
mount_tilefs "$WORK/src" "$WORK/mnt2" -o ro
for arr in dense_fragments_overlap sparse_timetravel many_fragments; do
  cmp -s "$WORK/mnt2/$arr/data.csv" "$WORK/$arr.before" || fail "$arr reads differently after consolidation"
  [ "$(ls "$WORK/mnt2/$arr/fragments" | wc -l)" -eq 1 ] || fail "$arr: more than one fragment left"
done
cmp -s "$WORK/mnt2/metadata/metadata.json" "$WORK/metadata.before" || fail "metadata differs after consolidation"
echo "$n exports equal to the mount"
pass
