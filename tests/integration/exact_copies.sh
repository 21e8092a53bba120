#!/usr/bin/env bash
# Every copy is exact: over the public corpus and the demo arrays, each on
# a fresh mount (nothing read before), rsync -a, tar c + x, cp -r, gio copy,
# Python's read(), seek(-100, SEEK_END), numpy.fromfile and
# numpy.load(mmap_mode="r") of every listed .npy, and `file` give exactly
# the bytes cat gives, and stat gives every listed file's exact size. An
# array of 300 fragments: find visits O(fragments) entries and a cp -r of
# it stays a bounded multiple of its size (history is one name away). The
# per-field files of a sparse array with duplicates pair the same cells.
source "$(dirname "$0")/lib/common.sh"
: "${TFS:?TFS must name the tfs tool}"
DEMO=$(cd "$HERE/../../scripts/demo" && pwd)
t0=$(date +%s%N)
lap() {
  echo "$1: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  t0=$(date +%s%N)
}

# ---- The source: the corpus (less the two legacy arrays TileDB itself
# cannot read) and the demo arrays -------------------------------------------
src=$WORK/src
mkdir -p "$src"
cp -r "$CORPUS"/. "$src/"
chmod -R u+w "$src"
rm -rf "$src/legacy/dense_array_v1_3_0" "$src/legacy/experimental_array_vUINT32_MAX"
keyfile=$WORK/keys
: >"$keyfile"
chmod 600 "$keyfile"
"$PY" - "$CORPUS" >>"$keyfile" <<'PYEOF'
import glob, json, os, sys
for j in sorted(glob.glob(sys.argv[1] + "/*.json")):
    key = json.load(open(j)).get("key_hex")
    if key:
        print(os.path.basename(j)[:-5], key)
PYEOF
"$TFS" create "$src/demo_temperature" "$DEMO/temperature.json" >/dev/null
awk 'BEGIN { print "lat,lon,celsius"
  for (i = 0; i < 180; i++) for (j = 0; j < 360; j++)
    printf "%d,%d,%.2f\n", i, j, 30 * cos((i - 90) / 57.2958) - 8 + 4 * sin(j / 20.0) }' \
  >"$WORK/t.csv"
"$TFS" ingest "$src/demo_temperature" "$WORK/t.csv" >/dev/null
"$TFS" create "$src/demo_stations" "$DEMO/stations.json" >/dev/null
printf '%s\n' 'station,day,rain_mm,note' 'OSLO,2024-01-01,3.5,snow' 'OSLO,2024-01-02,,' \
  'LIMA,2024-01-01,0,"dry, sunny"' 'PUNE,2024-01-02,12.25,"monsoon ""early"""' >"$WORK/s.csv"
"$TFS" ingest "$src/demo_stations" "$WORK/s.csv" >/dev/null
"$TFS" create "$src/demo_inventory" "$DEMO/inventory.json" >/dev/null
for k in 1 2 3; do
  awk -v k="$k" 'BEGIN { print "shelf,slot,count,item"
    for (s = 1; s <= 8; s += k) for (t = 1; t <= 10; t++) printf "%d,%d,%d,f%d\n", s, t, s * t + k, k }' \
    >"$WORK/i.csv"
  "$TFS" ingest "$src/demo_inventory" "$WORK/i.csv" >/dev/null
  sleep 0.01
done

lap "sources"

# fresh NAME: a new mount of the source on $WORK/NAME, as M.
fresh() {
  M=$WORK/$1
  mount_tilefs "$src" "$M" -o ro,keyfile="$keyfile"
}
# unmount: unmounts $M and reaps its daemon (the last mounted), so that
# the cleanup at exit does not wait for a zombie.
unmount() {
  fusermount3 -u "$M"
  wait "${PIDS[-1]}" 2>/dev/null || true
}

