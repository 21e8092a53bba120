#!/usr/bin/env bash
# Writing that grows (SPEC §6) through the mount with real tools: CSV
# files copied (cp, rsync) into an array made from a CSV append after the
# last row, also under the array's name in the plain folder; a header that
# does not match is refused; sed -i and vim -es edit metadata values in
# place and their temporary names never become keys; metadata keys keep
# their type and new keys take it from their text; numpy.save into a
# plain folder makes an array; an array's schema.json written back with
# attributes added or dropped, or an enumeration extended, evolves the
# schema (sed -i, vim -es, Python), anything else is refused; a condition
# written to A/delete, or given to tfs delete, deletes the cells it
# matches; a bad one is refused and writes nothing. Every result is read back through the mount
# and by real TileDB (../shared/reference/tiledb dump) with the same cells.
source "$(dirname "$0")/lib/common.sh"

SRC=$WORK/src
copy_corpus "$SRC" metadata sparse_2d_int enumeration sparse_dtypes
chmod -R u+w "$SRC"
mkdir -p "$SRC/plain" "$WORK/staging"
mount_tilefs "$SRC" "$WORK/mnt" -o staging="$WORK/staging"
m=$WORK/mnt
P=$m/plain

snap() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 md5sum); }


# ---- CSV files append ---------------------------------------------------------------
printf 'name,qty,price\nwidget,3,2.5\n"gadget, large",,10\n' >"$WORK/sales.csv"
printf 'price,name,qty\n0.5,bolt,7\n' >"$WORK/more.csv"
cp "$WORK/sales.csv" "$P/" || fail "cp sales.csv into a plain folder"
cp "$WORK/more.csv" "$P/sales/" || fail "cp more.csv into the array"
cp "$WORK/sales.csv" "$P/" || fail "cp sales.csv again: not appended"
rsync "$WORK/more.csv" "$P/sales.csv" || fail "rsync onto sales.csv"
cat "$WORK/more.csv" >"$P/sales/shell.csv" || fail "shell redirection into the array"
"$PY" - "$P/sales/data.csv" <<'PYEOF' || fail "appended rows read back"
import sys
import pandas as pd
df = pd.read_csv(sys.argv[1], keep_default_na=False)
assert list(df["row"]) == list(range(7)), df
assert list(df["name"]) == ["widget", "gadget, large", "bolt", "widget",
                            "gadget, large", "bolt", "bolt"], df
assert list(df["price"]) == [2.5, 10, 0.5, 2.5, 10, 0.5, 0.5], df
assert [str(q) for q in df["qty"]] == ["3", "", "7", "3", "", "7", "7"], df
PYEOF
grep -q 'sales.csv  ok: 2 rows' "$P/ingest.log" || fail "plain/ingest.log: $(cat "$P/ingest.log")"
grep -q 'more.csv  ok: 1 rows' "$P/sales/ingest.log" || fail "sales/ingest.log: $(cat "$P/sales/ingest.log")"
same_in_tiledb "$SRC/plain/sales"
echo "CSV files append after the last row (cp, rsync, >, under the array's name)"

# data.csv edited in place (rows with their coordinates: written back).
sed -i 's/^1,"gadget, large",/1,"gizmo",/' "$P/sales/data.csv" || fail "sed -i on data.csv"
vim -es -u NONE -c '%s/^0,widget,/0,sprocket,/' -c 'wq' "$P/sales/data.csv" || fail "vim -es on data.csv"
head -3 "$P/sales/data.csv" | tr '\n' '|' | grep -qx 'row,name,qty,price|0,sprocket,3,2.5|1,gizmo,,10|' ||
  fail "data.csv after sed and vim: $(head -3 "$P/sales/data.csv")"
[ "$(tail -n +2 "$P/sales/data.csv" | wc -l)" = 7 ] || fail "rows after editing data.csv"
same_in_tiledb "$SRC/plain/sales"

