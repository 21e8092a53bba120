#!/usr/bin/env bash
# Readers while the array is maintained: 6 readers read data.csv and
# slices of sparse_2d_int through two mounts of the same source while
# `tfs consolidate` and `tfs vacuum` (every mode, in turn) run on the
# array in the source folder, and CSV files that rewrite every cell are
# copied in through the first mount in between. The first mount renders
# every file whole at open; the second streams them in pieces
# (whole_max=0), so vacuums remove fragments under open streams, which
# must read on from the array opened again at their time. Consolidation
# and vacuum change no content, so every read must be byte for byte one of
# the versions the writes made; no read may fail, no maintenance run may
# fail, and no daemon may die or log an error. TFS_STRESS_SECONDS sets the
# duration (30 by default), TFS_STRESS_WHOLE_MAX the second mount's
# whole_max.
source "$(dirname "$0")/lib/common.sh"
: "${TFS:?TFS must name the tfs tool}"

SECS=${TFS_STRESS_SECONDS:-30}
src=$WORK/src
copy_corpus "$src" sparse_2d_int
chmod -R u+w "$src"
mkdir -p "$WORK/staging"
a=$src/sparse_2d_int

# Enough rewrites for a write every second or so.
rewrite_csvs "$WORK" 120


# Every file rendered whole when opened on the first mount, streamed on
# the second.
mount_tilefs "$src" "$WORK/mnt" -o staging="$WORK/staging",threads=2,cache=1M,whole_max=100000000
dpid=${PIDS[-1]}
LOG_WHOLE=$LOG
mount_tilefs "$src" "$WORK/smnt" -o ro,threads=2,cache=1M,whole_max=${TFS_STRESS_WHOLE_MAX:-0}
spid=${PIDS[-1]}
LOG_STREAM=$LOG
LOG=$LOG_WHOLE
m=$WORK/mnt/sparse_2d_int
sm=$WORK/smnt/sparse_2d_int
FILES=(data.csv "slice[10:60,20:70].csv" "a/slice[0:50].txt" "s/slice[:].csv")
# Streamed there (not rendered whole): not listed, open by name.
if [ "${TFS_STRESS_WHOLE_MAX:-0}" = 0 ]; then
  ! ls "$sm" | grep -qx data.csv || fail "data.csv is listed on the second mount though it streams"
fi
[ "$(stat -c %s "$sm/data.csv")" -gt 0 ] || fail "data.csv by name on the second mount: size 0"

# opening WHO: WHO starts reading now (milliseconds, in $WORK/open.WHO,
# written before the file is opened and removed once it is read).
now_ms() {
  local t=${EPOCHREALTIME/./}
  echo "${t:0:-3}"
}
opening() {
  now_ms >"$WORK/open.$1.tmp" && mv "$WORK/open.$1.tmp" "$WORK/open.$1"
}

# record: the bytes of every file now, as valid versions (after checking
# that data.csv is one whole write).
record() {
  local f
  opening main
  cat "$m/data.csv" >"$WORK/cur.csv" || fail "cat data.csv"
  [ "$(rewrite_state "$WORK/cur.csv")" = "$1" ] || fail "data.csv is not version $1"
  for f in "${FILES[@]}"; do
    echo "$f $(cat "$m/$f" | md5sum | cut -c1-32)" >>"$WORK/valid"
  done
  rm -f "$WORK/open.main"
}
record old

touch "$WORK/go"
# reader N MOUNT_DIR
reader() {
  local n=0 f h
  while [ -e "$WORK/go" ]; do
    for f in "${FILES[@]}"; do
      opening "$1"
      h=$(cat "$2/$f" | md5sum | cut -c1-32) ||
        { echo "reader $1: cat $2/$f failed" >&2; return 1; }
      rm -f "$WORK/open.$1"
      echo "$f $h" >>"$WORK/seen.$1"
    done
    n=$((n + 1))
  done
  echo "$n" >"$WORK/reads.$1"
}
pids=()
for r in 1 2 3 4 5 6; do
  if [ "$r" -le 3 ]; then reader "$r" "$m" & else reader "$r" "$sm" & fi
  pids+=($!)
