#!/usr/bin/env bash
# Writing CSV files through the mount (SPEC §6): cp into an array is read
# back through the mount; rsync and an editor's save (temporary name,
# chmod, utimens, rename into place) commit on the rename; bad CSV files
# make cp fail with the reason in ingest.log and the log, and leave the
# array's files byte-identical; touch commits nothing; a CSV file in a
# plain folder makes an array; schema.json in a new folder makes one; a
# read-only mount refuses every write with EROFS.
source "$(dirname "$0")/lib/common.sh"

SRC=$WORK/src
copy_corpus "$SRC" dense_1d sparse_2d_int
chmod -R u+w "$SRC"
mkdir -p "$SRC/plain" "$WORK/staging"
mount_tilefs "$SRC" "$WORK/mnt" -o staging="$WORK/staging"
m=$WORK/mnt

# The files of an array folder with their checksums.
snap() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 md5sum); }

# ---- cp into a dense array, read back ----------------------------------------
cp "$m/dense_1d/data.csv" "$WORK/before.csv"
"$PY" - "$WORK/in1.csv" <<'PYEOF'
import sys
with open(sys.argv[1], "w") as f:
    f.write("a,d,b\n")  # any column order
    for d in range(5, 25):
        f.write(f"{d * 7 - 3},{d},{d / 4}\n")
PYEOF
cp "$WORK/in1.csv" "$m/dense_1d/" || fail "cp into dense_1d"
ls "$m/dense_1d" | grep -qx 'in1.csv' && fail "in1.csv still listed after close"
"$PY" - "$m/dense_1d/data.csv" "$WORK/before.csv" <<'PYEOF' || fail "dense_1d read back"
import sys
import pandas as pd
now = pd.read_csv(sys.argv[1]).set_index("d")
old = pd.read_csv(sys.argv[2]).set_index("d")
assert list(now.index) == list(range(1, 101)), now.index
for d in range(1, 101):
    if 5 <= d < 25:
        assert now.loc[d, "a"] == d * 7 - 3 and now.loc[d, "b"] == d / 4, d
    else:
        assert now.loc[d, "a"] == old.loc[d, "a"], d
PYEOF
grep -q 'in1.csv  ok: 20 rows' "$m/dense_1d/ingest.log" || fail "ingest.log: $(cat "$m/dense_1d/ingest.log")"
grep -q "write '/dense_1d/in1.csv'" "$LOG" || fail "no log line for in1.csv"
nfrag=$(ls "$m/dense_1d/fragments" | wc -l)
[ "$nfrag" -eq 2 ] || fail "dense_1d: $nfrag fragments, want 2"
echo "cp into a dense array: read back through the mount"

# ---- sparse array ---------------------------------------------------------------
printf 'x,y,a,s\n50,1,-5,"new, quoted"\n99,0,7,plain\n' >"$WORK/sp.csv"
cp "$WORK/sp.csv" "$m/sparse_2d_int/sp.csv" || fail "cp into sparse_2d_int"
"$PY" - "$m/sparse_2d_int/data.csv" <<'PYEOF' || fail "sparse read back"
import sys
import pandas as pd
df = pd.read_csv(sys.argv[1], keep_default_na=False)
row = df[(df.x == 50) & (df.y == 1)]
assert len(row) == 1 and row.a.iloc[0] == -5 and row.s.iloc[0] == "new, quoted", row
row = df[(df.x == 99) & (df.y == 0)]
assert len(row) == 1 and row.a.iloc[0] == 7 and row.s.iloc[0] == "plain", row
PYEOF
echo "cp into a sparse array: read back"

