#!/usr/bin/env bash
# Interruptible work: the counting pass that sizes an unlisted text file
# at its lookup (an open or stat by name) takes as long as the file is
# large, with no limit; the caller must still die at once on SIGKILL
# (FUSE interrupts honoured, no D state for the whole pass), the daemon
# must serve the next caller, and SIGTERM must unmount within about a
# second while such work is under way. The same holds for the whole
# rendering of a picture at its stat.
source "$(dirname "$0")/lib/common.sh"

SRC=$WORK/src
mkdir -p "$SRC"
# A dense array of 2^40 cells with nothing written: every cell is the
# fill value, so any text rendering of it takes as long as one wishes.
cat >"$WORK/huge.json" <<'EOF'
{"array_type": "dense", "attrs": [{"name": "a", "type": "INT32"}],
 "dims": [{"name": "d", "type": "INT64", "domain": [0, 1099511627775], "tile": 1048576}]}
EOF
"$TFS" create "$SRC/huge" "$WORK/huge.json" || fail "tfs create"
# 2^40 cells in two dimensions: a strided picture of it (8 Mpixels, one
# cell in every tile) takes tens of seconds to render whole.
cat >"$WORK/huge2.json" <<'EOF'
{"array_type": "dense", "attrs": [{"name": "a", "type": "INT32"}],
 "dims": [{"name": "y", "type": "INT64", "domain": [0, 1048575], "tile": 1024},
          {"name": "x", "type": "INT64", "domain": [0, 1048575], "tile": 1024}]}
EOF
"$TFS" create "$SRC/huge2" "$WORK/huge2.json" || fail "tfs create huge2"
copy_corpus "$SRC" dense_1d
mount_tilefs "$SRC" "$WORK/mnt" -o ro
m=$WORK/mnt
f="$m/huge/slice[0:1099511627775].csv"
[ -d "$m/huge" ] || fail "no $m/huge"

# far_reader FILE: opens FILE and preads 4 KiB at 2^40 (prints "done" if
# that returns); run in the background, its $! is the reader itself.
far_reader() {
  exec "$PY" -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.pread(fd, 4096, 1 << 40)
print("done")
' "$1"
}

# stat_reader FILE: stats FILE by name (prints "done" if that returns); its
# $! is the process itself.
stat_reader() {
  exec "$PY" -c '
import os, sys
os.stat(sys.argv[1])
print("done")
' "$1"
}

# gone_within PID SECONDS: whether PID has exited within SECONDS.
gone_within() {
  local pid=$1 t=$2 i
  for i in $(seq 1 $((t * 20))); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.05
  done
  return 1
}

# ---- SIGKILL of a reader whose open counts a file of 2^40 cells ---------------
# (new names each round: the kernel keeps what a lookup found).
for round in 1 2 3; do
  far_reader "$m/huge/slice[$round:1099511627775].csv" >"$WORK/out" 2>&1 &
  rp=$!
  sleep 1
  kill -0 "$rp" 2>/dev/null || fail "the far read ended by itself: $(cat "$WORK/out")"
  start=$(date +%s%N)
  kill -9 "$rp"
  gone_within "$rp" 2 || fail "a reader killed while its open counts still runs after 2 s (D state?)"
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  [ "$ms" -le 1200 ] || fail "a killed reader took $ms ms to go"
  wait "$rp" 2>/dev/null || true
  echo "round $round: killed reader gone in $ms ms"
done
grep -q "the counting pass was interrupted at cell" "$LOG" ||
  fail "no log line for the interrupted counting pass"
# The daemon serves on.
grep -q '^d,a,b$' "$m/dense_1d/data.csv" || fail "dense_1d after the interrupted reads"

# ---- SIGKILL of a stat mid-count and mid-picture ----------------------------
# kill_stat FILE WHAT: stats FILE in the background, kills it after a
# second, wants it gone within 2 s (one step of the work; the old daemon
# finished the whole pass first: 10 s to minutes).
kill_stat() {
  local file=$1 what=$2 sp start ms
  stat_reader "$file" >"$WORK/out" 2>&1 &
  sp=$!
  sleep 1
  kill -0 "$sp" 2>/dev/null || fail "the $what ended by itself: $(cat "$WORK/out")"
  start=$(date +%s%N)
  kill -9 "$sp"
  gone_within "$sp" 3 || fail "a stat killed during the $what still runs after 3 s"
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  [ "$ms" -le 2000 ] || fail "a stat killed during the $what took $ms ms to go"
  wait "$sp" 2>/dev/null || true
  echo "$what: killed stat gone in $ms ms"
}
# Unlisted streamed files of 2^40 cells: sized by a counting pass.
for round in 1 2; do
  kill_stat "$m/huge/a/slice[$round:1099511627775].json" "counting pass"
done
for round in 1 2; do
  kill_stat "$m/huge2/a/slice[$round:1048575:512,0:1048575:256].png" \
    "whole rendering"
done
grep -q "the whole rendering was interrupted at cell" "$LOG" ||
  fail "no log line for the interrupted whole rendering"
grep -q '^d,a,b$' "$m/dense_1d/data.csv" || fail "dense_1d after the interrupted stats"

# ---- SIGTERM while busy ------------------------------------------------------
# sigterm_busy PID WHAT: SIGTERM to the daemon while PID (a reader busy
# in it) runs: unmounted within 2 s (about 1 s), the reader let go.
sigterm_busy() {
  local rp=$1 what=$2 daemon=${PIDS[-1]} start ms
  sleep 1
  kill -0 "$rp" 2>/dev/null || fail "the $what ended by itself"
  start=$(date +%s%N)
  kill -TERM "$daemon"
  for _ in $(seq 1 40); do
    mountpoint -q "$m" || break
    sleep 0.05
  done
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  mountpoint -q "$m" && fail "still mounted $ms ms after SIGTERM during the $what"
  gone_within "$daemon" 2 || fail "the daemon still runs 2 s after SIGTERM"
  gone_within "$rp" 2 || fail "the reader still waits after the unmount"
  wait "$rp" 2>/dev/null || true
  echo "SIGTERM during the $what: unmounted in $ms ms"
}
stat_reader "$m/huge/a/slice[5:1099511627775].json" >"$WORK/out" 2>&1 &
sigterm_busy $! "counting pass"
mount_tilefs "$SRC" "$WORK/mnt" -o ro
stat_reader "$m/huge2/a/slice[7:1048575:512,0:1048575:256].png" >"$WORK/out" 2>&1 &
sigterm_busy $! "whole rendering"
mount_tilefs "$SRC" "$WORK/mnt" -o ro
far_reader "$f" >"$WORK/out" 2>&1 &
sigterm_busy $! "open of a huge file"
pass