# A header that does not match, a folder of the name: refused at close,
# with a line in the folder's ingest.log, nothing changed.
before=$(snap "$SRC/plain/sales")
printf 'name,amount\nx,1\n' >"$WORK/other.csv"
cp "$WORK/other.csv" "$P/sales.csv" 2>"$WORK/cp.err" && fail "a CSV of other columns appended"
grep -q 'failed to close' "$WORK/cp.err" || fail "cp: $(cat "$WORK/cp.err")"
grep -q "sales.csv  refused: sales.csv: line 1: the columns 'name,amount' are not the array's 'name,qty,price'" \
  "$P/ingest.log" || fail "no refusal line: $(cat "$P/ingest.log")"
[ "$before" = "$(snap "$SRC/plain/sales")" ] || fail "a refused CSV changed the array"
mkdir "$P/taken"
cp "$WORK/sales.csv" "$P/taken.csv" 2>/dev/null && fail "a CSV replaced the folder taken/"
grep -q "taken.csv  refused: 'taken.csv': 'taken' exists and is no array" "$P/ingest.log" ||
  fail "no refusal line for taken.csv: $(cat "$P/ingest.log")"
[ -z "$(ls -A "$SRC/plain/taken")" ] || fail "a refused CSV wrote into taken/"
echo "CSV files of other columns, or onto a folder: refused, logged, nothing changed"

# ---- metadata: typed, edited in place ------------------------------------------------
M=$m/metadata/metadata
before=$(snap "$SRC/metadata")
printf '99999\n' | dd of="$M/int16" status=none 2>"$WORK/dd.err" && fail "99999 written into an INT16 key"
grep -q "metadata/int16  refused: .*'99999' is no INT16 value" "$m/metadata/ingest.log" ||
  fail "ingest.log: $(cat "$m/metadata/ingest.log")"
[ "$before" = "$(snap "$SRC/metadata")" ] || fail "a refused value changed the array"
echo 42 >"$M/count" || fail "set count"
echo 2.5 >"$M/ratio" || fail "set ratio"
printf '1\n-2\n3\n' >"$M/list" || fail "set list"
echo "hello" >"$M/greeting" || fail "set greeting"
sed -i 's/-12345/-7/' "$M/int16" || fail "sed -i on int16"
sed -i 's/plain/fancy/' "$M/ascii" || fail "sed -i on ascii"
vim -es -u NONE -c '%s/3/4/' -c 'wq' "$M/int32_list" || fail "vim -es on int32_list"
vim -es -u NONE -c '%s/hello/hi there/' -c 'wq' "$M/greeting" || fail "vim -es on greeting"
"$PY" - "$m/metadata/metadata.json" <<'PYEOF' || fail "metadata after the edits"
import json, sys
doc = json.load(open(sys.argv[1]))
want = {
    "count": ("INT64", [42]), "ratio": ("FLOAT64", [2.5]),
    "list": ("INT64", [1, -2, 3]), "greeting": ("STRING_UTF8", ["hi there"]),
    "int16": ("INT16", [-7]), "ascii": ("STRING_ASCII", ["fancy ascii"]),
    "int32_list": ("INT32", [1, -2, 4]),
}
for k, (t, v) in want.items():
    assert doc[k]["type"] == t and doc[k]["values"] == v, (k, doc[k])
allowed = set(want) | {"added_later", "blob", "bool", "char", "datetime_ms",
                       "float32_pair", "float64", "int8_pair", "uint64_max",
                       "utf8"}
assert set(doc) == allowed, set(doc) ^ allowed
PYEOF
grep -q -e 'sed' -e '~' -e 4913 -e swp <(ls -a "$M") && fail "a temporary name is listed: $(ls -a "$M")"
grep -q ' deleted' "$m/metadata/ingest.log" && fail "an editor deleted a key on the way"
same_in_tiledb "$SRC/metadata"
echo "metadata: typed keys, refusals, sed -i and vim -es in place"

# ---- numpy.save into a plain folder makes an array ------------------------------------
"$PY" - "$P" <<'PYEOF' || fail "numpy.save into the plain folder"
import sys
import numpy as np
np.save(sys.argv[1] + "/grid.npy", np.arange(12, dtype=np.int32).reshape(3, 4))
np.save(sys.argv[1] + "/flags.npy", np.array([True, False, True]))
try:
    np.save(sys.argv[1] + "/words.npy", np.array(["a", "b"]))
    raise SystemExit("a string .npy made an array")
