#!/usr/bin/env bash
# The filesystem benchmark: what the mount costs over the engine, and over
# the FUSE limit of this machine, measured in one run on the same arrays.
#
#   tools/bench/bench_fuse.sh [--dir DIR] [--build BUILD] [--quick]
#
#  1. cat of a large raw attribute (16384 x 16384 FLOAT32, 1.07 GB decoded)
#     through the mount, against the engine's in-process read of the same
#     cells (tfs-bench-read --full-only) and against cat of a plain file of
#     the same decoded bytes through libfuse's passthrough_ll example;
#  2. time to first byte of a small slice of a 10 000-tile array, on a
#     fresh mount (the array's opening included) and warm;
#  3. ls -l of an array with 1 000 fragments, on a fresh mount;
#  4. the daemon's peak memory (VmHWM) while streaming 4.3 GB (32768 x
#     32768 FLOAT32) with cache=256M: the bound is cache + 64 MB.
# --quick uses a 1.07 GB array for 4. Arrays are generated once in DIR
# (default /var/tmp/tilefs-bench; several GB) and reused. Needs root or a
# user allowed to mount FUSE.
set -euo pipefail
cd "$(dirname "$0")/../.."

dir=/var/tmp/tilefs-bench
build=build-release
quick=0
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "bench_fuse.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" --target tilefs_daemon tfs-bench-read >/dev/null
tilefs=$build/fs/tilefs
gen=$build/tools/tfs-bench-read
mkdir -p "$dir/arrays" "$dir/mnt" "$dir/mnt2" "$dir/plain"
arrays=$dir/arrays
mounted=()
daemon=
cleanup() {
  for m in "${mounted[@]}"; do fusermount3 -u "$m" 2>/dev/null || true; done
}
trap cleanup EXIT

now_ns() { date +%s%N; }
ms_since() { echo $(( ($(now_ns) - $1) / 1000000 )); }

# mount_fresh OPTIONS: (re)mounts the arrays on $dir/mnt; sets $daemon.
mount_fresh() {
  fusermount3 -u "$dir/mnt" 2>/dev/null || true
  "$tilefs" -f -o "$1" "$arrays" "$dir/mnt" >"$dir/tilefs.log" 2>&1 &
  daemon=$!
  mounted+=("$dir/mnt")
  for _ in $(seq 1 200); do mountpoint -q "$dir/mnt" && return 0; sleep 0.02; done
  echo "bench_fuse.sh: tilefs did not mount" >&2
  exit 1
}

# seconds of one `cat FILE > /dev/null`
cat_seconds() {
  local t0
  t0=$(now_ns)
  cat "$1" >/dev/null
  awk -v ns=$(( $(now_ns) - t0 )) 'BEGIN { printf "%.3f", ns / 1e9 }'
}

echo "== generating (once) in $arrays"
"$gen" --dir "$arrays" --generate-only >/dev/null 2>&1
"$gen" --dir "$arrays" --rows 20000 --cols 200 --tile-rows 2 --generate-only >/dev/null 2>&1
"$gen" --dir "$arrays" --rows 200 --cols 200 --tile-rows 200 --generate-only >/dev/null 2>&1
if [ "$quick" = 1 ]; then
  big=dense_f32_16384x16384_t64 big_rows=16384
else
  "$gen" --dir "$arrays" --rows 32768 --cols 32768 --tile-rows 32 --generate-only >/dev/null 2>&1
  big=dense_f32_32768x32768_t32 big_rows=32768
fi
large=dense_f32_16384x16384_t64
raw="v/slice[0:16384,0:16384]"

