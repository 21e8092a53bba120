#!/usr/bin/env bash
# Time: a fragment committed while mounted shows up within a second; a file
# open before keeps reading its version; versions/<t>/ and timestamp=
# show the array as of t, equal to the corpus JSON opened at t.
source "$(dirname "$0")/lib/common.sh"

src=$WORK/src
copy_corpus "$src" sparse_timetravel dense_fragments_overlap
# Hold back the fragments after t = 1700000001000 (folders and commits).
mkdir "$WORK/later"
for f in "$src"/sparse_timetravel/__fragments/__170000000[23]000_*; do
  mv "$f" "$WORK/later/"
done
mkdir "$WORK/later_commits"
mv "$src"/sparse_timetravel/__commits/__170000000[23]000_* "$WORK/later_commits/"

mount_tilefs "$src" "$WORK/mnt"
m=$WORK/mnt/sparse_timetravel
cat "$m/data.csv" >"$WORK/before.csv"
"$PY" "$HERE/check_csv.py" "$WORK/before.csv" "$CORPUS/sparse_timetravel@1700000001000.json" ||
  fail "before the commit: not the array at t=1700000001000"

# A reader that opens data.csv now and reads the rest after the commit.
"$PY" - "$m/data.csv" "$WORK" <<'PYEOF' &
import os, sys, time
path, work = sys.argv[1:]
with open(path, "rb") as f:
    head = f.read(5)
    open(work + "/opened", "w").close()
    deadline = time.time() + 60
    while not os.path.exists(work + "/go") and time.time() < deadline:
        time.sleep(0.02)
    rest = f.read()
open(work + "/held.csv", "wb").write(head + rest)
PYEOF
reader=$!
PIDS+=("$reader")
for _ in $(seq 1 200); do [ -e "$WORK/opened" ] && break; sleep 0.02; done

# Commit: fragment folders first, the commit files last (as TileDB does).
mv "$WORK"/later/* "$src/sparse_timetravel/__fragments/"
mv "$WORK"/later_commits/* "$src/sparse_timetravel/__commits/"
committed=$(date +%s%N)
# Both commits are in when data.csv is the whole array (an intermediate
# version with one of the two may show for a moment).
seen=0
while [ $(( ($(date +%s%N) - committed) / 1000000 )) -lt 1500 ]; do
  cat "$m/data.csv" >"$WORK/after.csv"
  if "$PY" "$HERE/check_csv.py" "$WORK/after.csv" "$CORPUS/sparse_timetravel.json" >/dev/null; then
    seen=$(( ($(date +%s%N) - committed) / 1000000 ))
    break
  fi
  sleep 0.05
done
[ "$seen" -gt 0 ] || {
  "$PY" "$HERE/check_csv.py" "$WORK/after.csv" "$CORPUS/sparse_timetravel.json"
  fail "the new fragments did not show up within 1.5 s (0.5 s re-check + 0.5 s kernel cache)"
}
echo "new fragments visible after ${seen} ms"

touch "$WORK/go"
wait "$reader" || fail "the open reader failed"
cmp -s "$WORK/held.csv" "$WORK/before.csv" || fail "an open file changed version"

# versions/: one folder per fragment end time; each is the array as then.
ls "$m/versions" >"$WORK/versions"
[ "$(wc -l <"$WORK/versions")" = 3 ] || fail "versions: $(cat "$WORK/versions")"
grep -qx '2023-11-14T22:13:21.000Z' "$WORK/versions" || fail "versions: no 22:13:21"
cat "$m/versions/2023-11-14T22:13:21.000Z/data.csv" >"$WORK/v.csv"
"$PY" "$HERE/check_csv.py" "$WORK/v.csv" "$CORPUS/sparse_timetravel@1700000001000.json" ||
  fail "versions/2023-11-14T22:13:21.000Z differs"
cat "$m/versions/1700000001000/data.csv" >"$WORK/v2.csv"
cmp -s "$WORK/v.csv" "$WORK/v2.csv" || fail "versions/<ms> differs from versions/<ISO>"
[ ! -e "$m/versions/2023-11-14T22:13:21.000Z/versions" ] || fail "a version has versions/"
d=$WORK/mnt/dense_fragments_overlap
cat "$d/versions/2023-11-14T22:13:22.000Z/data.csv" >"$WORK/d.csv"
"$PY" "$HERE/check_csv.py" "$WORK/d.csv" "$CORPUS/dense_fragments_overlap@1700000002000.json" ||
  fail "dense version differs"

# timestamp= shows every array as of then.
mount_tilefs "$src" "$WORK/then" -o timestamp=2023-11-14T22:13:22Z
cat "$WORK/then/dense_fragments_overlap/data.csv" >"$WORK/t.csv"
"$PY" "$HERE/check_csv.py" "$WORK/t.csv" "$CORPUS/dense_fragments_overlap@1700000002000.json" ||
  fail "timestamp= differs"
pass