except OSError:
    pass
back = np.load(sys.argv[1] + "/grid/v/slice[:,:].npy")
assert back.dtype == np.int32 and back.shape == (3, 4), back
assert (back == np.arange(12).reshape(3, 4)).all(), back
assert list(np.load(sys.argv[1] + "/flags/v/slice[:].npy")) == [True, False, True]
PYEOF
[ -e "$SRC/plain/words" ] && fail "a refused .npy left plain/words"
grep -q "words.npy  refused: 'words.npy': .npy dtype <U1" "$P/ingest.log" ||
  fail "no refusal line for words.npy: $(cat "$P/ingest.log")"
same_in_tiledb "$SRC/plain/grid"
same_in_tiledb "$SRC/plain/flags"
echo "numpy.save into a plain folder: arrays of its shape and dtype"

# ---- .npy into an array's folder appends ---------------------------------------------
# A dense array with room along its first dimension takes .npy files of
# its other dimensions' shape and its attribute's dtype after the last
# row; anything else is refused with a line in ingest.log and changes
# nothing, never staged and dropped.
mkdir "$P/rows" || fail "mkdir rows"
printf '%s' '{"array_type":"dense","dims":[{"name":"r","type":"INT64","domain":[-5,994],"tile":10},{"name":"c","type":"INT64","domain":[0,3],"tile":4}],"attrs":[{"name":"v","type":"INT32"}]}' \
  >"$P/rows/schema.json" || fail "schema.json of rows"
"$PY" - "$P" <<'PYEOF' || fail "numpy.save into the array"
import sys
import numpy as np
np.save(sys.argv[1] + "/rows/a.npy", np.arange(12, dtype=np.int32).reshape(3, 4))
np.save(sys.argv[1] + "/rows/b.npy", np.arange(100, 108, dtype=np.int32).reshape(2, 4))
back = np.load(sys.argv[1] + "/rows/v/slice[:,:].npy")
assert back.shape == (5, 4), back.shape
assert (back[:3] == np.arange(12).reshape(3, 4)).all(), back
assert (back[3:] == np.arange(100, 108).reshape(2, 4)).all(), back
PYEOF
grep -q "b.npy  ok: 8 cells, dense fragment .*appended as 'v' slice\[-2:0,0:4\]" "$P/rows/ingest.log" ||
  fail "ingest.log: $(cat "$P/rows/ingest.log")"
same_in_tiledb "$SRC/plain/rows"
before=$(snap "$SRC/plain/rows")
"$PY" - "$P" "$WORK" <<'PYEOF' || fail "refused .npy files"
import sys
import numpy as np
P, W = sys.argv[1], sys.argv[2]
cases = {"wide.npy": np.zeros((2, 5), dtype=np.int32),
         "float.npy": np.zeros((2, 4), dtype=np.float64),
         "flat.npy": np.zeros(4, dtype=np.int32)}
np.save(W + "/row.npy", np.zeros((1, 4), dtype=np.int32))
for name, arr in cases.items():
    np.save(W + "/" + name, arr)
    try:
        with open(W + "/" + name, "rb") as src, open(P + "/rows/" + name, "wb") as dst:
            dst.write(src.read())
        raise SystemExit(name + " was taken")
    except OSError:
        pass
PYEOF
grep -q "wide.npy  refused: 'wide.npy': dimension 'c' holds 4 indices, the .npy 5" "$P/rows/ingest.log" ||
  fail "ingest.log: $(grep wide.npy "$P/rows/ingest.log")"
grep -q "float.npy  refused: 'float.npy': .npy dtype" "$P/rows/ingest.log" ||
  fail "ingest.log: $(grep float.npy "$P/rows/ingest.log")"
grep -q "flat.npy  refused: 'flat.npy': .npy shape (4,): the array has 2 dimensions" "$P/rows/ingest.log" ||
  fail "ingest.log: $(grep flat.npy "$P/rows/ingest.log")"
cp "$WORK/row.npy" "$P/grid/more.npy" 2>/dev/null && fail "a .npy into a full array was taken"
grep -q "more.npy  refused: 'more.npy': the array is full along 'd0'" "$P/grid/ingest.log" ||
  fail "ingest.log: $(grep more.npy "$P/grid/ingest.log")"
