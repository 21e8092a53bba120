#!/usr/bin/env bash
# Arrays with enumerations written through the mount (SPEC §6): a CSV
# holding an enumeration's values as data.csv shows them is committed and
# reads back; data.csv copied back in changes nothing; a value the
# enumeration lacks makes cp fail, names the enumeration in ingest.log and
# leaves the array's files identical; the schema.json of the corpus array,
# written into a new empty folder, makes an array with the same
# enumerations (files in __schema/__enumerations/), which takes the same
# CSV; a schema.json whose attribute names a missing enumeration is
# refused and leaves the folder plain; tfs create, ingest and export do
# the same without a mount.
source "$(dirname "$0")/lib/common.sh"

SRC=$WORK/src
copy_corpus "$SRC" enumeration
chmod -R u+w "$SRC"
mkdir -p "$SRC/plain" "$WORK/staging"
mount_tilefs "$SRC" "$WORK/mnt" -o staging="$WORK/staging"
m=$WORK/mnt
a=$m/enumeration

snap() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 md5sum); }


# ---- values in, values out ------------------------------------------------------
head -3 "$a/data.csv" | grep -qx '2,alpha,30,1' || fail "data.csv: $(head -3 "$a/data.csv")"
printf 'd,color,level,plain\n1,green,20,7\n5,"blue",10,-4\n' >"$WORK/in.csv"
cp "$WORK/in.csv" "$a/" || fail "cp of enumeration values"
grep -qx '1,green,20,7' "$a/data.csv" || fail "row 1: $(grep '^1,' "$a/data.csv")"
grep -qx '5,blue,10,-4' "$a/data.csv" || fail "row 5: $(grep '^5,' "$a/data.csv")"
grep -q 'in.csv  ok: 2 rows' "$a/ingest.log" || fail "ingest.log: $(cat "$a/ingest.log")"
echo "values of the enumerations: committed, read back"

# ---- data.csv back in: the same array -------------------------------------------
cp "$a/data.csv" "$WORK/all.csv"
cp "$WORK/all.csv" "$a/again.csv" || fail "cp of data.csv"
cmp -s "$a/data.csv" "$WORK/all.csv" || fail "data.csv changed when written back"
echo "data.csv written back: unchanged"

# ---- values the enumeration lacks -----------------------------------------------
# colors is unordered: new values extend it (a second schema), in the
# order first seen; keys of the old values stay.
[ "$(ls "$SRC/enumeration/__schema" | grep -c '^__[0-9]')" -eq 1 ] || fail "schemas before"
printf 'd,color,level,plain\n1,red,10,1\n2,purple,20,7\n3,cyan,10,2\n4,purple,30,3\n' >"$WORK/new.csv"
cp "$WORK/new.csv" "$a/" || fail "cp of values colors lacks"
grep -q 'new.csv  ok: 4 rows.*2 values added to enumerations' "$a/ingest.log" ||
  fail "ingest.log: $(grep new.csv "$a/ingest.log")"
[ "$(ls "$SRC/enumeration/__schema" | grep -c '^__[0-9]')" -eq 2 ] ||
  fail "no new schema: $(ls "$SRC/enumeration/__schema")"
for row in 1,red,10,1 2,purple,20,7 3,cyan,10,2 4,purple,30,3; do
  grep -qx "$row" "$a/data.csv" || fail "row $row: $(head -5 "$a/data.csv")"
done
"$TFS" info --json "$SRC/enumeration" | "$PY" -c '
import json, sys
doc = json.load(sys.stdin)
en = {e["name"]: e for e in doc.get("schema", doc)["enumerations"]}
assert en["colors"]["values"] == ["red", "green", "blue", "alpha", "purple", "cyan"], en
assert en["levels"]["values"] == [10, 20, 30], en
' || fail "the enumeration after extending"
same_in_tiledb "$SRC/enumeration"
echo "values an unordered enumeration lacks: extended by schema evolution, TileDB reads the same"

# levels is ordered: a value it lacks is refused, nothing written.
before=$(snap "$SRC/enumeration")
printf 'd,color,level,plain\n1,red,10,1\n2,green,40,7\n' >"$WORK/bad.csv"
if cp "$WORK/bad.csv" "$a/" 2>"$WORK/cp.err"; then
  fail "cp of a value an ordered enumeration lacks succeeded"
fi
grep -q 'Invalid argument' "$WORK/cp.err" || fail "cp: $(cat "$WORK/cp.err")"
grep "bad.csv  refused" "$a/ingest.log" |
  grep -q "line 3, column 3 ('level'): '40' is not a value of the enumeration 'levels', which is ordered" ||
  fail "ingest.log: $(grep bad.csv "$a/ingest.log")"
