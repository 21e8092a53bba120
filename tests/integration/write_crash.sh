#!/usr/bin/env bash
# Crashes during writes (SPEC §6): the daemon is SIGKILLed at a random
# moment while a CSV file that rewrites every cell of an array is being
# copied in; after a remount the array is always either what it was or
# that plus the whole new fragment, never a mix. TFS_CRASH_ITERATIONS sets
# the number of crashes (60 by default, for CI); TFS_CRASH_SECONDS stops
# earlier (120 by default, after 10 crashes at least) so that a sanitizer
# build stays within CTest's timeout.
source "$(dirname "$0")/lib/common.sh"

ITER=${TFS_CRASH_ITERATIONS:-60}
SECS=${TFS_CRASH_SECONDS:-120}
SRC=$WORK/src
copy_corpus "$SRC" sparse_2d_int
chmod -R u+w "$SRC"
mkdir -p "$WORK/staging"

rewrite_csvs "$WORK" "$((ITER + 1))"

m=$WORK/mnt
# One clean write first, timed: the kills fall within 1.5 times it, so
# that some land before the commit and some after, on any machine.
mount_tilefs "$SRC" "$m" -o staging="$WORK/staging"
t0=$(date +%s%N)
cp "$WORK/k1.csv" "$m/sparse_2d_int/" || fail "timed write"
window=$(( ($(date +%s%N) - t0) / 1000000 * 3 / 2 + 20 ))
fusermount3 -u "$m" || fail "unmount"
last=1
landed=0
crashes=0
end=$(( $(date +%s) + SECS ))
for i in $(seq 2 "$ITER"); do
  [ "$crashes" -ge 10 ] && [ "$(date +%s)" -ge "$end" ] && break
  crashes=$((crashes + 1))
  mount_tilefs "$SRC" "$m" -o staging="$WORK/staging"
  pid=${PIDS[-1]}
  cp "$WORK/k$i.csv" "$m/sparse_2d_int/" 2>/dev/null &
  cpid=$!
  # A random moment before, during or after the copy and its commit.
  ms=$(( RANDOM % window ))
  sleep "$(printf '%d.%03d' $(( ms / 1000 )) $(( ms % 1000 )))"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  wait "$cpid" 2>/dev/null || true
  fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || true
  mount_tilefs "$SRC" "$m" -o ro
  now=$(rewrite_state "$m/sparse_2d_int/data.csv") || fail "iteration $i: cannot read the array"
  fusermount3 -u "$m" || fail "unmount"
  case "$now" in
    "$last") ;;
    "$i") last=$i; landed=$((landed + 1)) ;;
    *) fail "iteration $i: array shows '$now', want '$last' or '$i'" ;;
  esac
done
echo "$crashes crashes within ${window} ms: array always old or old + whole fragment ($landed writes landed)"

# Uncommitted fragment folders: each fragment folder without its commit.
uncommitted() {
  local a=$1 n=0 f
  for f in "$a"/__fragments/*; do
    [ -e "$a/__commits/$(basename "$f").wrt" ] || n=$((n + 1))
  done
  echo "$n"
}
left=$(uncommitted "$SRC/sparse_2d_int")
echo "$left uncommitted fragment folders left by the crashes"

# The mount cleans them up (grace 0 here), and a clean write after the
# crashes still works and is seen.
mount_tilefs "$SRC" "$m" -o staging="$WORK/staging",cleanup_grace=0
for _ in $(seq 1 100); do
  [ "$(uncommitted "$SRC/sparse_2d_int")" -eq 0 ] && break
  sleep 0.05
done
[ "$(uncommitted "$SRC/sparse_2d_int")" -eq 0 ] || fail "leftovers not cleaned up"
[ "$left" -eq 0 ] || grep -q 'leftover' "$LOG" || fail "cleanup not logged"
fin=$((ITER + 1))
cp "$WORK/k$fin.csv" "$m/sparse_2d_int/" || fail "write after the crashes"
[ "$(rewrite_state "$m/sparse_2d_int/data.csv")" = "$fin" ] || fail "write after the crashes not seen"
empty_soon "$WORK/staging" || fail "orphaned staged files kept: $(ls -A "$WORK/staging")"
pass
