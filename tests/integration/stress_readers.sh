#!/usr/bin/env bash
# Many readers at once over one mount, with a small tile cache so that
# tiles are evicted and decoded again while others wait for them: 16
# threads reading random ranges of files of every format (opened anew
# now and then), and dd processes at random offsets, every byte compared
# with a reading of the file alone. Run under ThreadSanitizer by
# scripts/test.sh (the daemon's races show in its log, which fails the
# test). STRESS_SECONDS (default 20) bounds the random phase.
source "$(dirname "$0")/lib/common.sh"

secs=${STRESS_SECONDS:-20}
mount_tilefs "$CORPUS" "$WORK/mnt" -o ro,threads=3,cache=2M,whole_max=64
m=$WORK/mnt
files=(
  "dense_big_tile/a/slice[:]"
  "dense_big_tile/data.csv"
  "dense_2d_rowmajor/a/slice[1:11,1:13]"
  "dense_2d_rowmajor/s/slice[:].offsets"
  "dense_2d_rowmajor/s/slice[:]"
  "dense_2d_rowmajor/f/slice[2:9,3:12].npy"
  "dense_2d_rowmajor/slice[:].json"
  "dense_3d/slice[:].csv"
  "dense_nullable/ns/slice[:].txt"
  "dense_nullable/ns/slice[:].validity"
  "sparse_2d_int/slice[:].csv"
  "sparse_dups/data.csv"
  "filters_pipelines/data.csv"
  "filter_checksum_sha256/data.csv"
  "many_fragments/data.csv"
  "consolidated_fragments/data.csv"
)
mkdir "$WORK/want"
for i in "${!files[@]}"; do
  [ -e "$m/${files[$i]}" ] || fail "no ${files[$i]}"
  cat "$m/${files[$i]}" >"$WORK/want/$i" || fail "cat ${files[$i]}"
  [ -s "$WORK/want/$i" ] || fail "${files[$i]} is empty"
done
# Those the corpus describes independently: the whole arrays as CSV.
for a in dense_big_tile sparse_dups filters_pipelines many_fragments; do
  i=0
  for j in "${!files[@]}"; do [ "${files[$j]}" = "$a/data.csv" ] && i=$j; done
  "$PY" "$HERE/check_csv.py" "$WORK/want/$i" "$CORPUS/$a.json" ||
    fail "$a/data.csv differs from the corpus"
done

# dd readers: random blocks of random files, compared with the same
# blocks of the expected bytes.
dd_reader() {
  local seed=$1 n=0 i size bs skip
  RANDOM=$seed
  local end=$((SECONDS + secs))
  while [ "$SECONDS" -lt "$end" ]; do
    i=$((RANDOM % ${#files[@]}))
    size=$(stat -c %s "$WORK/want/$i")
    bs=$((1 + RANDOM % 4096))
    skip=$((RANDOM * 32768 + RANDOM))
    skip=$((skip % (size / bs + 1)))
    cmp -s <(dd if="$m/${files[$i]}" bs="$bs" skip="$skip" count=3 2>/dev/null) \
           <(dd if="$WORK/want/$i" bs="$bs" skip="$skip" count=3 2>/dev/null) ||
      { echo "dd reader $seed: ${files[$i]} bs=$bs skip=$skip differs"; return 1; }
    n=$((n + 1))
  done
  echo "$n" >"$WORK/dd.$seed"
}

pids=()
for s in 1 2 3 4; do
  dd_reader "$s" &
  pids+=($!)
done
"$PY" - "$m" "$WORK/want" "$secs" "${files[@]}" <<'PYEOF' &
import os, random, sys, threading, time
mnt, want_dir, secs, files = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:]
want = [open(os.path.join(want_dir, str(i)), "rb").read() for i in range(len(files))]
stop = time.monotonic() + secs
errors, reads = [], [0] * 16

def reader(t):
    rnd = random.Random(t)
    fds = {}
    while time.monotonic() < stop and not errors:
        i = rnd.randrange(len(files))
        if i not in fds or rnd.random() < 0.1:
            if i in fds:
                os.close(fds[i])
            fds[i] = os.open(os.path.join(mnt, files[i]), os.O_RDONLY)
        w = want[i]
        off = rnd.randrange(len(w) + 1)
        n = rnd.choice((1, 7, 512, 4096, 65536, 1 << 20))
        got = os.pread(fds[i], n, off)
        if got != w[off:off + n]:
            errors.append("%s: %d bytes at %d differ" % (files[i], n, off))
        reads[t] += 1
    for fd in fds.values():
        os.close(fd)

threads = [threading.Thread(target=reader, args=(t,)) for t in range(16)]
for t in threads:
    t.start()
for t in threads:
    t.join()
if errors:
    sys.exit("python readers: " + errors[0])
print("python: 16 threads, %d random reads, all exact" % sum(reads))
PYEOF
pids+=($!)
for p in "${pids[@]}"; do
  wait "$p" || fail "a reader got other bytes (see above)"
done
total=0
for s in 1 2 3 4; do total=$((total + $(cat "$WORK/dd.$s"))); done
echo "dd: 4 processes, $total random reads, all exact"
mountpoint -q "$m" || fail "the daemon died"
pass