[ "$(snap "$SRC/enumeration")" = "$before" ] || fail "a refused CSV changed the array's files"
# A new value, then a bad field further on: the evolution is undone.
printf 'd,color,level,plain\n1,red,10,1\n2,magenta,20,7\n3,red,10,x\n' >"$WORK/late.csv"
cp "$WORK/late.csv" "$a/" 2>/dev/null && fail "cp of a CSV with a bad field succeeded"
grep "late.csv  refused" "$a/ingest.log" | grep -q "line 4, column 4 ('plain')" ||
  fail "ingest.log: $(grep late.csv "$a/ingest.log")"
[ "$(snap "$SRC/enumeration")" = "$before" ] || fail "a refused CSV with a new value changed the array's files"
! grep -q magenta "$a/schema.json" || fail "magenta stayed in the schema"
echo "ordered enumeration, bad field after a new value: cp fails, files identical"

# ---- raw keys onto a slice -------------------------------------------------------
# Raw values of an enumerated attribute are keys: 0..5 select red..cyan
# (colors was extended above), 6 selects nothing and refuses the whole
# write.
before=$(snap "$SRC/enumeration")
printf '\x06\x00' >"$WORK/badkeys.bin"
cp "$WORK/badkeys.bin" "$a/color/slice[11:13]" 2>"$WORK/cp.err" &&
  fail "raw key 6 of a 6-value enumeration was accepted"
grep -q "cell 0: 6 is not a key of the enumeration 'colors' (6 values)" "$a/ingest.log" ||
  fail "ingest.log: $(tail -2 "$a/ingest.log")"
[ "$(snap "$SRC/enumeration")" = "$before" ] || fail "a refused slice changed the array's files"
printf '\x03\x01' >"$WORK/keys.bin"
cp "$WORK/keys.bin" "$a/color/slice[11:13]" || fail "cp of valid raw keys"
grep -q '^11,alpha,' "$a/data.csv" && grep -q '^12,green,' "$a/data.csv" ||
  fail "slice keys: $(grep -E '^1[12],' "$a/data.csv")"
# The fill value (255: cells nobody wrote) is taken, so a raw slice reads
# back and writes back unchanged.
printf '\x00\xff' >"$WORK/fill.bin"
cp "$WORK/fill.bin" "$a/color/slice[13:15]" || fail "cp of a key and the fill value"
cmp -s "$a/color/slice[13:15]" "$WORK/fill.bin" || fail "slice with the fill value reads differently"
cp "$a/color/slice[1:21]" "$WORK/all_keys.bin" && cp "$WORK/all_keys.bin" "$a/color/slice[1:21]" ||
  fail "a raw slice read back did not write back"
cmp -s "$a/color/slice[1:21]" "$WORK/all_keys.bin" || fail "raw slice changed when written back"
echo "raw keys onto a slice: in range and the fill value written, out of range refused"

# ---- schema.json into a new folder ----------------------------------------------
mkdir "$m/plain/copy" || fail "mkdir"
cp "$a/schema.json" "$m/plain/copy/schema.json" || fail "cp schema.json"
[ "$(ls "$SRC/plain/copy/__schema/__enumerations" | wc -l)" -eq 2 ] ||
  fail "enumeration files: $(ls "$SRC/plain/copy/__schema/__enumerations")"
"$PY" - "$m/plain/copy/schema.json" "$a/schema.json" <<'PYEOF' || fail "schema.json of the new array"
import json, sys
new = json.load(open(sys.argv[1]))
old = json.load(open(sys.argv[2]))
for key in ("enumerations", "attrs", "dims"):
    n = new.get("schema", new)[key]
    o = old.get("schema", old)[key]
    assert n == o, (key, n, o)
PYEOF
cp "$WORK/all.csv" "$m/plain/copy/" || fail "cp into the new array"
cmp -s "$m/plain/copy/data.csv" "$WORK/all.csv" || fail "the new array reads differently"
"$TFS" info "$SRC/plain/copy" | grep -q 'enumeration colors STRING_ASCII, 6 values' ||
  fail "tfs info: $("$TFS" info "$SRC/plain/copy")"
echo "schema.json with enumerations: array made, the same CSV reads the same"

mkdir "$m/plain/bad"
"$PY" - "$a/schema.json" "$WORK/bad_schema.json" <<'PYEOF'
import json, sys
doc = json.load(open(sys.argv[1]))
doc.get("schema", doc)["attrs"][0]["enumeration"] = "shades"
json.dump(doc, open(sys.argv[2], "w"))
PYEOF
cp "$WORK/bad_schema.json" "$m/plain/bad/schema.json" 2>/dev/null &&
  fail "a schema naming a missing enumeration was accepted"
