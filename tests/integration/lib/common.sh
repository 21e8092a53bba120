# Shared helpers of the integration tests: each test script sources this,
# mounts what it needs with `mount_tilefs`, and is unmounted by the trap
# whatever happens. Needs TILEFS (the daemon), CORPUS (the public corpus)
# and PY (Debian's python3 with numpy and pandas) from CTest.
set -euo pipefail

: "${TILEFS:?TILEFS must name the tilefs binary}"
: "${CORPUS:?CORPUS must name the public corpus folder}"
PY=${PY:-/usr/bin/python3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# CTest's SKIP_RETURN_CODE: no FUSE on this machine.
if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null 2>&1; then
  echo "SKIP: no /dev/fuse or fusermount3"
  exit 77
fi

WORK=$(mktemp -d)
MOUNTS=()
PIDS=()

# Unmounts everything; a daemon that a sanitizer stopped or that reported
# an error at exit fails the test.
cleanup() {
  local status=$? m p bad=0
  for m in "${MOUNTS[@]}"; do
    fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || true
  done
  for p in "${PIDS[@]}"; do
    for _ in $(seq 1 100); do
      kill -0 "$p" 2>/dev/null || break
      sleep 0.05
    done
    kill "$p" 2>/dev/null || true
  done
  for m in "${MOUNTS[@]}"; do
    if grep -q -e 'AddressSanitizer' -e 'runtime error:' -e 'LeakSanitizer' -e 'ThreadSanitizer' "$m.log" 2>/dev/null; then
      echo "FAIL: the daemon of $m reported a sanitizer error:" >&2
      grep -A 20 -e 'Sanitizer' -e 'runtime error:' "$m.log" | head -40 >&2
      bad=1
    fi
  done
  rm -rf "$WORK"
  if [ "$bad" -ne 0 ] && [ "$status" -eq 0 ]; then
    exit 1
  fi
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  if [ -n "${LOG:-}" ] && [ -f "$LOG" ]; then
    echo "--- daemon log ($LOG) ---" >&2
    tail -n 20 "$LOG" >&2
  fi
  exit 1
}

# mount_tilefs SOURCE MOUNTPOINT [options...]: mounts in the foreground
# (logging to $MOUNTPOINT.log, set as LOG) and waits until it serves.
mount_tilefs() {
  local src=$1 mnt=$2
  shift 2
  mkdir -p "$mnt"
  LOG="$mnt.log"
  "$TILEFS" -f "$@" "$src" "$mnt" >"$LOG" 2>&1 &
  PIDS+=($!)
  MOUNTS+=("$mnt")
  for _ in $(seq 1 100); do
    if mountpoint -q "$mnt"; then
      return 0
    fi
    if ! kill -0 "${PIDS[-1]}" 2>/dev/null; then
      fail "tilefs exited before mounting $mnt"
    fi
    sleep 0.05
  done
  fail "tilefs did not mount $mnt"
}

# Copies corpus arrays (read-only ground truth) into a temporary folder.
copy_corpus() {
  local dst=$1
  shift
  mkdir -p "$dst"
  for a in "$@"; do
    cp -r "$CORPUS/$a" "$dst/"
  done
}

pass() {
  echo "PASS: $(basename "$0")"
}