cp "$WORK/flat.npy" "$m/sparse_dtypes/x.npy" 2>/dev/null && fail "a .npy into a sparse array was taken"
grep -q "x.npy  refused: 'x.npy': a .npy is appended to dense arrays only" "$m/sparse_dtypes/ingest.log" ||
  fail "ingest.log: $(grep x.npy "$m/sparse_dtypes/ingest.log")"
[ "$(snap "$SRC/plain/rows")" = "$before" ] || fail "a refused .npy changed the array"
echo ".npy into an array's folder: appended after the last row, or refused with a reason"

# ---- schema evolution through schema.json -----------------------------------------
S=$m/sparse_2d_int
sed -i 's|   {"name":"s","type":"STRING_UTF8"|   {"name":"w","type":"FLOAT64","cell_val_num":1,"nullable":true},\n&|' \
  "$S/schema.json" || fail "sed -i adding an attribute"
grep -q 'schema.json  ok: schema evolved' "$S/ingest.log" || fail "ingest.log: $(cat "$S/ingest.log")"
[ "$(ls "$SRC/sparse_2d_int/__schema" | grep -c '^__')" = 2 ] || fail "no second schema file"
head -1 "$S/data.csv" | grep -qx 'x,y,a,w,s' || fail "columns after adding w: $(head -1 "$S/data.csv")"
printf 'x,y,a,w,s\n1,1,5,2.5,hi\n' >"$WORK/w.csv"
cp "$WORK/w.csv" "$S/" || fail "cp a CSV with the new attribute"
grep -qx '1,1,5,2.5,hi' "$S/data.csv" || fail "new attribute read back"
grep -qx '0,15,15,,""' "$S/data.csv" || fail "older cells lack the new attribute: $(head -3 "$S/data.csv")"
same_in_tiledb "$SRC/sparse_2d_int"
# vim drops the attribute a.
vim -es -u NONE -c 'g/"name":"a"/d' -c 'wq' "$S/schema.json" || fail "vim -es dropping a"
head -1 "$S/data.csv" | grep -qx 'x,y,w,s' || fail "columns after dropping a: $(head -1 "$S/data.csv")"
same_in_tiledb "$SRC/sparse_2d_int"
# Dimensions, types and layouts do not change: refused, nothing written.
before=$(snap "$SRC/sparse_2d_int")
sed 's|"domain":\[0,99\]|"domain":[0,199]|' "$S/schema.json" >"$WORK/dom.json"
cp "$WORK/dom.json" "$S/schema.json" 2>/dev/null && fail "a new domain was taken"
grep -q "schema.json  refused: 'schema.json': dimension 'x' differs" "$S/ingest.log" || fail "ingest.log: $(cat "$S/ingest.log")"
sed 's|"name":"w","type":"FLOAT64","cell_val_num":1,"nullable":true|"name":"w","type":"FLOAT64","cell_val_num":1,"nullable":false|' \
  "$S/schema.json" >"$WORK/type.json"
cmp -s "$WORK/type.json" "$S/schema.json" && fail "sed did not change w"
cp "$WORK/type.json" "$S/schema.json" 2>/dev/null && fail "w made not nullable"
grep -q "schema.json  refused: .*attribute 'w' changes its type" "$S/ingest.log" || fail "ingest.log: $(cat "$S/ingest.log")"
[ "$before" = "$(snap "$SRC/sparse_2d_int")" ] || fail "a refused schema changed the array"
# An enumeration extended in schema.json: its new value is then written.
E=$m/enumeration
"$PY" - "$E/schema.json" <<'PYEOF' || fail "extending the enumeration colors"
import json, sys
doc = json.load(open(sys.argv[1]))
doc["schema"]["enumerations"][0]["values"].append("purple")
with open(sys.argv[1], "w") as f:
    json.dump(doc, f)
PYEOF
grep -q 'purple' "$E/schema.json" || fail "colors not extended"
same_in_tiledb "$SRC/enumeration"
echo "schema evolution: attributes added (sed -i) and dropped (vim -es), an enumeration extended, other changes refused"