done

# Consolidation and vacuum on the source, every mode in turn, all along.
# A stream open at a time a consolidation reaches past would (rightly)
# fail with EIO once the vacuum removed what it merged, when that
# consolidation holds no per-cell times (test_vacuum.c checks that case);
# so would one whose view lacks a write stamped before its time but
# committed after. A consolidation here therefore merges only fragments
# stamped 6 s before the oldest read still under way began and before
# every write that finished less than 5.5 s before that read or is still
# under way. The margins cover the view a read is served from: the one
# its name was last looked up in, which the kernel keeps for half a
# second from the lookup's answer, and a lookup that sizes a streamed
# file by its counting pass answers seconds after it opened the view
# under a sanitizer on a busy machine (a 2 s margin was seen to be too
# short there, and so was a fixed margin behind the present).
maintain() {
  local n=0 mode range end oldest f t w c
  while [ -e "$WORK/go" ]; do
    for mode in fragments fragment-meta commits array-meta; do
      range=()
      if [ "$mode" = fragments ]; then
        oldest=$(now_ms)
        for f in "$WORK"/open.*; do
          [ "${f%.tmp}" = "$f" ] || continue
          t=$(cat "$f" 2>/dev/null) || continue
          [ -z "$t" ] || [ "$t" -ge "$oldest" ] || oldest=$t
        done
        end=$oldest
        t=$(cat "$WORK/writing" 2>/dev/null) || t=
        [ -z "$t" ] || [ "$t" -ge "$end" ] || end=$t
        while read -r w c; do
          [ "$c" -le $((oldest - 5500)) ] || [ "$w" -ge "$end" ] || end=$w
        done < <(tail -n 20 "$WORK/wrote" 2>/dev/null)
        range=(--end $((end - 6000)))
      fi
      "$TFS" consolidate "$a" --mode "$mode" "${range[@]}" >/dev/null ||
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
  t=$(now_ms)
  echo "$t" >"$WORK/writing"
  cp "$WORK/k$k.csv" "$m/" || fail "write $k through the mount"
  echo "$t $(now_ms)" >>"$WORK/wrote"
  rm "$WORK/writing"
  record "$k"
  sleep 0.3
done
rm "$WORK/go"
for p in "${pids[@]}"; do
  wait "$p" || {
    echo "--- streaming daemon log ($LOG_STREAM) ---" >&2
    tail -n 20 "$LOG_STREAM" >&2
    fail "a reader failed while the array was maintained"
  }
done
wait "$mpid" || fail "maintenance failed"
kill -0 "$dpid" 2>/dev/null || fail "the daemon died"
kill -0 "$spid" 2>/dev/null || fail "the streaming daemon died"
record "$k"

total=0
for r in 1 2 3 4 5 6; do total=$((total + $(cat "$WORK/reads.$r"))); done
sort -u "$WORK/valid" >"$WORK/valid.u"
sort -u "$WORK"/seen.* >"$WORK/seen.u"
bad=$(comm -23 "$WORK/seen.u" "$WORK/valid.u")
[ -z "$bad" ] || fail "reads that are no version: $(echo "$bad" | head -5)"
! grep -i -e 'error' -e 'fail' "$LOG_WHOLE" || fail "the daemon logged errors"
! grep -i -e 'error' -e 'fail' "$LOG_STREAM" || { LOG=$LOG_STREAM; fail "the streaming daemon logged errors"; }
reopened=$(grep -c 'vacuumed while it was read' "$LOG_STREAM" || true)
echo "6 readers (3 whole, 3 streamed), $total rounds of ${#FILES[@]} files; $k writes; $(cat "$WORK/maint") consolidate/vacuum runs; $reopened streams read on after a vacuum; $(wc -l <"$WORK/seen.u") distinct reads, each one version"
pass
