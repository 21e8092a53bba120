#!/usr/bin/env bash
# Plain Unix tools get exactly the bytes of SPEC §4-5: dd with skip=,
# head -c, tail -c, wc -c, cp -r of an array folder, tar of exact-size
# files, find and ls -lR over the whole mount (which end quickly because
# versions/<t>/ has no versions/ of its own).
source "$(dirname "$0")/lib/common.sh"

key=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["key_hex"])' "$CORPUS/encrypted.json")
mount_tilefs "$CORPUS" "$WORK/mnt" -o key="$key"
m=$WORK/mnt
arr=$m/dense_2d_rowmajor
raw="$arr/f/slice[1:11,1:13]"

# wc -c and stat agree with the bytes cat gets, for every file of an array.
while IFS= read -r -d '' f; do
  n=$(cat "$f" | wc -c)
  [ "$(wc -c <"$f")" = "$n" ] || fail "wc -c $f differs from cat"
  s=$(stat -c %s "$f")
  [ "$s" = "$n" ] || [ "$s" = 0 ] || fail "stat size $s of $f, cat reads $n"
done < <(find "$arr" -maxdepth 2 -type f -print0)

# dd with skip= and count= equals the same window of the whole file.
cat "$raw" >"$WORK/whole"
for bs in 1 7 64 4096; do
  for skip in 0 3 17; do
    dd if="$raw" of="$WORK/part" bs=$bs skip=$skip count=5 status=none
    dd if="$WORK/whole" of="$WORK/want" bs=$bs skip=$skip count=5 status=none
    cmp -s "$WORK/part" "$WORK/want" || fail "dd bs=$bs skip=$skip"
  done
done

# head -c and tail -c, on exact-size and streamed files.
for f in "$raw" "$arr/data.csv" "$arr/s/slice[1:11,1:13].txt" "$m/sparse_2d_int/data.csv"; do
  cat "$f" >"$WORK/whole"
  for n in 1 10 100 1000; do
    cmp -s <(head -c $n "$f") <(head -c $n "$WORK/whole") || fail "head -c $n $f"
    cmp -s <(tail -c $n "$f") <(tail -c $n "$WORK/whole") || fail "tail -c $n $f"
  done
done

# cp -r of an array folder copies every file with the bytes cat reads.
cp -r "$arr" "$WORK/copy"
cmp -s "$WORK/copy/data.csv" "$arr/data.csv" || fail "cp -r: data.csv"
cmp -s "$WORK/copy/a/slice[1:11,1:13].npy" "$arr/a/slice[1:11,1:13].npy" || fail "cp -r: .npy"
[ -f "$WORK/copy/schema.json" ] || fail "cp -r: no schema.json"

# tar of the exact-size files of a field folder round-trips.
(cd "$arr/a" && tar cf "$WORK/a.tar" ./slice*) || fail "tar cf"
mkdir "$WORK/untar"
tar xf "$WORK/a.tar" -C "$WORK/untar"
for f in "$arr"/a/slice*; do
  cmp -s "$f" "$WORK/untar/$(basename "$f")" || fail "tar: $(basename "$f")"
done

# find and ls -lR over everything end, and never nest versions.
start=$(date +%s)
# The two legacy arrays TileDB itself cannot read are EIO (and say why in
# the log); nothing else may fail.
find "$m" >"$WORK/find.out" 2>"$WORK/find.err" || true
ls -lR "$m" >/dev/null 2>>"$WORK/find.err" || true
if grep -v -e dense_array_v1_3_0 -e experimental_array_vUINT32_MAX "$WORK/find.err"; then
  fail "find / ls -lR errors above"
fi
took=$(( $(date +%s) - start ))
echo "find + ls -lR over the corpus mount: ${took}s, $(wc -l <"$WORK/find.out") paths"
[ "$took" -lt 300 ] || fail "find/ls -lR took ${took}s"
if grep -q 'versions/[^/]*/versions' "$WORK/find.out"; then
  fail "versions/<t>/ lists versions/"
fi
# History and tiles are one name away, not in the walk.
if grep -q -e '/versions$' -e '/tiles$' "$WORK/find.out"; then
  fail "find walks versions/ or tiles/"
fi
ls "$m/dense_2d_rowmajor/a/tiles" | grep -qx 'slice\[1:5,1:6\]' || fail "tiles/ by name: no tile"
pass
