#!/usr/bin/env bash
# Runs every test: installs the Debian packages, builds with warnings as
# errors and runs the CTest suite (unit tests, the public corpus through
# `tfs dump`, CLI checks, fuzz regressions), then builds again with
# AddressSanitizer + UndefinedBehaviorSanitizer and runs the whole suite
# there too, then builds the daemon with ThreadSanitizer and runs the
# concurrency tests with it, then runs every fuzz target briefly
# (scripts/fuzz.sh, clang).
# Exits non-zero if anything fails; the last line is the summary.
#
#   --quick   the quick tier: no package installs, the release build only,
#             and only the tests labelled unit, corpus, integration or
#             docs that are not labelled soak (no stress or crash loops,
#             no robustness or fuzzing runs, no package install); a few
#             minutes. docs/TESTING.md lists the tiers.
#
#   TFS_JOBS=N          parallel build and test jobs (default 2)
#   TFS_FUZZ_SECONDS=N  seconds per fuzz target (default 10; 0 skips)
#   TFS_FUZZ_SEED=N     libFuzzer seed of that run (default 1)
set -uo pipefail
cd "$(dirname "$0")/.."

quick=0
for arg in "$@"; do
  case $arg in
  --quick) quick=1 ;;
  -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "test.sh: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done

jobs=${TFS_JOBS:-2}
if [ "$quick" -eq 0 ]; then
  bash scripts/install-deps.sh || { echo "test.sh: FAIL (installing dependencies)"; exit 1; }
fi

# allocator_may_return_null: a huge request is an ordinary allocation
# failure (TFS_E_NOMEM), as with the real allocator, not an abort.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

declare -A result
# The CTest selection of the run: everything, or the quick tier.
ctest_select=()
if [ "$quick" -eq 1 ]; then
  ctest_select=(-L 'unit|corpus|integration|docs' -LE soak)
fi
# suite NAME BUILD_DIR [cmake options...]: configure, build, ctest.
suite() {
  local name=$1 dir=$2
  shift 2
  echo "=== $name: configure and build in $dir"
  if ! cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTFS_WERROR=ON "$@"; then
    result[$name]="configure failed"; return 1
  fi
  if ! cmake --build "$dir" -j "$jobs"; then
    result[$name]="build failed"; return 1
  fi
  echo "=== $name: ctest ${ctest_select[*]}"
  if ! ctest --test-dir "$dir" --output-on-failure -j "$jobs" "${ctest_select[@]}"; then
    result[$name]="tests failed"; return 1
  fi
  result[$name]="ok"
}

# The daemon under ThreadSanitizer, small on purpose: only the daemon (and
# the tfs tool, which the maintenance tests run) is built and only the
# concurrency tests run (about 3 minutes on 2 CPUs).
tsan_suite() {
  local dir=build-tsan
  echo "=== tsan: configure and build the daemon in $dir"
  if ! cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTFS_WERROR=ON \
      -DTFS_TSAN=ON; then
    result[tsan]="configure failed"; return 1
  fi
  if ! cmake --build "$dir" -j "$jobs" --target tilefs_daemon tfs; then
    result[tsan]="build failed"; return 1
  fi
  echo "=== tsan: concurrency tests"
  # A report fails the test through the daemon's log (lib/common.sh).
  if ! TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=0:second_deadlock_stack=1} \
      ctest --test-dir "$dir" --output-on-failure -j "$jobs" \
      -R '^it_(concurrency|stress_readers|stress_versions|stress_maintain|vacuum_views|write_concurrent)$'; then
    result[tsan]="tests failed"; return 1
  fi
  result[tsan]="ok"
}

status=0
# The crash loops (kill -9 at random moments) run 90 s each here; the
# long runs of docs/TESTING.md set TFS_CRASH_SECONDS higher.
TFS_CRASH_SECONDS=${TFS_CRASH_SECONDS:-90} \
  suite release build-release || status=1
if [ "$quick" -eq 1 ]; then
  result[asan+ubsan]="skipped"
  result[tsan]="skipped"
  result[fuzz]="skipped"
  summary="release: ${result[release]}, asan+ubsan: ${result[asan+ubsan]}, tsan: ${result[tsan]}, fuzz: ${result[fuzz]}"
  if [ "$status" -eq 0 ]; then
    echo "test.sh: PASS ($summary; --quick)"
  else
    echo "test.sh: FAIL ($summary; --quick)"
  fi
  exit "$status"
fi
# The crash loops (kill -9 at random moments) check what is on disk, not
# memory: under the sanitizers a shorter loop is enough (the release run
# keeps CI's full length).
TFS_CRASH_SECONDS=${TFS_CRASH_SECONDS:-50} \
  suite asan+ubsan build-asan -DTFS_SANITIZE=ON || status=1
tsan_suite || status=1

# A short fuzzing run of every target (about 2 minutes on 2 CPUs); any
# crash, leak or timeout fails it and leaves its reproducer in
# tests/fuzz/regressions/. Seeded, so that the verdict on a tree does not
# depend on luck: the random exploration is the long runs' job
# (docs/FUZZING.md).
fuzz_secs=${TFS_FUZZ_SECONDS:-10}
if [ "$fuzz_secs" -eq 0 ]; then
  result[fuzz]="skipped"
elif TFS_JOBS=$jobs TFS_FUZZ_SEED=${TFS_FUZZ_SEED:-1} \
    bash scripts/fuzz.sh "$fuzz_secs"; then
  result[fuzz]="ok"
else
  result[fuzz]="failed"
  status=1
fi

summary="release: ${result[release]}, asan+ubsan: ${result[asan+ubsan]}, tsan: ${result[tsan]}, fuzz: ${result[fuzz]}"
if [ "$status" -eq 0 ]; then
  echo "test.sh: PASS ($summary)"
else
  echo "test.sh: FAIL ($summary)"
fi
exit "$status"
