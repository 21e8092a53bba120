#!/usr/bin/env bash
# Interruptible reads: a pread far into a streamed text file makes the
# daemon render everything before the offset; the reader must still die
# at once on SIGKILL (FUSE interrupts honoured, no D state for the whole
# rendering), the daemon must serve the next reader, and SIGTERM must
# unmount within about a second while a rendering is under way.
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
copy_corpus "$SRC" dense_1d
mount_tilefs "$SRC" "$WORK/mnt" -o ro
m=$WORK/mnt
f="$m/huge/slice[0:1099511627775].csv"
[ -e "$f" ] || fail "no $f"

# far_reader FILE: preads 4 KiB at 2^40 (prints "done" if that returns);
# run in the background, its $! is the reader itself.
far_reader() {
  exec "$PY" -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.pread(fd, 4096, 1 << 40)
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

# ---- SIGKILL of a reader mid-render --------------------------------------------
for round in 1 2 3; do
  far_reader "$f" >"$WORK/out" 2>&1 &
  rp=$!
  sleep 1
  kill -0 "$rp" 2>/dev/null || fail "the far read ended by itself: $(cat "$WORK/out")"
  start=$(date +%s%N)
  kill -9 "$rp"
  gone_within "$rp" 2 || fail "a reader killed mid-render still runs after 2 s (D state?)"
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  [ "$ms" -le 1200 ] || fail "a killed reader took $ms ms to go"
  wait "$rp" 2>/dev/null || true
  echo "round $round: killed reader gone in $ms ms"
done
grep -q "was interrupted at offset" "$LOG" || fail "no log line for the interrupted read"
# The daemon serves on.
grep -q '^d,a,b$' "$m/dense_1d/data.csv" || fail "dense_1d after the interrupted reads"

# ---- SIGTERM while busy ------------------------------------------------------
daemon=${PIDS[-1]}
far_reader "$f" >"$WORK/out" 2>&1 &
rp=$!
sleep 1
kill -0 "$rp" 2>/dev/null || fail "the far read ended by itself"
start=$(date +%s%N)
kill -TERM "$daemon"
for _ in $(seq 1 40); do
  mountpoint -q "$m" || break
  sleep 0.05
done
ms=$(( ($(date +%s%N) - start) / 1000000 ))
mountpoint -q "$m" && fail "still mounted $ms ms after SIGTERM while busy"
gone_within "$daemon" 2 || fail "the daemon still runs 2 s after SIGTERM"
gone_within "$rp" 2 || fail "the reader still waits after the unmount"
wait "$rp" 2>/dev/null || true
echo "SIGTERM while busy: unmounted in $ms ms"
pass
