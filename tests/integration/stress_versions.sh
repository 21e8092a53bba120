#!/usr/bin/env bash
# Readers while fragments arrive: the fragments of dense_fragments_overlap
# are committed one by one (folder first, commit file last, as TileDB
# does) while 8 readers read its files and listings in a loop, so the
# daemon reopens the array under their feet. No read may fail; a file
# open before a commit keeps reading the version it opened; at the end
# the array reads as the corpus says. Run under ThreadSanitizer by
# scripts/test.sh.
source "$(dirname "$0")/lib/common.sh"

a=dense_fragments_overlap
src=$WORK/src
mkdir -p "$src/$a/__fragments" "$src/$a/__commits"
cp -r "$CORPUS/$a/__schema" "$src/$a/"
mapfile -t frags < <(ls "$CORPUS/$a/__fragments" | sort)
commit() {
  cp -r "$CORPUS/$a/__fragments/$1" "$src/$a/__fragments/"
  cp "$CORPUS/$a/__commits/$1.wrt" "$src/$a/__commits/"
}
commit "${frags[0]}"
mount_tilefs "$src" "$WORK/mnt" -o ro,threads=3,cache=1M
m=$WORK/mnt/$a
[ -s "$m/data.csv" ] || fail "no data.csv with one fragment"

touch "$WORK/go"
reader() {
  local n=0
  while [ -e "$WORK/go" ]; do
    for f in data.csv "a/slice[1:13,1:13].txt" "slice[2:9,3:12].json" \
             "s/slice[:].csv" schema.json; do
      cat "$m/$f" >/dev/null || { echo "reader $1: cat $f failed"; return 1; }
    done
    ls "$m/fragments" "$m/versions" >/dev/null || { echo "reader $1: ls failed"; return 1; }
    n=$((n + 1))
  done
  echo "$n" >"$WORK/reads.$1"
}
pids=()
for r in 1 2 3 4 5 6 7 8; do
  reader "$r" &
  pids+=($!)
done

# An open file keeps its version across a commit.
"$PY" - "$m/data.csv" "$WORK/before" <<'PYEOF' &
import sys, time
f = open(sys.argv[1], "rb")
head = f.read(64)
open(sys.argv[2] + ".go", "w").close()   # the commit may come now
time.sleep(2.5)
open(sys.argv[2], "wb").write(head + f.read())
PYEOF
held=$!
snapshot=$(cat "$m/data.csv")
while [ ! -e "$WORK/before.go" ]; do sleep 0.05; done
for f in "${frags[@]:1}"; do
  commit "$f"
  sleep 0.8
done
wait "$held" || fail "the held reader failed"
[ "$(cat "$WORK/before")" = "$snapshot" ] ||
  fail "a file open across commits changed its bytes"
rm "$WORK/go"
for p in "${pids[@]}"; do wait "$p" || fail "a reader failed while fragments arrived"; done
total=0
for r in 1 2 3 4 5 6 7 8; do total=$((total + $(cat "$WORK/reads.$r"))); done
echo "8 readers, $total rounds while ${#frags[@]} fragments arrived"
sleep 1
cat "$m/data.csv" >"$WORK/final.csv" || fail "final read"
"$PY" "$HERE/check_csv.py" "$WORK/final.csv" "$CORPUS/$a.json" ||
  fail "after every commit the array differs from the corpus"
[ "$(ls "$m/fragments" | wc -l)" = "${#frags[@]}" ] || fail "fragments/ does not list all"
pass
