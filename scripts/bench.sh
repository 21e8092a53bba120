#!/usr/bin/env bash
# The speed benchmark: every goal of the speed campaign in one run, on the
# reference arrays (`../shared/reference/tiledb bench make`), each figure
# as a ratio against TileDB 2.29.2 (`tiledb bench read`) where TileDB does
# the same work, against the goal, and against the FUSE limit of this
# machine (tfs-fuse-limit: an in-memory file served through low-level FUSE
# with tilefs's mount options). Where a ratio falls short it records the
# daemon with `perf record -g` while the read runs again and prints the
# top symbols.
#
#   scripts/bench.sh [--dir DIR] [--build BUILD] [--repeat N] [--no-perf]
#                    [--only LIST]
#
# DIR (default /var/tmp/tfs-bench) holds the reference arrays (made when
# missing); DIR-run, beside it (never inside: a daemon must not see its
# own mount in its source), the mount points, the profiles and, made once
# and reused, an array of 1000 fragments and a folder of 10 000 small
# arrays. Every tilefs read is `cat`
# through a fresh mount (no page cache, no tile cache), the array files in
# the OS cache for both tilefs and TileDB; each figure is the best of N
# runs (default 3), tilefs and TileDB back to back. --only takes a comma
# list of: raw, sparse, text, ingest, list, limit. Needs root or a user
# allowed to mount FUSE.
set -euo pipefail
cd "$(dirname "$0")/.."

args="$*"
dir=/var/tmp/tfs-bench
build=build-release
repeat=3
perf_on=1
only=raw,sparse,text,ingest,list,limit
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --no-perf) perf_on=0; shift ;;
    --only) only=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
