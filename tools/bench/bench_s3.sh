#!/usr/bin/env bash
# The object-storage benchmark, in one run against a real S3 server on
# loopback (radosgw, scripts/s3-server.sh; started here and stopped at the
# end):
#
#   tools/bench/bench_s3.sh [--dir DIR] [--build BUILD] [--rows N]
#
#  1. cat of a large raw attribute (N x N FLOAT32, default N = 8192:
#     256 MiB decoded) through a mount of the bucket, against the same
#     array in a local folder, and against plain ranged GETs of the same
#     objects with curl (4 at once, 8 MiB each: the loopback limit);
#  2. time to first byte of a small slice of a 10 000-tile array, on a
#     fresh mount of the bucket and of the folder;
#  3. ls -l of the fragments/ of an array with 1 000 fragments, on a
#     fresh mount of the bucket and of the folder.
# Arrays are generated in DIR (default /var/tmp/tilefs-bench-s3). Needs
# root or a user allowed to mount FUSE, and the packages of
# scripts/install-deps.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)

dir=/var/tmp/tilefs-bench-s3
build=build-release
rows=8192
while [ $# -gt 0 ]; do
	case "$1" in
	--dir) dir=$2; shift 2 ;;
	--build) build=$2; shift 2 ;;
	--rows) rows=$2; shift 2 ;;
	-h|--help) sed -n '2,18p' "$0"; exit 0 ;;
	*) echo "bench_s3.sh: unknown option $1" >&2; exit 2 ;;
	esac
done

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" --target tilefs_daemon tfs-bench-read >/dev/null
tilefs=$root/$build/fs/tilefs
gen=$root/$build/tools/tfs-bench-read
arrays=$dir/arrays
server=$dir/server
mkdir -p "$arrays" "$dir/mnt" "$dir/smnt"
mounted=()
cleanup() {
	for m in "${mounted[@]}"; do fusermount3 -u "$m" 2>/dev/null || true; done
	"$root/scripts/s3-server.sh" stop "$server" >/dev/null 2>&1 || true
	rm -rf "$server"
}
trap cleanup EXIT

now_ns() { date +%s%N; }
ms_since() { echo $(( ($(now_ns) - $1) / 1000000 )); }
secs_since() { awk -v ns=$(( $(now_ns) - $1 )) 'BEGIN { printf "%.3f", ns / 1e9 }'; }

echo "== generating (once) in $arrays"
"$gen" --dir "$arrays" --rows "$rows" --cols "$rows" --tile-rows 64 --generate-only >/dev/null 2>&1
"$gen" --dir "$arrays" --rows 20000 --cols 200 --tile-rows 2 --generate-only >/dev/null 2>&1
"$gen" --dir "$arrays" --rows 200 --cols 200 --tile-rows 200 --generate-only >/dev/null 2>&1
large=dense_f32_${rows}x${rows}_t64
raw="v/slice[0:$rows,0:$rows]"
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

echo "== starting radosgw on loopback"
rm -rf "$server"
"$root/scripts/s3-server.sh" start "$server" >/dev/null
"$root/scripts/s3-server.sh" bucket "$server" bench
eval "$("$root/scripts/s3-server.sh" env "$server")"
export AWS_ENDPOINT_URL AWS_REGION AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
sig=(--aws-sigv4 "aws:amz:$AWS_REGION:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY")
empty=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855

echo "== uploading (8 requests at once)"
t0=$(now_ns)
(cd "$arrays" && find "$large" dense_f32_20000x200_t2 many_fragments_1000 -type f) |
	xargs -P 8 -I{} curl -sS -f -o /dev/null "${sig[@]}" \
		-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
		-T "$arrays/{}" "$AWS_ENDPOINT_URL/bench/{}"
echo "uploaded in $(secs_since "$t0") s"