# ---- The reference: cat of every listed file --------------------------------
fresh m_cat
(cd "$M" && find . -type f) | sort >"$WORK/files" || fail "find over the mount"
n=$(wc -l <"$WORK/files")
[ "$n" -gt 1000 ] || fail "only $n files listed"
! grep -q -e '/versions/' -e '/tiles/' "$WORK/files" || fail "history is listed"
# Folders too (an array without metadata has an empty metadata/).
(cd "$M" && find . -type d) | (cd "$WORK" && mkdir -p ref && cd ref && xargs -d '\n' mkdir -p)
# One cat per file, four at a time.
M=$M R=$WORK/ref xargs -d '\n' -P 4 -n 50 sh -c \
  'for f; do cat "$M/$f" >"$R/$f" || exit 1; done' sh <"$WORK/files" || fail "cat"
unmount
lap "cat of $n files"

# same NAME: the copy in $WORK/NAME equals the reference, file by file.
same() {
  diff -r "$WORK/ref" "$WORK/$1" >"$WORK/$1.diff" 2>&1 ||
    fail "$1 differs from cat: $(head -5 "$WORK/$1.diff")"
}

fresh m_rsync
rsync -a "$M/" "$WORK/rsync/" || fail "rsync -a"
unmount
same rsync
lap "rsync -a"

fresh m_tar
mkdir -p "$WORK/tar"
(cd "$M" && tar cf - .) | (cd "$WORK/tar" && tar xf -) || fail "tar c | tar x"
unmount
same tar
lap "tar c + x"

fresh m_cp
cp -r "$M" "$WORK/cp" || fail "cp -r"
unmount
same cp
lap "cp -r"

# gio copy, as a file manager copies: one call per folder.
fresh m_gio
(cd "$M" && find . -type d) | (mkdir -p "$WORK/gio" && cd "$WORK/gio" && xargs -d '\n' mkdir -p)
# One gio copy per folder (of all its files), four at a time.
"$PY" - "$M" "$WORK/gio" "$WORK/files" <<'PYEOF' || fail "gio copy"
import collections, concurrent.futures, os, subprocess, sys
mnt, dst, listing = sys.argv[1:]
by_dir = collections.defaultdict(list)
for f in open(listing).read().splitlines():
    by_dir[os.path.dirname(f)].append(f)
env = dict(os.environ, GIO_USE_VFS="local")
def copy(d):
    return subprocess.run(["gio", "copy"] + by_dir[d] + [os.path.join(dst, d) + "/"],
                          cwd=mnt, env=env).returncode
with concurrent.futures.ThreadPoolExecutor(4) as pool:
    if any(pool.map(copy, sorted(by_dir))):
        sys.exit("gio copy failed")
PYEOF
unmount
same gio
lap "gio copy"

# Python: stat, read(), seek from the end, numpy of every .npy.
fresh m_py
"$PY" - "$M" "$WORK/ref" "$WORK/files" <<'PYEOF' || fail "python clients"
import os, sys
import numpy as np
mnt, ref, listing = sys.argv[1:]
bad = []
npys = 0
for name in open(listing).read().splitlines():
    path, want = os.path.join(mnt, name), open(os.path.join(ref, name), "rb").read()
    if os.stat(path).st_size != len(want):
        bad.append("%s: stat %d, cat %d" % (name, os.stat(path).st_size, len(want)))
    with open(path, "rb") as f:
        f.seek(-min(100, len(want)), os.SEEK_END)
        if f.read() != want[-100:]:
            bad.append(name + ": seek(-100, SEEK_END)")
    with open(path, "rb") as f:
        if f.read() != want:
            bad.append(name + ": read()")
    if name.endswith(".npy"):
        npys += 1
        if np.fromfile(path, dtype=np.uint8).tobytes() != want:
            bad.append(name + ": numpy.fromfile")
        m = np.load(path, mmap_mode="r")
        r = np.load(os.path.join(ref, name), mmap_mode="r")
        if m.dtype != r.dtype or m.shape != r.shape or m.tobytes() != r.tobytes():
            bad.append(name + ": numpy.load(mmap_mode='r')")
        del m
if bad:
    sys.exit("\n".join(bad[:20]))
