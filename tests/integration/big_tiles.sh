#!/usr/bin/env bash
# Tiles bigger than the memory budget are streamed, not refused: over an
# array of 32 MB tiles (4096 x 4096 FLOAT32, ZSTD, tiles of 2048 rows), a
# mount with cache=16M (a budget of 40 MB: each tile needs 52 MB to
# decode whole) serves raw, .csv and .npy slices with exactly the bytes
# `tfs export` writes, reading the tiles chunk by chunk; the daemon's
# resident set (VmRSS, sampled every 50 ms) stays within its baseline +
# cache + 64 MB, and nothing is refused.
source "$(dirname "$0")/lib/common.sh"

CACHE_MB=16
BENCH=$(dirname "$TFS")/tfs-bench-read
[ -x "$BENCH" ] || { echo "SKIP: no $BENCH"; exit 77; }
# Sanitizers' shadow memory is no measure of the daemon's: under one the
# reads must still give the right bytes, the RSS bound is not checked.
SANITIZED=0
if daemon_sanitized; then
  SANITIZED=1
  echo "the daemon runs under a sanitizer: the RSS bound is not checked"
fi

SRC=$WORK/src
mkdir -p "$SRC"
p=$("$BENCH" --dir "$WORK/gen" --rows 4096 --cols 4096 --tile-rows 2048 \
      --generate-only 2>&1 | sed -n 's/^array: //p')
[ -d "$p" ] || fail "tfs-bench-read made no array"
mv "$p" "$SRC/t2048"

rss_kb() {
  awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

# sample PID FILE: the highest RSS, every 50 ms, into FILE until the file
# $WORK/sampling goes.
sample() {
  local pid=$1 out=$2 peak=0 now
  while [ -e "$WORK/sampling" ]; do
    now=$(rss_kb "$pid" 2>/dev/null || echo 0)
    [ "${now:-0}" -gt "$peak" ] && peak=$now && echo "$peak" >"$out"
    sleep 0.05
  done
}

M=$WORK/mnt
mount_tilefs "$SRC" "$M" -o "cache=${CACHE_MB}M"
pid=${PIDS[-1]}
sleep 0.5
base=$(rss_kb "$pid")
echo 0 >"$WORK/peak"
touch "$WORK/sampling"
sample "$pid" "$WORK/peak" &
sampler=$!

# read SEL EXT FORMAT: the mount's slice against tfs export's.
read_slice() {
  local sel=$1 ext=$2 fmt=$3 name
  name="slice[$sel]$ext"
  cat "$M/t2048/v/$name" >"$WORK/got" || fail "cat $name"
  "$TFS" export "$SRC/t2048" "$sel" --field v --format "$fmt" \
    -o "$WORK/want" || fail "tfs export $sel $fmt"
  [ -s "$WORK/want" ] || fail "tfs export $sel $fmt: nothing"
  cmp -s "$WORK/got" "$WORK/want" ||
    fail "$name: $(stat -c %s "$WORK/got") bytes, not the $(stat -c %s "$WORK/want") of tfs export"
  echo "$name: $(stat -c %s "$WORK/got") bytes, as tfs export"
}

read_slice ":" "" raw
read_slice "0:10,:" ".csv" csv
read_slice "2000:2100,:" ".npy" npy
read_slice "100:3000,1000:1010" ".csv" csv

rm -f "$WORK/sampling"
wait "$sampler" || true
peak=$(cat "$WORK/peak")
limit_mb=$((CACHE_MB + 64))
echo "baseline $((base / 1024)) MB, peak RSS $((peak / 1024)) MB, bound $((base / 1024 + limit_mb)) MB"
if grep -q "memory budget" "$LOG"; then
  grep "memory budget" "$LOG" | head -3 >&2
  fail "a read was refused for lack of memory"
fi
[ "$SANITIZED" = 1 ] || [ "$peak" -le $((base + limit_mb * 1024)) ] ||
  fail "peak RSS $((peak / 1024)) MB over the bound of $((base / 1024 + limit_mb)) MB"
pass