# ---- bad CSV files: refused at close, nothing changes ---------------------------
printf 'd,a,b\n1,2,3.0\n2,zz,1.0\n' >"$WORK/bad_value.csv"
printf 'd,a,b\n1,2,3.0\n2,3\n' >"$WORK/bad_ragged.csv"
printf 'd,a,b\n1,2,3.0\n101,3,1.0\n' >"$WORK/bad_domain.csv"
printf 'd,a,b,extra\n1,2,3.0,4\n' >"$WORK/bad_extra.csv"
printf 'd,a,a,b\n1,2,3,3.0\n' >"$WORK/bad_dup_column.csv"
printf 'd,b\n1,3.0\n' >"$WORK/bad_missing.csv"
printf 'x,y,a,s\n1,1,1,a\n1,1,2,b\n' >"$WORK/bad_dup_coords.csv"
before=$(snap "$SRC/dense_1d")
before_sp=$(snap "$SRC/sparse_2d_int")
for f in bad_value bad_ragged bad_domain bad_extra bad_dup_column bad_missing; do
  if cp "$WORK/$f.csv" "$m/dense_1d/" 2>"$WORK/cp.err"; then
    fail "cp $f.csv succeeded"
  fi
  grep -q -e 'Invalid argument' -e 'Input/output error' "$WORK/cp.err" ||
    fail "cp $f.csv: $(cat "$WORK/cp.err")"
  grep -q "$f.csv  refused: " "$m/dense_1d/ingest.log" || fail "ingest.log has no refusal of $f.csv"
  grep -q "write '/dense_1d/$f.csv': refused: " "$LOG" || fail "log has no refusal of $f.csv"
  ls "$m/dense_1d" | grep -qx "$f.csv" && fail "$f.csv listed after its refusal"
done
grep "bad_value.csv  refused" "$m/dense_1d/ingest.log" | grep -q 'line 3' ||
  fail "the refusal does not name the line: $(grep bad_value "$m/dense_1d/ingest.log")"
cp "$WORK/bad_dup_coords.csv" "$m/sparse_2d_int/" 2>/dev/null && fail "duplicate coordinates accepted"
[ "$(snap "$SRC/dense_1d")" = "$before" ] || fail "a refused CSV changed dense_1d's files"
[ "$(snap "$SRC/sparse_2d_int")" = "$before_sp" ] || fail "a refused CSV changed sparse_2d_int's files"
echo "bad CSV files: cp fails, reason logged, array files identical"

# ---- touch: nothing committed, no error ---------------------------------------------
touch "$m/dense_1d/empty.csv" || fail "touch empty.csv"
[ "$(snap "$SRC/dense_1d")" = "$before" ] || fail "touch changed dense_1d"
# The empty file stays (for a while) as an empty file: tools that create,
# close and reopen to write (numpy.savetxt) work.
[ -f "$m/dense_1d/empty.csv" ] && [ ! -s "$m/dense_1d/empty.csv" ] || fail "empty.csv after touch"
"$PY" - "$m/dense_1d/empty.csv" <<'PYEOF' || fail "numpy.savetxt"
import sys
import numpy as np
np.savetxt(sys.argv[1], np.array([[50, 5000, 0.125]]), delimiter=",",
           header="d,a,b", comments="", fmt=["%d", "%d", "%g"])
PYEOF
ls "$m/dense_1d" | grep -qx 'empty.csv' && fail "empty.csv listed after it was written"
grep -q '^50,5000,0.125$' "$m/dense_1d/data.csv" || fail "numpy.savetxt's file not committed"
touch "$m/dense_1d/gone.csv" && rm "$m/dense_1d/gone.csv" || fail "rm of an empty file"
ls "$m/dense_1d" | grep -qx 'gone.csv' && fail "gone.csv listed after rm"
before=$(snap "$SRC/dense_1d")
echo "touch x.csv: nothing written; numpy.savetxt (create, close, reopen) works"

# ---- a file being written is visible; rename into place commits ---------------
"$PY" - "$m/dense_1d" "$SRC/dense_1d" <<'PYEOF' || fail "staged file / editor save"
import os, sys, time
a, src = sys.argv[1:]
tmp = os.path.join(a, ".edit.csv.swp")
with open(tmp, "w") as f:
    f.write("d,a,b\n30,3000,0.5\n")
    f.flush()
    assert ".edit.csv.swp" in os.listdir(a), os.listdir(a)
    assert os.stat(tmp).st_size == len("d,a,b\n30,3000,0.5\n")