print("python: %d files, %d .npy" % (len(open(listing).read().splitlines()), npys))
PYEOF
unmount
lap "python"

fresh m_file
(cd "$M" && file -b -f "$WORK/files") >"$WORK/file.mnt" || fail "file"
unmount
(cd "$WORK/ref" && file -b -f "$WORK/files") >"$WORK/file.ref"
cmp -s "$WORK/file.mnt" "$WORK/file.ref" || fail "file says other things: $(diff "$WORK/file.ref" "$WORK/file.mnt" | head -4)"
lap "file"

# ---- Unlisted files by name: exact sizes, mmap of .npy --------------------
# A sparse array too large to render whole at whole_max=1000: its
# renderings are not listed, yet by name stat gives each one's exact size
# (a counting pass, whatever the number of cells), and a .npy opened after
# that stat maps (numpy.load(mmap_mode="r"): the page cache, not direct
# I/O, which has no mmap).
big=$WORK/big
mkdir -p "$big"
cat >"$WORK/big.json" <<'JSON'
{"array_type": "sparse",
 "schema": {"dims": [{"name": "x", "type": "INT64", "domain": [0, 999999], "tile": 1000},
                     {"name": "y", "type": "INT64", "domain": [0, 999], "tile": 1000}],
            "attrs": [{"name": "v", "type": "FLOAT64", "cell_val_num": 1,
                       "nullable": false, "filters": ["ZSTD(level=1)"]}],
            "capacity": 10000, "allows_dups": false}}
JSON
"$TFS" create "$big/a" "$WORK/big.json" >/dev/null
awk 'BEGIN { print "x,y,v"; for (i = 0; i < 200000; i++) printf "%d,%d,%.3f\n", i * 3, i % 1000, i / 7.0 }' >"$WORK/big.csv"
"$TFS" ingest "$big/a" "$WORK/big.csv" >/dev/null
M=$WORK/m_big
mount_tilefs "$big" "$M" -o ro,whole_max=1000
! ls "$M/a/v" | grep -q 'slice' || fail "a sparse rendering of 200 000 cells is listed at whole_max=1000"
for f in 'v/slice[:].npy' 'v/slice[:].csv' 'slice[:].json' data.csv; do
  size=$(stat -c %s "$M/a/$f") || fail "stat of $f by name"
  [ "$size" -gt 0 ] || fail "$f by name: size 0"
  got=$(cat "$M/a/$f" | wc -c)
  [ "$size" = "$got" ] || fail "$f by name: stat says $size bytes, cat reads $got"
  cmp -s <(tail -c 100 "$M/a/$f") <(cat "$M/a/$f" | tail -c 100) || fail "$f: tail -c 100 differs"
done
"$PY" - "$M/a/v/slice[:].npy" <<'PYEOF' || fail "numpy.load(mmap_mode='r') of an unlisted .npy"
import sys
import numpy as np
p = sys.argv[1]
m = np.load(p, mmap_mode="r")
whole = np.load(p)
assert m.shape == (200000,), m.shape
assert (m == whole).all()
assert abs(float(m[-1]) - 199999 / 7.0) < 1e-3, m[-1]
print("mmap of an unlisted .npy: %d cells" % m.shape[0])
PYEOF
unmount

# A string first dimension: the same, on a fresh mount the .npy mapped
# first (its stat counts it and finds its index, the pages come from
# parts between marks), then tail -c of its text.
cat >"$WORK/strs.json" <<'JSON'
{"array_type": "sparse",
 "schema": {"dims": [{"name": "k", "type": "STRING_ASCII", "domain": null, "tile": null, "var": true},
                     {"name": "y", "type": "INT64", "domain": [0, 999], "tile": 1000}],
            "attrs": [{"name": "v", "type": "FLOAT64", "cell_val_num": 1,
                       "nullable": false, "filters": ["ZSTD(level=1)"]}],
            "capacity": 10000, "allows_dups": false}}
