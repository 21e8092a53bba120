#!/usr/bin/env bash
# Slice and metadata writes through the mount (SPEC §6): numpy writes a
# .npy and raw bytes to A/<attr>/slice[SEL], dd writes raw bytes; the
# slice reads back with the new values, the other attributes keep theirs
# over SEL, cells outside SEL are unchanged; a wrong byte count or dtype
# fails at close and changes nothing. Metadata: a number stays a number of
# its type, other text becomes a string, rm deletes the key.
source "$(dirname "$0")/lib/common.sh"

SRC=$WORK/src
copy_corpus "$SRC" dense_2d_rowmajor dense_1d metadata encrypted
chmod -R u+w "$SRC"
mount_tilefs "$SRC" "$WORK/mnt"
m=$WORK/mnt

snap() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 md5sum); }

# ---- numpy: .npy and raw into a 2-D dense array ---------------------------------
"$PY" - "$m/dense_2d_rowmajor" <<'PYEOF' || fail "numpy slice writes"
import sys
import numpy as np
A = sys.argv[1]
a0 = np.load(A + "/a/slice[1:11,1:13].npy")
f0 = np.load(A + "/f/slice[1:11,1:13].npy")
s0 = open(A + "/s/slice[1:11,1:13].txt").read()

new = np.arange(12, dtype="<i4").reshape(3, 4) * -11
np.save(A + "/a/slice[2:5,3:7].npy", new)
a1 = np.load(A + "/a/slice[1:11,1:13].npy")
want = a0.copy()
want[1:4, 2:6] = new
assert (a1 == want).all(), (a1, want)
# the other attributes kept their values over the selection
assert (np.load(A + "/f/slice[1:11,1:13].npy") == f0).all()
assert open(A + "/s/slice[1:11,1:13].txt").read() == s0

raw = (np.arange(6, dtype="<f4") / 8).reshape(2, 3)
raw.tofile(A + "/f/slice[9:11,10:13]")
f1 = np.fromfile(A + "/f/slice[9:11,10:13]", dtype="<f4").reshape(2, 3)
assert (f1 == raw).all(), f1
assert (np.load(A + "/a/slice[1:11,1:13].npy") == want).all()

# a wrong byte count fails at close and changes nothing (numpy's tofile
# does not check fclose: write through a Python file, which does)
try:
    with open(A + "/a/slice[1:3,1:4]", "wb") as f:
        f.write(np.arange(5, dtype="<i4").tobytes())
except OSError as e:
    assert e.errno == 22, e
else:
    raise AssertionError("5 values for 6 cells accepted")
try:
    np.save(A + "/a/slice[1:3,1:4].npy", np.zeros((2, 3), dtype="<f8"))
except OSError as e:
    assert e.errno == 22, e
else:
    raise AssertionError("float64 .npy into an int32 attribute accepted")
assert (np.load(A + "/a/slice[1:11,1:13].npy") == want).all()
PYEOF
grep -q 'a/slice\[2:5,3:7\].npy  ok: 12 cells' "$m/dense_2d_rowmajor/ingest.log" ||
  fail "ingest.log: $(cat "$m/dense_2d_rowmajor/ingest.log")"
grep -q 'a/slice\[1:3,1:4\]  refused: .*20 bytes' "$m/dense_2d_rowmajor/ingest.log" ||
  fail "no refusal of the short slice: $(cat "$m/dense_2d_rowmajor/ingest.log")"
echo "numpy: .npy and raw slices written, others carried over, bad sizes refused"

# ---- dd: raw bytes into a 1-D array ----------------------------------------------
"$PY" -c "
import numpy as np
np.array([7, 8, 9, 10], dtype='<i4').tofile('$WORK/four.bin')"
dd if="$WORK/four.bin" of="$m/dense_1d/a/slice[11:15]" bs=16 status=none || fail "dd slice"
"$PY" - "$m/dense_1d" <<'PYEOF' || fail "dd read back"
import sys
import numpy as np
v = np.fromfile(sys.argv[1] + "/a/slice[11:15]", dtype="<i4")
assert list(v) == [7, 8, 9, 10], v
PYEOF
# A partial rewrite in place changes only the bytes written.
"$PY" -c "
import numpy as np
np.array([99], dtype='<i4').tofile('$WORK/one.bin')"
dd if="$WORK/one.bin" of="$m/dense_1d/a/slice[11:15]" bs=4 seek=1 conv=notrunc status=none ||
  fail "dd conv=notrunc"
"$PY" - "$m/dense_1d" <<'PYEOF' || fail "partial rewrite read back"
import sys
import numpy as np
v = np.fromfile(sys.argv[1] + "/a/slice[11:15]", dtype="<i4")
assert list(v) == [7, 99, 9, 10], v
with open(sys.argv[1] + "/a/slice[11:15].npy", "r+b") as f:
    f.seek(-4, 2)
    f.write(np.array([-10], dtype="<i4").tobytes())
