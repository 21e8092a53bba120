#!/usr/bin/env bash
# Text rendering speed through the mount: cat of .csv/.txt selections of
# the dense reference arrays and of the sparse array's data.csv, each on a
# fresh mount (no tile cache, no remembered sizes; the array files stay in
# the OS cache) and once more on the same mount, printed as MB/s and the
# daemon's CPU seconds, with the load average of the run.
#
#   tools/bench/bench_text.sh [--dir DIR] [--build BUILD] [--rows N]
#
# DIR holds dense_f32, dense_i32 and sparse_10m, as written by
# `../shared/reference/tiledb bench make DIR` (default /var/tmp/tfs-bench,
# made when missing). --rows: rows of the dense selections (default 2048
# of 8192). Prints one line per file: name, bytes, then seconds, MB/s and
# CPU seconds cold and again; the overall benchmark calls it and reads
# those lines. Needs root or a user allowed to mount FUSE.
set -euo pipefail
cd "$(dirname "$0")/../.."

dir=/var/tmp/tfs-bench
build=build-release
rows=2048
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "bench_text.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

tilefs=$build/fs/tilefs
[ -x "$tilefs" ] || { echo "bench_text.sh: build $tilefs first" >&2; exit 2; }
if [ ! -d "$dir/sparse_10m" ]; then
  ../shared/reference/tiledb bench make "$dir" >/dev/null
fi
mnt=$(mktemp -d)
daemon=
cleanup() {
  fusermount3 -u "$mnt" 2>/dev/null || true
  [ -n "$daemon" ] && wait "$daemon" 2>/dev/null || true
  rmdir "$mnt" 2>/dev/null || true
}
trap cleanup EXIT

mount_fresh() {
  if mountpoint -q "$mnt"; then
    fusermount3 -u "$mnt"
    wait "$daemon" 2>/dev/null || true
  fi
  "$tilefs" -f -o ro "$dir" "$mnt" >"$mnt.log" 2>&1 &
  daemon=$!
  for _ in $(seq 1 250); do mountpoint -q "$mnt" && return 0; sleep 0.02; done
  echo "bench_text.sh: tilefs did not mount (see $mnt.log)" >&2
  exit 1
}

# CPU time of the daemon so far, in clock ticks (user + system).
ticks() { awk '{ print $14 + $15 }' "/proc/$daemon/stat"; }

# one NAME PATH: cat of PATH on a fresh mount (the lookup's stat, which
# counts the file's size, included, as any reader pays it), then again on
# the same mount (size, index and tiles known: the rendering alone). Also
# the daemon's CPU seconds for each: on a loaded machine MB/s falls, CPU
# time much less.
one() {
  local t0 t1 t2 c0 c1 c2 bytes
  mount_fresh
  c0=$(ticks)
  t0=$(date +%s%N)
  bytes=$(cat "$mnt/$2" | wc -c)
  t1=$(date +%s%N)
  c1=$(ticks)
  cat "$mnt/$2" >/dev/null
  t2=$(date +%s%N)
  c2=$(ticks)
  awk -v n="$1" -v b="$bytes" -v ns=$((t1 - t0)) -v cpu=$((c1 - c0)) \
      -v ns2=$((t2 - t1)) -v cpu2=$((c2 - c1)) \
      -v hz="$(getconf CLK_TCK)" 'BEGIN {
    s = ns / 1e9; s2 = ns2 / 1e9
    printf "%-12s %11d bytes  cold %7.3f s %7.1f MB/s cpu %6.2f s", n, b, s, b / s / 1e6, cpu / hz
    printf "  again %7.3f s %7.1f MB/s cpu %6.2f s\n", s2, b / s2 / 1e6, cpu2 / hz }'
}

echo "# bench_text: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
one f32.csv "dense_f32/v/slice[0:$rows,:].csv"
one i32.csv "dense_i32/v/slice[0:$rows,:].csv"
one i32.txt "dense_i32/v/slice[0:$rows,:].txt"
one f32.txt "dense_f32/v/slice[0:$rows,:].txt"
one sparse.csv "sparse_10m/data.csv"
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
