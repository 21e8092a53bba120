#!/usr/bin/env bash
# Open files and version views across `tfs consolidate` + `tfs vacuum` on
# the source: files that read in pieces (whole_max=0 streams every text
# file; cache=0 keeps no decoded tile, so every read goes to the fragment
# files), opened before and read after, give the bytes of the view they
# were opened on; a version view at the end of the consolidated range
# reads as before; one inside the range fails with EIO and one log line
# saying why, never with other bytes. References come from a mount of an
# untouched copy.
source "$(dirname "$0")/lib/common.sh"
: "${TFS:?TFS must name the tfs tool}"

ARRAYS=(dense_fragments_overlap sparse_timetravel)
copy_corpus "$WORK/src" "${ARRAYS[@]}"
copy_corpus "$WORK/ref" "${ARRAYS[@]}"
chmod -R u+w "$WORK/src"
mount_tilefs "$WORK/ref" "$WORK/rmnt" -o ro,whole_max=0
mount_tilefs "$WORK/src" "$WORK/mnt" -o ro,cache=0,whole_max=0
m=$WORK/mnt
r=$WORK/rmnt
FILES=(dense_fragments_overlap/data.csv "dense_fragments_overlap/a/slice[:].csv"
       "dense_fragments_overlap/s/slice[:].json" "dense_fragments_overlap/a/slice[:]"
       sparse_timetravel/data.csv "sparse_timetravel/slice[:].npy")
# Streamed (whole_max=0): not listed, and its size by name is exact.
! ls "$m/dense_fragments_overlap" | grep -qx data.csv || fail "data.csv listed though it streams"
[ "$(stat -c %s "$m/dense_fragments_overlap/data.csv")" = "$(cat "$r/dense_fragments_overlap/data.csv" | wc -c)" ] ||
  fail "data.csv: stat by name is not its size"

# Version views opened (and their arrays) before the maintenance.
v=dense_fragments_overlap/versions
latest=$(ls "$m/$v" | tail -1)
inside=$(ls "$m/$v" | sed -n 2p)
[ -n "$latest" ] && [ "$latest" != "$inside" ] || fail "versions: '$latest' '$inside'"
cat "$m/$v/$latest/schema.json" "$m/$v/$inside/schema.json" >/dev/null

# A reader opens every file, reads a little of some, and the rest after
# the vacuum.
"$PY" - "$m" "$WORK" "${FILES[@]}" <<'PYEOF' &
import os, sys, time
mnt, work, names = sys.argv[1], sys.argv[2], sys.argv[3:]
files = [open(os.path.join(mnt, n), "rb") for n in names]
heads = [f.read(7) if i % 2 else b"" for i, f in enumerate(files)]
open(work + "/opened", "w").close()
deadline = time.time() + 60
while not os.path.exists(work + "/go") and time.time() < deadline:
    time.sleep(0.02)
for i, f in enumerate(files):
    try:
        data = heads[i] + f.read()
    except OSError as e:
        data = b"read failed: %s" % str(e).encode()
    open("%s/held.%d" % (work, i), "wb").write(data)
PYEOF
reader=$!
for _ in $(seq 1 500); do [ -e "$WORK/opened" ] && break; sleep 0.02; done
[ -e "$WORK/opened" ] || fail "the reader did not open the files"

for a in "${ARRAYS[@]}"; do
  "$TFS" consolidate "$WORK/src/$a" >/dev/null || fail "consolidate $a"
  n=$("$TFS" vacuum "$WORK/src/$a") || fail "vacuum $a"
  [ "$n" -gt 0 ] || fail "vacuum $a removed nothing"
done
touch "$WORK/go"
wait "$reader" || fail "the reader failed"

for i in "${!FILES[@]}"; do
  cmp -s "$WORK/held.$i" <(cat "$r/${FILES[$i]}") ||
    fail "${FILES[$i]}, open across the vacuum: other bytes ($(head -c 200 "$WORK/held.$i"))"
done
grep -q 'vacuumed while it was read' "$LOG" || fail "no stream read on after the vacuum"

# Version views: the end of the range reads the same (new files and ones
# read before); inside it the fragments are gone.
for f in data.csv "a/slice[:].csv" "s/slice[:]"; do
  cmp -s <(cat "$m/$v/$latest/$f") <(cat "$r/$v/$latest/$f") ||
    fail "$v/$latest/$f: other bytes after the vacuum"
done
if cat "$m/$v/$inside/a/slice[:].csv" >"$WORK/inside" 2>"$WORK/inside.err"; then
  fail "$v/$inside/a/slice[:].csv: read inside the vacuumed range"
fi
grep -q 'Input/output error' "$WORK/inside.err" || fail "not EIO: $(cat "$WORK/inside.err")"
[ "$(grep -c "$inside.*cannot be read again" "$LOG")" -ge 1 ] ||
  fail "no log line says why"
! grep -q 'Sanitizer' "$LOG" || fail "sanitizer report"
echo "${#FILES[@]} files open across a vacuum, exact; $v/$latest exact; $v/$inside: EIO"
pass
