#!/usr/bin/env bash
# Readers while the array is maintained: 6 readers read data.csv and
# slices of sparse_2d_int through a mount while `tfs consolidate` and
# `tfs vacuum` (every mode, in turn) run on the same array in the source
# folder, and CSV files that rewrite every cell are copied in through the
# mount in between. Consolidation and vacuum change no content, so every
# read must be byte for byte one of the versions the writes made; no read
# may fail, no maintenance run may fail, and the daemon must neither die
# nor log an error. TFS_STRESS_SECONDS sets the duration (30 by default).
source "$(dirname "$0")/lib/common.sh"
: "${TFS:?TFS must name the tfs tool}"

SECS=${TFS_STRESS_SECONDS:-30}
src=$WORK/src
copy_corpus "$src" sparse_2d_int
chmod -R u+w "$src"
mkdir -p "$WORK/staging"
a=$src/sparse_2d_int

# kK.csv sets every one of the 100 x 100 cells to a = K (enough files
# for a write every second or so).
"$PY" - "$WORK" 120 <<'PYEOF'
import sys
work, n = sys.argv[1], int(sys.argv[2])
for k in range(1, n + 1):
    with open(f"{work}/k{k}.csv", "w") as out:
        out.write("x,y,a,s\n")
        for x in range(100):
            for y in range(100):
                out.write(f"{x},{y},{k},v{k}\n")
PYEOF

# The one value of a over the array, "old" before any full write, or
# "mixed".
state() {
  "$PY" - "$1" <<'PYEOF'
import sys
import pandas as pd
df = pd.read_csv(sys.argv[1], keep_default_na=False)
ks = set(df.a)
if len(df) == 10000 and len(ks) == 1 and set(df.s) == {f"v{min(ks)}"}:
    print(ks.pop())
elif len(df) != 10000:
    print("old")
else:
    print("mixed")
PYEOF
}

# whole_max: every file here is rendered whole when opened. A file
# streamed in pieces whose fragments a vacuum removes while it is read
# still gets EIO (a known limitation, in README "Robustness tests"); with
# the default whole_max this test shows it within seconds.
mount_tilefs "$src" "$WORK/mnt" -o staging="$WORK/staging",threads=2,cache=1M,whole_max=${TFS_STRESS_WHOLE_MAX:-100000000}
dpid=${PIDS[-1]}
m=$WORK/mnt/sparse_2d_int
FILES=(data.csv "slice[10:60,20:70].csv" "a/slice[0:50].txt" "s/slice[:].csv")

# record: the bytes of every file now, as valid versions (after checking
# that data.csv is one whole write).
record() {
  local f
  cat "$m/data.csv" >"$WORK/cur.csv" || fail "cat data.csv"
  [ "$(state "$WORK/cur.csv")" = "$1" ] || fail "data.csv is not version $1"
  for f in "${FILES[@]}"; do
    echo "$f $(cat "$m/$f" | md5sum | cut -c1-32)" >>"$WORK/valid"
  done
}
record old

touch "$WORK/go"
reader() {
  local n=0 f h
  while [ -e "$WORK/go" ]; do
    for f in "${FILES[@]}"; do
      h=$(cat "$m/$f" | md5sum | cut -c1-32) ||
        { echo "reader $1: cat $f failed" >&2; return 1; }
      echo "$f $h" >>"$WORK/seen.$1"
    done
    n=$((n + 1))
  done
  echo "$n" >"$WORK/reads.$1"
}
pids=()
for r in 1 2 3 4 5 6; do
  reader "$r" &
  pids+=($!)
done

# Consolidation and vacuum on the source, every mode in turn, all along.
maintain() {
  local n=0 mode
  while [ -e "$WORK/go" ]; do
    for mode in fragments fragment-meta commits array-meta; do
      "$TFS" consolidate "$a" --mode "$mode" >/dev/null ||
        { echo "consolidate --mode $mode failed" >&2; return 1; }
      "$TFS" vacuum "$a" --mode "$mode" >/dev/null ||
        { echo "vacuum --mode $mode failed" >&2; return 1; }
      n=$((n + 2))
    done
  done
  echo "$n" >"$WORK/maint"
}
maintain &
mpid=$!
# On a failure the loops stop before the common trap removes their files.
trap 's=$?; set +e; rm -f "$WORK/go"; wait "$mpid" "${pids[@]}" 2>/dev/null; (exit $s); cleanup' EXIT

end=$(( $(date +%s) + SECS ))
k=0
while [ "$(date +%s)" -lt "$end" ] && [ "$k" -lt 120 ]; do
  k=$((k + 1))
  cp "$WORK/k$k.csv" "$m/" || fail "write $k through the mount"
  record "$k"
  sleep 0.3
done
rm "$WORK/go"
for p in "${pids[@]}"; do wait "$p" || fail "a reader failed while the array was maintained"; done
wait "$mpid" || fail "maintenance failed"
kill -0 "$dpid" 2>/dev/null || fail "the daemon died"
record "$k"

total=0
for r in 1 2 3 4 5 6; do total=$((total + $(cat "$WORK/reads.$r"))); done
sort -u "$WORK/valid" >"$WORK/valid.u"
sort -u "$WORK"/seen.* >"$WORK/seen.u"
bad=$(comm -23 "$WORK/seen.u" "$WORK/valid.u")
[ -z "$bad" ] || fail "reads that are no version: $(echo "$bad" | head -5)"
! grep -i -e 'error' -e 'fail' "$LOG" || fail "the daemon logged errors"
echo "6 readers, $total rounds of ${#FILES[@]} files; $k writes; $(cat "$WORK/maint") consolidate/vacuum runs; $(wc -l <"$WORK/seen.u") distinct reads, each one version"
pass
