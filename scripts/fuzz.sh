#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang in build-fuzz
# (-DTFS_FUZZ=ON: ASan + UBSan + coverage) and runs each one for a while
# on its seeds (extracted from the public corpus), its regression inputs
# and a persistent corpus (build-fuzz/fuzz-corpus/<target>, kept between
# runs so long runs build on each other).
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
# SECONDS_PER_TARGET defaults to 30; TARGET defaults to every target.
#   TFS_JOBS=N   targets fuzzed at once (default 2)
#   TFS_FUZZ_SEED=N  a reproducible run (what CI does): libFuzzer's seed
#                is N and each target starts from an empty corpus, so the
#                inputs tried depend only on the tree; a slower machine
#                tries a prefix of what a longer run with the same seed
#                tried. Unset: a random seed on the persistent corpus.
# Any crash, leak, timeout (> 10 s for one input) or out-of-memory
# (> 2048 MB) fails the run: the reproducer is copied to
# tests/fuzz/regressions/<target>/, where the replay tests of the normal
# build keep it fixed once the bug is. Logs: build-fuzz/fuzz-logs/.
# The last line is the summary.
set -uo pipefail
cd "$(dirname "$0")/.."

secs=${1:-30}
shift || true
jobs=${TFS_JOBS:-2}
dir=build-fuzz

bash scripts/install-deps.sh || { echo "fuzz.sh: FAIL (installing dependencies)"; exit 1; }

echo "=== fuzz: configure and build in $dir (clang, TFS_FUZZ=ON)"
mkdir -p "$dir"
# Warnings are the gcc builds' job (-Werror there); clang's own are shown.
if ! CC=clang cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTFS_FUZZ=ON -DTFS_WERROR=OFF >"$dir/configure.log" 2>&1; then
  cat "$dir/configure.log"
  echo "fuzz.sh: FAIL (configure)"
  exit 1
fi
if ! cmake --build "$dir" -j "$jobs" --target fuzz_all; then
  echo "fuzz.sh: FAIL (build)"
  exit 1
fi

bin=$dir/tests/fuzz
if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(sed -n 's/^  \(fuzz_[a-z_]*\):.*/\1/p' tests/fuzz/CMakeLists.txt)
fi
seeds=$dir/fuzz-seeds
if ! bash tests/fuzz/seeds.sh "$seeds" "$bin/fuzz_seedgen" >"$dir/fuzz-seeds.log" 2>&1; then
  cat "$dir/fuzz-seeds.log"
  echo "fuzz.sh: FAIL (seeds)"
  exit 1
fi
tail -1 "$dir/fuzz-seeds.log"

# Leaks are findings; a huge request is an ordinary allocation failure
# for the engine (TFS_E_NOMEM) but libFuzzer's -malloc_limit_mb (= the
# RSS limit) still reports any single allocation above 2 GB.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$dir/fuzz-logs"

# fuzz_one TARGET: runs it; on a finding, files the reproducer.
fuzz_one() {
  local t=$1 log=$dir/fuzz-logs/$1.log art=$dir/fuzz-artifacts/$1/
  local corpus=$dir/fuzz-corpus/$1 reg=tests/fuzz/regressions/$1
  local seeded=()
  if [ -n "${TFS_FUZZ_SEED:-}" ]; then
    corpus=$dir/fuzz-corpus-seeded/$1
    rm -rf "$corpus"
    seeded=(-seed="$TFS_FUZZ_SEED")
  fi
  mkdir -p "$corpus" "$art" "$reg"
  rm -f "$art"/*
  "$bin/$t" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
    "${seeded[@]}" -print_final_stats=1 -artifact_prefix="$art" \
    "$corpus" "$seeds/$t" "$reg" >"$log" 2>&1
  local rc=$?
  local runs eps cov
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  if [ "$rc" -eq 0 ]; then
    printf '%-22s ok    %10s runs %8s exec/s  %s\n' "$t" "${runs:-?}" "${eps:-?}" "${cov:-}"
    return 0
  fi
  local found
  found=$(ls -t "$art" 2>/dev/null | head -1)
  printf '%-22s FAIL  (exit %d) see %s\n' "$t" "$rc" "$log"
  grep -m3 -E 'ERROR|SUMMARY|fuzz invariant' "$log" | sed 's/^/    /'
  if [ -n "$found" ]; then
    cp "$art$found" "$reg/$found"
    echo "    reproducer: $art$found (copied to $reg/$found)"
    echo "    replay: $bin/$t $reg/$found"
  fi
  return 1
}

echo "=== fuzz: ${#targets[@]} targets, ${secs}s each, $jobs at a time${TFS_FUZZ_SEED:+, seed $TFS_FUZZ_SEED from empty corpora}"
start=$SECONDS
failed=()
pids=()
names=()
for t in "${targets[@]}"; do
  if [ "${#pids[@]}" -ge "$jobs" ]; then
    wait "${pids[0]}" || failed+=("${names[0]}")
    pids=("${pids[@]:1}")
    names=("${names[@]:1}")
  fi
  fuzz_one "$t" &
  pids+=($!)
  names+=("$t")
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || failed+=("${names[$i]}")
done

summary="${#targets[@]} targets x ${secs}s in $((SECONDS - start))s"
if [ "${#failed[@]}" -eq 0 ]; then
  echo "fuzz.sh: PASS ($summary)"
  exit 0
fi
echo "fuzz.sh: FAIL ($summary; findings in: ${failed[*]})"
exit 1