JSON
"$TFS" create "$big/s" "$WORK/strs.json" >/dev/null
awk 'BEGIN { print "k,y,v"; for (i = 0; i < 200000; i++) printf "key%06d,%d,%.3f\n", int(i / 20), i % 20, i / 7.0 }' >"$WORK/strs.csv"
"$TFS" ingest "$big/s" "$WORK/strs.csv" >/dev/null
mount_tilefs "$big" "$M" -o ro,whole_max=1000
"$PY" - "$M/s/v/slice[:,:].npy" <<'PYEOF' || fail "numpy.load(mmap_mode='r') of a sparse .npy of a string dimension"
import sys
import numpy as np
p = sys.argv[1]
m = np.load(p, mmap_mode="r")
assert m.shape == (200000,), m.shape
assert abs(float(m[-1]) - 199999 / 7.0) < 1e-3, m[-1]
assert abs(float(m[123456]) - 123456 / 7.0) < 1e-3, m[123456]
assert (m == np.load(p)).all()
print("mmap of a .npy of a string dimension: %d cells" % m.shape[0])
PYEOF
for f in 'v/slice[:,:].csv' data.csv; do
  tail -c 100 "$M/s/$f" >"$WORK/tail" || fail "tail -c 100 of s/$f"
  cmp -s "$WORK/tail" <(cat "$M/s/$f" | tail -c 100) || fail "s/$f: tail -c 100 differs"
  grep -q '^key009999,19,' "$WORK/tail" || fail "s/$f: the last cell is not at the end: $(cat "$WORK/tail")"
done
unmount
lap "unlisted by name"

# A text rendering of more cells than any cheap bound (2^26 + 5 cells of
# an array with nothing written, every cell the fill value): stat by name
# counts it whole, and the size is exactly that many lines of the fill
# value's text, as a small slice of the same array shows.
cat >"$WORK/fill.json" <<'JSON'
{"array_type": "dense", "attrs": [{"name": "a", "type": "INT32"}],
 "dims": [{"name": "d", "type": "INT64", "domain": [0, 1099511627775], "tile": 1048576}]}