# ---- deletes ------------------------------------------------------------------------------
D=$m/sparse_2d_int
n0=$(tail -n +2 "$D/data.csv" | wc -l)
echo 'x < 20 or s = "plain"' >"$D/delete" || fail "echo COND > delete"
grep -q 'delete  ok: delete commit __' "$D/ingest.log" || fail "ingest.log: $(cat "$D/ingest.log")"
"$PY" - "$D/data.csv" "$n0" <<'PYEOF' || fail "cells left after the delete"
import sys
import pandas as pd
df = pd.read_csv(sys.argv[1], keep_default_na=False)
assert not ((df.s == "plain") | (df.x < 20)).any(), df
assert 0 < len(df) < int(sys.argv[2]), df
PYEOF
ls "$D" | grep -qx delete && fail "delete is listed after close"
same_in_tiledb "$SRC/sparse_2d_int"
before=$(snap "$SRC/sparse_2d_int")
echo 'nosuch > 1' | dd of="$D/delete" status=none 2>/dev/null && fail "a condition on no field was taken"
grep -q "delete  refused: 'delete': .*no field 'nosuch'" "$D/ingest.log" || fail "ingest.log: $(cat "$D/ingest.log")"
echo 'a > 1' | dd of="$P/grid/delete" status=none 2>/dev/null && fail "a delete in a dense array was taken"
[ "$before" = "$(snap "$SRC/sparse_2d_int")" ] || fail "a refused delete changed the array"
# tfs delete, on a copy outside the mount.
cp -r "$CORPUS/sparse_dtypes" "$WORK/sd" && chmod -R u+w "$WORK/sd"
cols=$("$TFS" export "$WORK/sd" | head -1)
"$TFS" delete "$WORK/sd" --where "$(echo "$cols" | cut -d, -f1) >= 0" || fail "tfs delete"
[ "$("$TFS" export "$WORK/sd" | wc -l)" = 1 ] || fail "tfs delete left cells: $("$TFS" export "$WORK/sd" | head -3)"
same_in_tiledb "$WORK/sd"
set +e
"$TFS" delete "$WORK/sd" --where 'nosuch = 1' 2>"$WORK/del.err"; st=$?
set -e
[ "$st" = 4 ] || fail "tfs delete of a bad condition: exit $st"
grep -q "no field 'nosuch'" "$WORK/del.err" || fail "tfs delete: $(cat "$WORK/del.err")"
echo "deletes: echo COND > A/delete, tfs delete --where, refusals"

# ---- consolidation drops deleted cells ----------------------------------------------------
# The corpus array with a delete commit between its fragments (the last
# one, written after the delete, holds cells the condition would match)
# and one more delete through tfs, consolidated: the new fragment lacks
# the deleted cells (it reads the same with the delete commits removed),
# the late cells are kept, and TileDB reads the same.
cp -r "$CORPUS/delete_condition" "$WORK/sc" && chmod -R u+w "$WORK/sc"
"$TFS" delete "$WORK/sc" --where 'a = 57' || fail "tfs delete on delete_condition"
"$TFS" export "$WORK/sc" >"$WORK/sc_before.csv"
grep -q ',late$' "$WORK/sc_before.csv" || fail "the cells written after the delete are not read"
"$TFS" consolidate "$WORK/sc" || fail "tfs consolidate"
"$TFS" vacuum "$WORK/sc" || fail "tfs vacuum"
"$TFS" export "$WORK/sc" | cmp -s - "$WORK/sc_before.csv" || fail "consolidation changed the cells"
same_in_tiledb "$WORK/sc"
"$TFS" dump "$WORK/sc" | "$PY" -c '
import json, sys
doc = json.load(sys.stdin)
frags = doc["fragments"]
assert len(frags) == 1, frags
cells = doc["reads"][0]["cell_count"]
assert frags[0]["cell_num"] == cells, (frags[0]["cell_num"], cells)
' || fail "the consolidated fragment holds deleted cells"
rm "$WORK/sc/__commits/"*.del
"$TFS" export "$WORK/sc" | cmp -s - "$WORK/sc_before.csv" || fail "deleted cells came back without the delete commit"
echo "consolidation: deleted cells dropped, the delete still in force for later cells, TileDB reads the same"