mount_fresh() { # SOURCE MOUNTPOINT
	fusermount3 -u "$2" 2>/dev/null || true
	"$tilefs" -f -o cache=256M "$1" "$2" >"$2.log" 2>&1 &
	mounted+=("$2")
	for _ in $(seq 1 500); do mountpoint -q "$2" && return 0; sleep 0.02; done
	echo "bench_s3.sh: tilefs did not mount $1" >&2
	exit 1
}

echo "== 1. cat of $large/$raw ($((rows * rows * 4 / 1048576)) MiB decoded)"
best() { printf '%s\n' "$@" | sort -n | head -1; }
local_runs=() s3_runs=() curl_runs=()
for _ in 1 2 3; do
	mount_fresh "$arrays" "$dir/mnt"
	t0=$(now_ns); cat "$dir/mnt/$large/$raw" >/dev/null; local_runs+=("$(secs_since "$t0")")
	mount_fresh "s3://bench" "$dir/smnt"
	t0=$(now_ns); cat "$dir/smnt/$large/$raw" >/dev/null; s3_runs+=("$(secs_since "$t0")")
done
cmp "$dir/mnt/$large/$raw" "$dir/smnt/$large/$raw" || { echo "bench_s3.sh: bytes differ" >&2; exit 1; }
# The same objects with plain ranged GETs: 8 MiB ranges, 4 at once.
objs=$(cd "$arrays" && find "$large" -type f -printf '%s %p\n')
for _ in 1 2 3; do
	t0=$(now_ns)
	echo "$objs" | while read -r size key; do
		off=0
		while [ "$off" -lt "$size" ]; do
			end=$((off + 8388608 - 1)); [ "$end" -ge "$size" ] && end=$((size - 1))
			echo "$key $off $end"
			off=$((end + 1))
		done
	done | B_SIG="aws:amz:$AWS_REGION:s3" B_USER="$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
		B_EP="$AWS_ENDPOINT_URL" B_EMPTY=$empty xargs -P 4 -n 3 sh -c \
		'curl -sS -f -o /dev/null --aws-sigv4 "$B_SIG" --user "$B_USER" -H "x-amz-content-sha256: $B_EMPTY" -H "Range: bytes=$1-$2" "$B_EP/bench/$0"'
	curl_runs+=("$(secs_since "$t0")")
done
echo "$objs" | awk '{ s += $1 } END { printf "objects: %.1f MiB stored\n", s / 1048576 }'
echo "local folder : $(best "${local_runs[@]}") s"
echo "bucket       : $(best "${s3_runs[@]}") s"
echo "curl GETs    : $(best "${curl_runs[@]}") s (the stored, compressed objects)"

echo "== 2. time to first byte, 10 000-tile array (fresh mounts)"
slice="dense_f32_20000x200_t2/v/slice[10000:10010,100:110]"
mount_fresh "$arrays" "$dir/mnt"
t0=$(now_ns); head -c 1 "$dir/mnt/$slice" >/dev/null; ttfb_local=$(ms_since "$t0")
mount_fresh "s3://bench" "$dir/smnt"
t0=$(now_ns); head -c 1 "$dir/smnt/$slice" >/dev/null; ttfb_s3=$(ms_since "$t0")
echo "local folder : $ttfb_local ms"
echo "bucket       : $ttfb_s3 ms"

echo "== 3. ls -l of 1 000 fragments (fresh mounts)"
mount_fresh "$arrays" "$dir/mnt"
t0=$(now_ns); n_local=$(ls -l "$dir/mnt/many_fragments_1000/fragments" | wc -l); ls_local=$(ms_since "$t0")
mount_fresh "s3://bench" "$dir/smnt"
t0=$(now_ns); n_s3=$(ls -l "$dir/smnt/many_fragments_1000/fragments" | wc -l); ls_s3=$(ms_since "$t0")
echo "local folder : $ls_local ms ($((n_local - 1)) entries)"
echo "bucket       : $ls_s3 ms ($((n_s3 - 1)) entries)"