# An array of 1000 fragments: the small array's fragment, copied with
# other timestamps and names, each with its commit file.
many=$arrays/many_fragments_1000
if [ ! -d "$many/__commits" ] || [ "$(ls "$many/__commits" | wc -l)" -ne 1000 ]; then
  rm -rf "$many"
  cp -r "$arrays/dense_f32_200x200_t200" "$many"
  frag=$(ls "$many/__fragments")
  rm -f "$many"/__commits/*
  for i in $(seq 1 1000); do
    t=$((1700000000000 + i))
    uuid=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    name=__${t}_${t}_${uuid}_${frag##*_}
    cp -r "$many/__fragments/$frag" "$many/__fragments/$name"
    : >"$many/__commits/$name.wrt"
  done
  rm -rf "$many/__fragments/$frag"
fi

echo "== 1. cat of $large/$raw (1.07 GB decoded)"
engine=$("$gen" --dir "$arrays" --full-only | awk -v n="$(nproc)" '$1 == "full" && $3 == n { print $4 }')
fuse_runs=()
for _ in 1 2 3; do
  mount_fresh cache=256M
  fuse_runs+=("$(cat_seconds "$dir/mnt/$large/$raw")")
done
fuse=$(printf '%s\n' "${fuse_runs[@]}" | sort -n | head -1)
if [ ! -s "$dir/plain/v.raw" ]; then
  cat "$dir/mnt/$large/$raw" >"$dir/plain/v.raw"
fi
fusermount3 -u "$dir/mnt"
# libfuse's passthrough_ll, built from the example Debian ships.
if [ ! -x "$dir/passthrough_ll" ]; then
  cp -r /usr/share/doc/libfuse3-dev/examples "$dir/pt-src"
  gcc -O2 -o "$dir/passthrough_ll" "$dir/pt-src/passthrough_ll.c" \
    $(pkg-config fuse3 --cflags --libs)
fi
cat "$dir/plain/v.raw" >/dev/null # warm, as the array files are
pt_runs=()
for _ in 1 2 3; do
  "$dir/passthrough_ll" -o source="$dir/plain" -f "$dir/mnt2" &
  mounted+=("$dir/mnt2")
  for _ in $(seq 1 200); do mountpoint -q "$dir/mnt2" && break; sleep 0.02; done
  pt_runs+=("$(cat_seconds "$dir/mnt2/v.raw")")
  fusermount3 -u "$dir/mnt2"
  wait
done
pt=$(printf '%s\n' "${pt_runs[@]}" | sort -n | head -1)

echo "== 2. time to first byte, 10 000-tile array"
mount_fresh cache=256M
t0=$(now_ns)
head -c 1 "$dir/mnt/dense_f32_20000x200_t2/v/slice[10000:10010,100:110]" >/dev/null
ttfb_cold=$(ms_since "$t0")
warm=()
for i in 1 2 3 4 5 6 7 8 9; do
  t0=$(now_ns)
  head -c 1 "$dir/mnt/dense_f32_20000x200_t2/v/slice[$((i * 1500)):$((i * 1500 + 10)),0:10]" >/dev/null
  warm+=("$(( ($(now_ns) - t0) / 1000 ))")
done
ttfb_warm=$(printf '%s\n' "${warm[@]}" | sort -n | sed -n 5p)

echo "== 3. ls -l of an array with 1000 fragments"
mount_fresh cache=256M
t0=$(now_ns)
ls -l "$dir/mnt/many_fragments_1000" >/dev/null
ls_cold=$(ms_since "$t0")
t0=$(now_ns)
ls -l "$dir/mnt/many_fragments_1000/versions" | tail -1 >/dev/null
ls_versions=$(ms_since "$t0")

echo "== 4. peak memory streaming $big with cache=256M"
mount_fresh cache=256M
t0=$(now_ns)
cat "$dir/mnt/$big/v/slice[0:$big_rows,0:$big_rows]" >/dev/null
stream_s=$(awk -v ns=$(( $(now_ns) - t0 )) 'BEGIN { printf "%.2f", ns / 1e9 }')
hwm_kb=$(awk '/VmHWM/ { print $2 }' "/proc/$daemon/status")
bytes=$((big_rows * big_rows * 4))

gb=1.073741824
echo
echo "tilefs FUSE benchmark ($(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)), one run"
awk -v e="$engine" -v f="$fuse" -v p="$pt" -v gb="$gb" 'BEGIN {
  printf "cat raw attribute, 1.07 GB: engine in-process %.3f s (%.2f GB/s), mount %.3f s (%.2f GB/s), passthrough_ll %.3f s (%.2f GB/s)\n", e, gb / e, f, gb / f, p, gb / p
  printf "  mount / engine throughput:       %.2f (target >= 0.8)\n", e / f
  printf "  mount / passthrough_ll:          %.2f\n", p / f
}'
echo "time to first byte of a 10x10 slice, 10 000 tiles: fresh mount ${ttfb_cold} ms, warm median $((ttfb_warm / 1000)).$(printf '%03d' $((ttfb_warm % 1000))) ms"
echo "ls -l of an array with 1000 fragments: ${ls_cold} ms fresh; ls -l versions/: ${ls_versions} ms"
awk -v kb="$hwm_kb" -v s="$stream_s" -v b="$bytes" 'BEGIN {
  printf "streaming %.2f GB at cache=256M: %.2f s (%.2f GB/s), daemon peak RSS %.0f MB (bound 320 MB): %s\n", b / 1e9, s, b / 1e9 / s, kb / 1024, kb / 1024 <= 320 ? "ok" : "OVER"
}'