grep -q "no enumeration 'shades' in enumerations" "$LOG" || fail "no log line for the bad schema"
[ ! -e "$SRC/plain/bad/__schema" ] || fail "the refused schema left an array"
echo "schema.json naming a missing enumeration: refused, folder stays plain"

# ---- the same with the tool ---------------------------------------------------------
"$TFS" info --json "$CORPUS/enumeration" >"$WORK/s.json"
"$TFS" create "$WORK/cli" "$WORK/s.json" || fail "tfs create"
"$TFS" ingest "$WORK/cli" "$WORK/all.csv" || fail "tfs ingest"
"$TFS" export "$WORK/cli" | cmp -s - "$WORK/all.csv" || fail "tfs export differs"
set +e
"$TFS" ingest "$WORK/cli" "$WORK/bad.csv" 2>"$WORK/tool.err"
st=$?
set -e
[ "$st" -eq 4 ] || fail "tfs ingest of a value an ordered enumeration lacks: status $st"
grep -qx "tfs ingest: $WORK/bad.csv: line 3, column 3 ('level'): '40' is not a value of the enumeration 'levels', which is ordered: new values are not added to it" \
  "$WORK/tool.err" || fail "tfs ingest: $(cat "$WORK/tool.err")"
"$TFS" ingest "$WORK/cli" "$WORK/new.csv" || fail "tfs ingest of new values"
"$TFS" export "$WORK/cli" | grep -qx '3,cyan,10,2' || fail "tfs export after extending"
same_in_tiledb "$WORK/cli"

# A full enumeration: INT8 keys index fewer than 127 values (TileDB's
# rule), so 125 values take one more and refuse a second.
"$PY" - "$WORK/full.json" <<'PYEOF'
import json, sys
doc = {"array_type": "dense", "schema": {
    "dims": [{"name": "d", "type": "INT32", "domain": [1, 100], "tile": 10}],
    "attrs": [{"name": "k", "type": "INT8", "enumeration": "e"}],
    "enumerations": [{"name": "e", "type": "STRING_UTF8", "cell_val_num": "var",
                      "ordered": False, "values": ["v%d" % i for i in range(125)]}]}}
json.dump(doc, open(sys.argv[1], "w"))
PYEOF
"$TFS" create "$WORK/full" "$WORK/full.json" || fail "tfs create of a 125-value enumeration"
printf 'd,k\n1,v3\n2,w1\n' >"$WORK/one.csv"
"$TFS" ingest "$WORK/full" "$WORK/one.csv" || fail "tfs ingest of the 126th value"
before=$(snap "$WORK/full")
printf 'd,k\n1,v3\n2,w2\n' >"$WORK/two.csv"
set +e
"$TFS" ingest "$WORK/full" "$WORK/two.csv" 2>"$WORK/tool.err"
st=$?
set -e
[ "$st" -ne 0 ] || fail "tfs ingest past a full enumeration succeeded"
grep -q "line 3, column 2 ('k'): 'w2' is not a value of the enumeration 'e', which is full: INT8" \
  "$WORK/tool.err" || fail "tfs ingest: $(cat "$WORK/tool.err")"
[ "$(snap "$WORK/full")" = "$before" ] || fail "a refused CSV changed the full array"
same_in_tiledb "$WORK/full"

# Evolution checks the same: a schema.json giving the enumeration 127
# values is refused.
mkdir "$m/plain/fullm" || fail "mkdir"
cp "$WORK/full.json" "$m/plain/fullm/schema.json" || fail "cp schema.json of a full enumeration"
"$PY" - "$m/plain/fullm/schema.json" "$WORK/over.json" <<'PYEOF'
import json, sys
doc = json.load(open(sys.argv[1]))
s = doc.get("schema", doc)
s["enumerations"][0]["values"] += ["w1", "w2"]
json.dump(doc, open(sys.argv[2], "w"))
PYEOF
before=$(snap "$SRC/plain/fullm")
cp "$WORK/over.json" "$m/plain/fullm/schema.json" 2>/dev/null &&
  fail "a schema.json with an enumeration INT8 cannot index was accepted"
grep -q "the attribute's type is too small to index every value of the enumeration ('k' is INT8, 127 values)" \
  "$m/plain/fullm/ingest.log" || fail "ingest.log: $(cat "$m/plain/fullm/ingest.log")"
[ "$(snap "$SRC/plain/fullm")" = "$before" ] || fail "a refused schema.json changed the array"
echo "full enumerations: one value more taken, then refused; schema.json past the index type refused"
echo "tfs create / ingest / export: the same"

pass