# closed: a temporary name is kept until renamed
assert ".edit.csv.swp" in os.listdir(a)
os.chmod(tmp, 0o600)
os.chown(tmp, 0, 0)
os.utime(tmp, (1700000000, 1700000000))
# truncate applies to the staged bytes: cut the row, then write it again
os.truncate(tmp, 6)
assert os.stat(tmp).st_size == 6
with open(tmp, "a") as f:
    f.write("30,3000,0.5\n")
os.utime(tmp, (1700000000, 1700000000))
st = os.stat(tmp)
assert st.st_mode & 0o777 == 0o600 and int(st.st_mtime) == 1700000000, st
n = len(os.listdir(os.path.join(src, "__fragments")))
os.rename(tmp, os.path.join(a, "edit.csv"))
assert len(os.listdir(os.path.join(src, "__fragments"))) == n + 1
names = os.listdir(a)
assert "edit.csv" not in names and ".edit.csv.swp" not in names, names
# a temporary renamed to another temporary keeps its bytes and metadata
t1, t2 = os.path.join(a, ".t1.tmp"), os.path.join(a, ".t2.tmp")
with open(t1, "w") as f:
    f.write("d,a,b\n33,3300,0.25\n")
os.chmod(t1, 0o640)
os.rename(t1, t2)
assert ".t1.tmp" not in os.listdir(a) and ".t2.tmp" in os.listdir(a)
st = os.stat(t2)
assert st.st_mode & 0o777 == 0o640 and st.st_size == 19, st
os.rename(t2, os.path.join(a, "t.csv"))
assert len(os.listdir(os.path.join(src, "__fragments"))) == n + 2
# removing a staged temporary commits nothing
with open(os.path.join(a, ".gone.tmp"), "w") as f:
    f.write("d,a,b\n31,1,1\n")
os.unlink(os.path.join(a, ".gone.tmp"))
assert len(os.listdir(os.path.join(src, "__fragments"))) == n + 2
PYEOF
grep -q '^30,3000,0.5$' "$m/dense_1d/data.csv" || fail "edit.csv not committed"
grep -q '^33,3300,0.25$' "$m/dense_1d/data.csv" || fail "t.csv not committed"
echo "editor save (temporary, chmod, utime, rename): committed on the rename"