want() { case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

tiledb=../shared/reference/tiledb
[ -x "$tiledb" ] || { echo "bench.sh: $tiledb not found" >&2; exit 1; }
command -v perf >/dev/null || perf_on=0

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" --target tilefs_daemon tfs-fuse-limit \
  tfs-bench-ingest tfs-bench-read >/dev/null
tilefs=$build/fs/tilefs
limit_bin=$build/tools/tfs-fuse-limit
cache_mb=256
dir=${dir%/}
run=$dir-run
mnt=$run/mnt
mkdir -p "$dir" "$mnt" "$run/mnt-limit" "$run/perf"
for a in dense_f32 dense_i32 sparse_10m; do
  if [ ! -d "$dir/$a/__schema" ]; then
    echo "== making the reference arrays in $dir (tiledb bench make)"
    rm -rf "$dir/dense_f32" "$dir/dense_i32" "$dir/sparse_10m"
    "$tiledb" bench make "$dir" >/dev/null
    break
  fi
done

daemon=
limit_pid=
: >"$run/peaks"
cleanup() {
  fusermount3 -u "$mnt" 2>/dev/null || true
  fusermount3 -u "$run/mnt-limit" 2>/dev/null || true
}
trap cleanup EXIT

now_ns() { date +%s%N; }
secs() { awk -v ns="$1" 'BEGIN { printf "%.3f", ns / 1e9 }'; }
best() { sort -g | head -1; }
warm_files() { find "$@" -type f -exec cat {} + >/dev/null 2>&1 || true; }

# Remembers the daemon's peak RSS (kB) before it goes, in $run/peaks
# (reads run in subshells).
note_peak() {
  [ -n "$daemon" ] || return 0
  awk -v what="${reading:-listings}" '/VmHWM/ { print $2, what }' \
    "/proc/$daemon/status" 2>/dev/null >>"$run/peaks" || true
}

unmount() {
  note_peak
  if timeout 5 mountpoint -q "$mnt"; then fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt"; fi
  if [ -n "$daemon" ]; then wait "$daemon" 2>/dev/null || true; fi
  daemon=
}

# mount_fresh SOURCE: tilefs on $mnt, page cache of the mount empty.
mount_fresh() {
  unmount
  "$tilefs" -f -o "cache=${cache_mb}M" "$1" "$mnt" >"$run/tilefs.log" 2>&1 &
  daemon=$!
  for _ in $(seq 1 500); do timeout 5 mountpoint -q "$mnt" && return 0; sleep 0.01; done
  echo "bench.sh: tilefs did not mount $1" >&2
  exit 1
}

# cat_time PATH: seconds of `cat PATH >/dev/null`; the bytes read go to
# $run/last_bytes (the size after the read, counted untimed if unknown).
cat_time() {
  local t0 t1 n
  t0=$(now_ns)
  cat "$1" >/dev/null
  t1=$(now_ns)
  n=$(stat -L -c %s "$1")
  [ "$n" -gt 0 ] || n=$(wc -c <"$1")
  echo "$n" >"$run/last_bytes"
  secs $((t1 - t0))
}

# tilefs_best FILE (relative to the mount): best of $repeat fresh mounts
# of $dir.
tilefs_best() {
  local runs=()
  reading=$1
  for _ in $(seq 1 "$repeat"); do
    mount_fresh "$dir"
    runs+=("$(cat_time "$mnt/$1")")
  done
  unmount
  printf '%s\n' "${runs[@]}" | best
}

# tiledb_best ARGS...: best seconds of `tiledb bench read ARGS --repeat N`.
tiledb_best() {
  "$tiledb" bench read "$@" --repeat "$repeat" |
    sed -n 's/.*seconds=\([0-9.]*\).*/\1/p' | best
}

# perf_top FILE: records the daemon of a fresh mount while FILE is read
# and prints its top symbols.
perf_top() {
  local data=$run/perf/$(echo "$1" | tr -c 'A-Za-z0-9_\n' '_').data
  [ "$perf_on" = 1 ] || return 0
  reading=$1
  mount_fresh "$dir"
  perf record -q -g -p "$daemon" -o "$data" 2>/dev/null &
  local rec=$!
  sleep 0.3
  cat "$mnt/$1" >/dev/null
  kill -INT "$rec" 2>/dev/null || true
  wait "$rec" 2>/dev/null || true
  unmount
  echo "   perf, top symbols of the daemon reading $1:"
  perf report -i "$data" --no-children --stdio --percent-limit 2 2>/dev/null |
    grep -E '^ +[0-9.]+%' | head -12 | sed 's/^/     /'
}

results=()
# row NAME TILEFS_S BYTES REF_S GOAL_RATIO [MBPS_GOAL]: one line of the
# table; REF_S is TileDB's seconds (or - when TileDB has no such read);
# the goal is a ratio over TileDB or, without it, MB/s.
row() {
  local name=$1 t=$2 b=$3 ref=$4 goal=$5 file=${6:-}
  local line short
  line=$(awk -v n="$name" -v t="$t" -v b="$b" -v r="$ref" -v g="$goal" \
    -v lim="${limit_mbs:-0}" 'BEGIN {
      mbs = b / 1e6 / t
      vs = lim > 0 ? sprintf("%.2f", mbs / lim) : "-"
      if (r != "-") {
        ratio = r / t
        printf "%-34s %8.3f s %8.0f MB/s  TileDB %7.3f s  x%-5.2f goal x%-4s  limit %s  %s\n",
          n, t, mbs, r, ratio, g, vs, (ratio >= g ? "ok" : "SHORT")
      } else {
        printf "%-34s %8.3f s %8.0f MB/s  %-16s  %-6s goal %4s MB/s  limit %s  %s\n",
          n, t, mbs, "", "", g, vs, (mbs >= g ? "ok" : "SHORT")
      }
    }')
  results+=("$line")
  echo "$line"
  short=$(echo "$line" | awk '{ print $NF }')
  if [ "$short" = SHORT ] && [ -n "$file" ]; then perf_top "$file"; fi
}

echo "== warming the array files in the OS cache"
warm_files "$dir/dense_f32" "$dir/dense_i32" "$dir/sparse_10m"

limit_mbs=0
if want limit; then
  echo "== the FUSE limit (tfs-fuse-limit, 256 MiB in memory)"
  size=268435456
  runs=()
  for _ in $(seq 1 "$repeat"); do
    "$limit_bin" "$size" "$run/mnt-limit" &
    limit_pid=$!
    for _ in $(seq 1 500); do timeout 5 mountpoint -q "$run/mnt-limit" && break; sleep 0.01; done
    runs+=("$(cat_time "$run/mnt-limit/data")")
    fusermount3 -u "$run/mnt-limit"
    wait "$limit_pid" || true
  done
  t=$(printf '%s\n' "${runs[@]}" | best)
  limit_mbs=$(awk -v t="$t" -v b="$size" 'BEGIN { printf "%.0f", b / 1e6 / t }')
  runs=()
  for _ in $(seq 1 "$repeat"); do
    "$limit_bin" --direct "$size" "$run/mnt-limit" &
    limit_pid=$!
    for _ in $(seq 1 500); do timeout 5 mountpoint -q "$run/mnt-limit" && break; sleep 0.01; done
    runs+=("$(cat_time "$run/mnt-limit/data")")
    fusermount3 -u "$run/mnt-limit"
    wait "$limit_pid" || true
  done
  td=$(printf '%s\n' "${runs[@]}" | best)
  direct_mbs=$(awk -v t="$td" -v b="$size" 'BEGIN { printf "%.0f", b / 1e6 / t }')
  line="FUSE limit: ${limit_mbs} MB/s through the page cache (256 MiB in ${t} s), ${direct_mbs} MB/s direct I/O"
  results+=("$line")
  echo "$line"
fi

if want raw; then
  echo "== cold raw reads (dense)"
  t=$(tilefs_best 'dense_f32/v/slice[:]'); b=$(cat "$run/last_bytes")
  r=$(tiledb_best "$dir/dense_f32")
  row "dense_f32 raw v/slice[:]" "$t" "$b" "$r" 1.1 'dense_f32/v/slice[:]'
  t=$(tilefs_best 'dense_i32/v/slice[:]'); b=$(cat "$run/last_bytes")
  r=$(tiledb_best "$dir/dense_i32")
  row "dense_i32 raw v/slice[:]" "$t" "$b" "$r" 1.0 'dense_i32/v/slice[:]'
fi

if want sparse; then
  echo "== sparse sorted and stored order"
  t=$(tilefs_best 'sparse_10m/v/slice[:]'); b=$(cat "$run/last_bytes")
  r=$(tiledb_best "$dir/sparse_10m" --layout row)
  row "sparse_10m sorted v/slice[:]" "$t" "$b" "$r" 2.0 'sparse_10m/v/slice[:]'
  t=$(tilefs_best 'sparse_10m/v/slice[;stored]'); b=$(cat "$run/last_bytes")
  r=$(tiledb_best "$dir/sparse_10m" --layout unordered)
  row "sparse_10m stored v/slice[;stored]" "$t" "$b" "$r" 1.0 'sparse_10m/v/slice[;stored]'
fi

if want text; then
  echo "== text renderings"
  for f in 'dense_f32/v/slice[0:2048,:].csv' 'dense_f32/v/slice[0:2048,:].txt' \
           'dense_i32/v/slice[0:2048,:].csv' 'dense_i32/v/slice[0:2048,:].txt'; do
    t=$(tilefs_best "$f"); b=$(cat "$run/last_bytes")
    row "$f" "$t" "$b" - 500 "$f"
  done
  t=$(tilefs_best 'sparse_10m/data.csv'); b=$(cat "$run/last_bytes")
  row "sparse_10m/data.csv" "$t" "$b" - 300 'sparse_10m/data.csv'
fi

if want ingest; then
  echo "== CSV ingest (tfs-bench-ingest, 512 MB)"
  out=$("$build/tools/tfs-bench-ingest" --size 512 --dir "$run" 2>&1 | grep '^ingest:' || true)
  mbs=$(echo "$out" | sed -n 's/.* \([0-9.]*\) MB\/s of CSV.*/\1/p')
  line=$(awk -v m="${mbs:-0}" 'BEGIN {
    printf "%-34s %8s   %8.0f MB/s  %-16s  %-6s goal  300 MB/s  limit -  %s\n",
      "CSV ingest (numeric, 512 MB)", "", m, "", "", (m >= 300 ? "ok" : "SHORT") }')
  results+=("$line   ($out)")
  echo "$line   ($out)"
fi

if want list; then
  echo "== listings"
  small=$run/list/small
  if [ ! -d "$small/__schema" ]; then
    mkdir -p "$run/list"
    "$build/tools/tfs-bench-read" --dir "$run/list" --rows 200 --cols 200 \
      --tile-rows 200 --generate-only >/dev/null 2>&1
    mv "$run/list/dense_f32_200x200_t200" "$small"
  fi
  many=$run/list/many_fragments_1000
  if [ ! -d "$many/__commits" ] || [ "$(ls "$many/__commits" | wc -l)" -ne 1000 ]; then
    rm -rf "$many"
    cp -r "$small" "$many"
    frag=$(ls "$many/__fragments")
    rm -f "$many"/__commits/*
    for i in $(seq 1 1000); do
      ts=$((1700000000000 + i))
      uuid=$(printf '%032x' "$i")
      name=__${ts}_${ts}_${uuid}_${frag##*_}
      cp -r "$many/__fragments/$frag" "$many/__fragments/$name"
      : >"$many/__commits/$name.wrt"
    done
    rm -rf "${many:?}/__fragments/$frag"
  fi
  folder=$run/list/arrays_10000
  if [ "$(ls "$folder" 2>/dev/null | wc -l)" -ne 10000 ]; then
    rm -rf "$folder"
    mkdir -p "$folder"
    python3 -c 'import shutil, sys
for i in range(1, 10001):
    shutil.copytree(sys.argv[1], "%s/a%05d" % (sys.argv[2], i))' "$small" "$folder"
  fi
  warm_files "$many" "$folder"
  reading=listings
  fresh=() warm=() mount10k=()
  for _ in $(seq 1 "$repeat"); do
    mount_fresh "$run/list"
    t0=$(now_ns); ls -l "$mnt/many_fragments_1000" >/dev/null; t1=$(now_ns)
    fresh+=("$(secs $((t1 - t0)))")
    t0=$(now_ns); ls -l "$mnt/many_fragments_1000" >/dev/null; t1=$(now_ns)
    warm+=("$(secs $((t1 - t0)))")
    unmount
    t0=$(now_ns)
    mount_fresh "$folder"
    ls -l "$mnt" >/dev/null
    t1=$(now_ns)
    mount10k+=("$(secs $((t1 - t0)))")
    unmount
  done
  for pair in "ls -l, 1000 fragments, fresh:$(printf '%s\n' "${fresh[@]}" | best):-" \
              "ls -l, 1000 fragments, warm:$(printf '%s\n' "${warm[@]}" | best):0.050" \
              "mount + ls -l of 10 000 arrays:$(printf '%s\n' "${mount10k[@]}" | best):1.0"; do
    IFS=: read -r name t goal <<<"$pair"
    line=$(awk -v n="$name" -v t="$t" -v g="$goal" 'BEGIN {
      if (g == "-") printf "%-34s %8.3f s\n", n, t
      else printf "%-34s %8.3f s   goal <= %s s  %s\n", n, t, g, (t <= g ? "ok" : "SHORT") }')
    results+=("$line")
    echo "$line"
  done
fi

unmount
peak=$(sort -n "$run/peaks" | tail -1)
peak_kb=${peak%% *}
peak_kb=${peak_kb:-0}
echo
echo "tilefs speed benchmark, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), best of $repeat"
echo "command: scripts/bench.sh${args:+ $args}"
printf '%s\n' "${results[@]}"
if [ "$peak_kb" -gt 0 ]; then
  awk -v kb="$peak_kb" -v c="$cache_mb" -v what="${peak#* }" 'BEGIN {
    printf "%-34s %8.0f MB   bound cache=%dM + 64 MB = %d MB  %s (largest: %s)\n",
      "daemon peak RSS (every read above)", kb / 1024, c, c + 64,
      (kb / 1024 <= c + 64 ? "ok" : "OVER"), what }'
fi
