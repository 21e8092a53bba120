#!/usr/bin/env bash
# The listing benchmark: what `ls -l` costs on a mount.
#
#   tools/bench/bench_listing.sh [--dir DIR] [--build BUILD] [--quick]
#                                [--tilefs PATH] [--tfs PATH] [--check FACTOR]
#
#  1. ls -l of an array with 1 000 fragments (one fragment written by
#     `tfs ingest`, copied with other timestamps, each with its commit):
#     on a fresh mount (best of 3), then warm (median of 5);
#  2. mounting a folder of 10 000 small arrays and ls -l of it (the
#     time from starting the daemon to the end of the listing, best of
#     2), and the listing again, warm.
# Goals: 1. <= 200 ms fresh and <= 50 ms warm; 2. <= 1 s for 10 000
# arrays. --check FACTOR exits 1 when a figure is over FACTOR times its
# bound (the integration test listing_speed.sh runs --quick --check 5, 20
# under a sanitizer).
# --quick uses 2 000 arrays for 2, bounded by 1 s: not the goal scaled
# (200 ms), which this machine does not reach (docs/BENCHMARKS.md,
# "Listing"), but what it does, so that the check catches a regression.
# Arrays are generated once in DIR (default
# /var/tmp/tilefs-bench-listing) and reused. Without --tilefs/--tfs the
# binaries of BUILD (default build-release) are built first. Needs root or
# a user allowed to mount FUSE.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)

dir=/var/tmp/tilefs-bench-listing
build=$top/build-release
quick=0
check=
tilefs=
tfs=
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --tilefs) tilefs=$2; shift 2 ;;
    --tfs) tfs=$2; shift 2 ;;
    --check) check=$2; shift 2 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "bench_listing.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

if [ -z "$tilefs" ] || [ -z "$tfs" ]; then
  cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build" -j "$(nproc)" --target tilefs_daemon tfs >/dev/null
  tilefs=${tilefs:-$build/fs/tilefs}
  tfs=${tfs:-$build/tools/tfs}
fi

narrays=10000
goal_folder=1000
if [ "$quick" = 1 ]; then
  narrays=2000
  goal_folder=1000
fi

mkdir -p "$dir"
# A mountpoint of this run's own: runs may share DIR's arrays.
mnt=$(mktemp -d -p "$dir")
daemon=
cleanup() {
  if mountpoint -q "$mnt"; then
    fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" || true
  fi
  if [ -n "$daemon" ]; then
    wait "$daemon" 2>/dev/null || true
  fi
}
trap 'cleanup; rm -f "$mnt.log"; rmdir "$mnt" 2>/dev/null || true' EXIT

now_ns() { date +%s%N; }
ms_since() { echo $(( ($(now_ns) - $1) / 1000000 )); }