JSON
mkdir -p "$WORK/fillsrc"
"$TFS" create "$WORK/fillsrc/fill" "$WORK/fill.json" >/dev/null
mount_tilefs "$WORK/fillsrc" "$M" -o ro
n=$(( (1 << 26) + 5 ))
line=$(cat "$M/fill/a/slice[0:1].txt")
[ -n "$line" ] || fail "fill/a/slice[0:1].txt is empty"
f="$M/fill/a/slice[0:$n].txt"
size=$(stat -c %s "$f") || fail "stat of $n cells by name"
[ "$size" = $(( n * (${#line} + 1) )) ] ||
  fail "$f by name: size $size, not $n lines of '$line'"
[ "$(tail -c $(( 2 * (${#line} + 1) )) "$f")" = "$line
$line" ] || fail "the last lines of $n cells by name"
unmount
lap "counted beyond 2^26 cells"

# ---- Duplicates: per-field files pair the same cells ------------------------
fresh m_dups
d=$M/sparse_dups
sel=$(cd "$d/a" && ls | sed -n 's/^\(slice\[.*\]\)\.csv$/\1/p')
[ -n "$sel" ] || fail "sparse_dups/a lists no .csv"
paste -d, "$d/a/$sel.csv" <(cut -d, -f3 "$d/s/$sel.csv") >"$WORK/paired"
cut -d, -f1,2 "$d/s/$sel.csv" | cmp -s - <(cut -d, -f1,2 "$d/a/$sel.csv") ||
  fail "a/ and s/ list coordinates in other orders"
cmp -s "$WORK/paired" "$d/$sel.csv" ||
  fail "a/$sel.csv and s/$sel.csv do not pair the cells of $sel.csv: $(diff "$WORK/paired" "$d/$sel.csv" | head -4)"
[ "$(sort -t, -k1,2 "$d/$sel.csv" | cut -d, -f1,2 | uniq -d | wc -l)" -gt 0 ] ||
  fail "sparse_dups shows no duplicates"
unmount
lap "duplicates"

# ---- Times and names ----------------------------------------------------------
fresh m_times
tt=$M/sparse_timetravel
newest=$(ls "$tt/versions" | tail -1)
[ "$(stat -c %Y "$tt")" = "$(date -u -d "$newest" +%s)" ] ||
  fail "sparse_timetravel/ has time $(stat -c %y "$tt"), not its newest fragment's $newest"
[ "$(stat -c %Y "$tt/data.csv")" = "$(stat -c %Y "$tt")" ] || fail "data.csv: other time than its array"
for v in $(ls "$tt/versions"); do
  [ "$(stat -c %Y "$tt/versions/$v")" = "$(date -u -d "$v" +%s)" ] || fail "versions/$v has time $(stat -c %y "$tt/versions/$v")"
done
ls "$M/dense_datetime_dim" | grep -q '^slice\[2022-01-13:2022-03-14\]\.csv$' ||
  fail "datetime dimension not named in ISO-8601: $(ls "$M/dense_datetime_dim" | grep slice | head -1)"
unmount
# ingest.log: the time of the array's newest fragment.
mkdir -p "$WORK/w"
cp -r "$src/demo_inventory" "$WORK/w/"
M=$WORK/m_write
mount_tilefs "$WORK/w" "$M"
printf 'shelf,slot,count,item\n3,3,1,kiwi\n' >"$WORK/w1.csv"
cp "$WORK/w1.csv" "$M/demo_inventory/" || fail "cp into demo_inventory"
[ -e "$M/demo_inventory/ingest.log" ] || fail "no ingest.log"
[ "$(stat -c %Y "$M/demo_inventory/ingest.log")" = "$(stat -c %Y "$M/demo_inventory")" ] &&
  [ "$(stat -c %Y "$M/demo_inventory")" -gt 86400 ] ||
  fail "ingest.log $(stat -c %y "$M/demo_inventory/ingest.log"), array $(stat -c %y "$M/demo_inventory")"
unmount
lap "times"

# ---- 300 fragments: find and cp -r stay proportional ------------------------
many=$WORK/many
mkdir -p "$many"
"$TFS" create "$many/inv" "$DEMO/inventory.json" >/dev/null
printf 'shelf,slot,count,item\n1,1,5,apple\n2,3,7,pear\n' >"$WORK/one.csv"
"$TFS" ingest "$many/inv" "$WORK/one.csv" >/dev/null
one=$(ls "$many/inv/__fragments")
ver=${one##*_}
# 299 more: copies of that fragment at earlier times, each committed.
"$PY" - "$many/inv" "$one" "$ver" <<'PYEOF'
import shutil, sys
arr, one, ver = sys.argv[1:]
for i in range(1, 300):
    t = 1700000000000 + i
    name = "__%d_%d_%032x_%s" % (t, t, i, ver)
    shutil.copytree("%s/__fragments/%s" % (arr, one), "%s/__fragments/%s" % (arr, name))
    open("%s/__commits/%s.wrt" % (arr, name), "w").close()
PYEOF
[ "$(ls "$many/inv/__fragments" | wc -l)" = 300 ] || fail "not 300 fragments"
M=$WORK/m_many
mount_tilefs "$many" "$M" -o ro
entries=$(find "$M/inv" | wc -l)
[ "$entries" -le 1000 ] || fail "find visits $entries entries for 300 fragments"
[ "$(ls "$M/inv/versions" | wc -l)" -ge 1 ] || fail "versions/ by name lists nothing"
cp -r "$M/inv" "$WORK/many_copy" || fail "cp -r of 300 fragments"
copied=$(du -sb "$WORK/many_copy" | cut -f1)
own=$(du -sb "$many/inv" | cut -f1)
[ "$copied" -le $((own * 4)) ] || fail "cp -r copied $copied bytes of an array of $own"
unmount
echo "300 fragments: find $entries entries, cp -r $copied bytes (array: $own)"
lap "300 fragments"
pass