v = np.load(sys.argv[1] + "/a/slice[11:15].npy")
assert list(v) == [7, 99, 9, -10], v
PYEOF
before=$(snap "$SRC/dense_1d")
dd if="$WORK/four.bin" of="$m/dense_1d/a/slice[11:16]" bs=16 status=none 2>/dev/null &&
  fail "dd of 16 bytes into 5 cells succeeded"
dd if="$WORK/four.bin" of="$m/dense_1d/a/slice[1:200]" bs=16 status=none 2>/dev/null &&
  fail "dd outside the domain succeeded"
[ "$(snap "$SRC/dense_1d")" = "$before" ] || fail "a refused slice changed dense_1d"
echo "dd: raw slice written; wrong sizes refused, nothing changed"

# ---- metadata -----------------------------------------------------------------------
M=$m/metadata
[ "$(cat "$M/metadata/added_later")" = 99 ] || fail "added_later: $(cat "$M/metadata/added_later")"
echo 123 >"$M/metadata/added_later" || fail "set added_later"
echo "a note" >"$M/metadata/note" || fail "set note"
echo "not a number" >"$M/metadata/added_later2" || fail "set added_later2"
"$PY" - "$M/metadata.json" <<'PYEOF' || fail "metadata.json after writes"
import json, sys
doc = json.load(open(sys.argv[1]))
def get(k):
    v = doc[k]
    return (v["type"], v["values"]) if isinstance(v, dict) else v
t, v = get("added_later")
assert t == "INT32" and v == [123], (t, v)
t, v = get("note")
assert t.startswith("STRING") and v == ["a note"], (t, v)
PYEOF
[ "$(cat "$M/metadata/note")" = "a note" ] || fail "note: $(cat "$M/metadata/note")"
snap_meta=$(cd "$SRC/metadata" && find . -type f | sort | xargs md5sum)
# (dd, because the shell does not report what close() returns)
echo "12.5" | dd of="$M/metadata/added_later" status=none 2>/dev/null &&
  fail "12.5 written into an INT32 key"
[ "$snap_meta" = "$(cd "$SRC/metadata" && find . -type f | sort | xargs md5sum)" ] ||
  fail "a refused value changed the array"
grep -q "metadata/added_later  refused: .*'12.5' is no INT32 value" "$M/ingest.log" ||
  fail "ingest.log: $(cat "$M/ingest.log")"
"$PY" -c "
import json, sys
v = json.load(open(sys.argv[1]))['added_later']
assert v['type'] == 'INT32' and v['values'] == [123], v" "$M/metadata.json" ||
  fail "a refused value changed added_later"
echo "second line" >>"$M/metadata/note" || fail "append to note"
[ "$(cat "$M/metadata/note")" = "$(printf 'a note\nsecond line')" ] || fail "note after >>: $(cat "$M/metadata/note")"
rm "$M/metadata/note" || fail "rm note"
ls "$M/metadata" | grep -qx note && fail "note still listed after rm"
grep -q '"note"' "$M/metadata.json" && fail "note still in metadata.json"
grep -q 'metadata/note  ok: deleted' "$M/ingest.log" || fail "ingest.log: $(cat "$M/ingest.log")"
echo "metadata: set (typed), string, refused when the type does not fit, delete"

# ---- a mount key: encrypted arrays are written encrypted, others not ----------
fusermount3 -u "$m"
KEY=7075626c69632d6b65792d303132333435363738396162636465666768696a21
mount_tilefs "$SRC" "$WORK/mkey" -o key=$KEY
printf 'x,y,a,s\n32,32,4242,secret row\n' >"$WORK/enc.csv"
cp "$WORK/enc.csv" "$WORK/mkey/encrypted/" || fail "cp into the encrypted array"
grep -q '^32,32,4242,secret row$' "$WORK/mkey/encrypted/data.csv" || fail "encrypted read back"
echo 31 >"$WORK/mkey/encrypted/metadata/n" || fail "encrypted metadata"
[ "$(cat "$WORK/mkey/encrypted/metadata/n")" = 31 ] || fail "encrypted metadata read back"
printf 'd,a,b\n99,9999,9.5\n' >"$WORK/plain.csv"
cp "$WORK/plain.csv" "$WORK/mkey/dense_1d/" || fail "cp into dense_1d with a key mounted"
fusermount3 -u "$WORK/mkey"
grep -rqa 'secret row' "$SRC/encrypted" && fail "the encrypted array holds plain text"
mount_tilefs "$SRC" "$WORK/nokey" -o ro
grep -q '^99,9999,9.5$' "$WORK/nokey/dense_1d/data.csv" ||
  fail "dense_1d written with the mount's key: unreadable without it"
cat "$WORK/nokey/encrypted/data.csv" >/dev/null 2>&1 && fail "the encrypted array reads without its key"
echo "key=: encrypted arrays stay encrypted, others plain"
pass