# mount_fresh SOURCE: a new daemon on $mnt, waiting until it serves.
mount_fresh() {
  cleanup
  "$tilefs" -f -o ro "$1" "$mnt" >"$mnt.log" 2>&1 &
  daemon=$!
  for _ in $(seq 1 400); do
    mountpoint -q "$mnt" && return 0
    kill -0 "$daemon" 2>/dev/null || break
    sleep 0.005
  done
  echo "bench_listing.sh: tilefs did not mount $1:" >&2
  tail -5 "$mnt.log" >&2
  exit 1
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# ---- The arrays (generated once, by one run at a time) -------------------------
demo=$top/scripts/demo
exec 9>"$dir/.generating"
flock 9
frags=$dir/fragments_1000
if [ ! -d "$frags/a/__commits" ] ||
   [ "$(ls "$frags/a/__commits" | wc -l)" -ne 1000 ]; then
  echo "== generating $frags"
  rm -rf "$frags"
  mkdir -p "$frags"
  "$tfs" create "$frags/a" "$demo/inventory.json" >/dev/null
  printf 'shelf,slot,count,item\n1,1,5,apple\n2,3,7,pear\n' >"$dir/two.csv"
  "$tfs" ingest "$frags/a" "$dir/two.csv" >/dev/null
  one=$(ls "$frags/a/__fragments")
  # 999 more: that fragment at earlier times, each committed.
  python3 - "$frags/a" "$one" <<'PYEOF'
import shutil, sys
arr, one = sys.argv[1:]
ver = one.rsplit("_", 1)[1]
for i in range(1, 1000):
    t = 1700000000000 + i
    name = "__%d_%d_%032x_%s" % (t, t, i, ver)
    shutil.copytree("%s/__fragments/%s" % (arr, one),
                    "%s/__fragments/%s" % (arr, name))
    open("%s/__commits/%s.wrt" % (arr, name), "w").close()
PYEOF
fi

folder=$dir/arrays_$narrays
if [ ! -d "$folder" ] || [ "$(ls "$folder" | wc -l)" -ne "$narrays" ]; then
  echo "== generating $folder"
  rm -rf "$folder" "$dir/seed"
  mkdir -p "$dir/seed"
  "$tfs" create "$dir/seed/a" "$demo/inventory.json" >/dev/null
  printf 'shelf,slot,count,item\n1,1,5,apple\n' >"$dir/one.csv"
  "$tfs" ingest "$dir/seed/a" "$dir/one.csv" >/dev/null
  python3 - "$dir/seed/a" "$folder" "$narrays" <<'PYEOF'
import os, shutil, sys
seed, folder, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(folder)
for i in range(n):
    shutil.copytree(seed, "%s/a%05d" % (folder, i))
PYEOF
fi

flock -u 9

# ---- 1. ls -l of an array with 1 000 fragments ----------------------------------
# Fresh: the best of 3 mounts (a load spike on a shared machine is not the
# daemon's); warm: the median of 5 listings on the last.
frag_fresh=
for _ in 1 2 3; do
  mount_fresh "$frags"
  t0=$(now_ns)
  n=$(ls -l "$mnt/a" | wc -l)
  ms=$(ms_since "$t0")
  [ "$n" -gt 3 ] || { echo "bench_listing.sh: ls -l listed $n lines" >&2; exit 1; }
  if [ -z "$frag_fresh" ] || [ "$ms" -lt "$frag_fresh" ]; then frag_fresh=$ms; fi
done
warm=()
for _ in 1 2 3 4 5; do
  t0=$(now_ns)
  ls -l "$mnt/a" >/dev/null
  warm+=("$(ms_since "$t0")")
done
frag_warm=$(printf '%s\n' "${warm[@]}" | median)

# ---- 2. mounting a folder of small arrays and ls -l of it -------------------------
# The best of 2 mounts, from starting the daemon to the end of ls -l.
folder_fresh=
for _ in 1 2; do
  cleanup
  daemon=
  t0=$(now_ns)
  mount_fresh "$folder"
  n=$(ls -l "$mnt" | wc -l)
  ms=$(ms_since "$t0")
  [ "$n" -gt "$narrays" ] || { echo "bench_listing.sh: ls -l listed $n lines of $narrays arrays" >&2; exit 1; }
  if [ -z "$folder_fresh" ] || [ "$ms" -lt "$folder_fresh" ]; then folder_fresh=$ms; fi
done
t0=$(now_ns)
ls -l "$mnt" >/dev/null
folder_warm=$(ms_since "$t0")
cleanup
daemon=

echo "tilefs listing benchmark ($(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg))"
echo "ls -l of an array with 1000 fragments: ${frag_fresh} ms fresh (goal 200, best of 3), ${frag_warm} ms warm (goal 50, median of 5)"
echo "mount + ls -l of a folder of $narrays arrays: ${folder_fresh} ms (best of 2; bound $goal_folder; goal 1000 for 10000); ls -l again: ${folder_warm} ms"

if [ -n "$check" ]; then
  over=0
  for fig in "fresh $frag_fresh 200" "warm $frag_warm 50" "folder $folder_fresh $goal_folder"; do
    set -- $fig
    if [ "$2" -gt $(($3 * check)) ]; then
      echo "over: $1 listing took $2 ms, more than $check x $3 ms" >&2
      over=1
    fi
  done
  exit "$over"
fi