# ---- fsync commits, and reports a refusal ----------------------------------------
"$PY" - "$m/dense_1d" "$SRC/dense_1d" <<'PYEOF' || fail "fsync"
import errno, os, sys
a, src = sys.argv[1:]
frags = lambda: len(os.listdir(os.path.join(src, "__fragments")))
n = frags()
fd = os.open(os.path.join(a, "synced.csv"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
os.write(fd, b"d,a,b\n60,6000,6.5\n")
os.fsync(fd)
assert frags() == n + 1, "fsync did not commit"
os.close(fd)
assert frags() == n + 1, "close committed again"
fd = os.open(os.path.join(a, "badsync.csv"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
os.write(fd, b"d,a,b\n60,x,6.5\n")
try:
    os.fsync(fd)
except OSError as e:
    assert e.errno == errno.EINVAL, e
else:
    raise AssertionError("fsync of a bad CSV succeeded")
try:
    os.close(fd)
except OSError as e:
    assert e.errno == errno.EINVAL, e
else:
    raise AssertionError("close after a refused fsync succeeded")
assert frags() == n + 1
PYEOF
grep -q '^60,6000,6.5$' "$m/dense_1d/data.csv" || fail "synced.csv not visible"
echo "fsync: commits, refusals reported by fsync and close"

# ---- rsync ----------------------------------------------------------------------------
printf 'd,a,b\n40,4000,4.5\n41,4100,4.25\n' >"$WORK/rs.csv"
if command -v rsync >/dev/null; then
  rsync -a "$WORK/rs.csv" "$m/dense_1d/" || fail "rsync into dense_1d"
  cp "$WORK/bad_value.csv" "$WORK/rsbad.csv"
  rsync -a "$WORK/rsbad.csv" "$m/dense_1d/" 2>/dev/null && fail "rsync of a bad CSV succeeded"
  ls -a "$m/dense_1d" | grep -q 'rsbad' && fail "rsync's temporary left listed"
  echo "rsync: committed on its rename; a bad file fails"
else
  "$PY" -c "
import os, sys
t = sys.argv[2] + '/.rs.csv.Ab12Cd'
open(t, 'wb').write(open(sys.argv[1], 'rb').read())
os.chmod(t, 0o644)
os.rename(t, sys.argv[2] + '/rs.csv')" "$WORK/rs.csv" "$m/dense_1d" || fail "rsync-like rename"
  echo "rsync not installed: its write pattern emulated"
fi
grep -q '^41,4100,4.25$' "$m/dense_1d/data.csv" || fail "rs.csv not visible"

# ---- CSV into a plain folder makes an array ---------------------------------------
printf 'name,qty,price,day,ok\nwidget,3,2.5,2024-01-02,true\n"gadget, large",,10,2024-02-03,false\n' >"$WORK/sales.csv"
cp "$WORK/sales.csv" "$m/plain/" || fail "cp sales.csv into a plain folder"
[ -d "$m/plain/sales" ] || fail "plain/sales not made"
[ -f "$m/plain/sales/schema.json" ] || fail "plain/sales is not an array"
"$PY" - "$m/plain/sales/data.csv" <<'PYEOF' || fail "plain/sales read back"
import sys
import pandas as pd
df = pd.read_csv(sys.argv[1], keep_default_na=False)
assert list(df.columns) == ["row", "name", "qty", "price", "day", "ok"], list(df.columns)
assert list(df["row"]) == [0, 1]
assert list(df["name"]) == ["widget", "gadget, large"]
assert list(df["price"]) == [2.5, 10.0]
assert str(df["qty"][1]) == "", df["qty"][1]
PYEOF
grep -q 'sales.csv  ok: ' "$m/plain/ingest.log" || fail "plain/ingest.log"
# A second file of the name is appended, never a replacement.
cp "$WORK/sales.csv" "$m/plain/" || fail "a second sales.csv was not appended"
[ "$(grep -c widget "$m/plain/sales/data.csv")" = 2 ] || fail "plain/sales after the second copy: $(cat "$m/plain/sales/data.csv")"
cp "$WORK/bad_ragged.csv" "$m/plain/" 2>/dev/null && fail "a ragged CSV made an array"
[ -e "$SRC/plain/bad_ragged" ] && fail "a refused CSV left plain/bad_ragged"
echo "CSV into a plain folder: array made, read back"

# ---- schema.json in a new folder makes an array -------------------------------------
mkdir "$m/plain/fromschema" || fail "mkdir in a plain folder"
[ -d "$SRC/plain/fromschema" ] || fail "mkdir did not make the folder in SOURCE"
cp "$m/dense_1d/schema.json" "$m/plain/fromschema/schema.json" || fail "cp schema.json"
[ -f "$m/plain/fromschema/data.csv" ] || fail "schema.json made no array"
"$PY" - "$m/plain/fromschema/schema.json" "$m/dense_1d/schema.json" <<'PYEOF' || fail "schema.json of the new array"
import json, sys
new, old = (json.load(open(p)) for p in sys.argv[1:])
def names(s, k):
    return [(x["name"], x["type"]) for x in s[k]]
for k in ("dimensions", "attributes"):
    if k in old:
        assert names(new, k) == names(old, k), (names(new, k), names(old, k))
PYEOF
cp "$WORK/in1.csv" "$m/plain/fromschema/" || fail "cp into the new array"
grep -q '^5,32,1.25$' "$m/plain/fromschema/data.csv" || fail "new array read back"
mkdir "$m/plain/badschema" || fail "mkdir badschema"
printf '{"dimensions": [{"name": "d", "type": "NOPE"}]}' >"$WORK/bad_schema.json"
cp "$WORK/bad_schema.json" "$m/plain/badschema/schema.json" 2>/dev/null && fail "a bad schema.json made an array"
grep -q 'schema.json  refused: ' "$m/plain/badschema/ingest.log" 2>/dev/null ||
  grep -q "write '/plain/badschema/schema.json': refused: " "$LOG" || fail "bad schema.json: no refusal logged"
[ -z "$(ls -A "$SRC/plain/badschema")" ] || fail "a bad schema.json left files"
mkdir "$m/plain/gone" && rmdir "$m/plain/gone" || fail "rmdir of an empty folder"
# A file removed while being written is gone with its bytes.
"$PY" - "$m/dense_1d" "$SRC/dense_1d" <<'PYEOF' || fail "rm of a file being written"
import os, sys
a, src = sys.argv[1:]
n = len(os.listdir(os.path.join(src, "__fragments")))
with open(os.path.join(a, "doomed.csv"), "w") as f:
    f.write("d,a,b\n77,1,1\n")
    f.flush()
    os.unlink(os.path.join(a, "doomed.csv"))
assert len(os.listdir(os.path.join(src, "__fragments"))) == n
PYEOF
mkdir "$m/dense_1d/x" 2>/dev/null && fail "mkdir inside an array"
echo "schema.json in a new folder: array made, then written"

# ---- writes that mean nothing are refused -------------------------------------------------
# An array's schema.json takes schema documents only (schema evolution):
# anything else is refused at close and changes nothing.
before=$(snap "$SRC/dense_1d")
echo x | dd of="$m/dense_1d/schema.json" status=none 2>/dev/null && fail "wrote x into an array's schema.json"
[ "$before" = "$(snap "$SRC/dense_1d")" ] || fail "a refused schema.json changed dense_1d"
grep -q 'schema.json  refused: ' "$m/dense_1d/ingest.log" || fail "no refusal of schema.json: $(cat "$m/dense_1d/ingest.log")"
echo x 2>/dev/null >"$m/dense_1d/metadata.json" && fail "wrote an array's metadata.json"
echo x 2>/dev/null >"$m/dense_1d/fragments/new" && fail "wrote into fragments/"
t=$(ls "$m/dense_1d/versions" | head -1)
cp "$WORK/in1.csv" "$m/dense_1d/versions/$t/" 2>"$WORK/cp.err" && fail "wrote into a version"
grep -q 'Read-only file system' "$WORK/cp.err" || fail "version write: $(cat "$WORK/cp.err")"
rm "$m/dense_1d/data.csv" 2>/dev/null && fail "rm data.csv"
echo "meaningless writes refused"

# ---- a read-only mount refuses with EROFS --------------------------------------------------
mount_tilefs "$SRC" "$WORK/ro" -o ro
before=$(snap "$SRC/dense_1d")
cp "$WORK/in1.csv" "$WORK/ro/dense_1d/" 2>"$WORK/cp.err" && fail "ro: cp succeeded"
grep -q 'Read-only file system' "$WORK/cp.err" || fail "ro cp: $(cat "$WORK/cp.err")"
mkdir "$WORK/ro/plain/x" 2>"$WORK/cp.err" && fail "ro: mkdir succeeded"
grep -q 'Read-only file system' "$WORK/cp.err" || fail "ro mkdir: $(cat "$WORK/cp.err")"
touch "$WORK/ro/plain/x.csv" 2>/dev/null && fail "ro: touch succeeded"
[ "$(snap "$SRC/dense_1d")" = "$before" ] || fail "ro mount changed files"
echo "ro: EROFS"

empty_soon "$WORK/staging" || fail "staged files left: $(ls -A "$WORK/staging")"
pass
