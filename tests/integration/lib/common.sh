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

# Whether the daemon runs under a sanitizer (ASan, TSan or UBSan). The
# libraries are read whole: `ldd | grep -q` stops reading at the first
# match, and under pipefail the pipe's SIGPIPE to ldd made it false now
# and then.
daemon_sanitized() {
  local libs
  libs=$(ldd "$TILEFS" 2>/dev/null || true)
  case "$libs" in
    *libasan* | *libtsan* | *libubsan*) return 0 ;;
  esac
  return 1
}

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

# empty_soon DIR: whether DIR is empty within 2 s. A staged file goes at
# its file's release, which the kernel sends after close() returned.
empty_soon() {
  local i
  for i in $(seq 1 40); do
    [ -z "$(ls -A "$1")" ] && return 0
    sleep 0.05
  done
  return 1
}

pass() {
  echo "PASS: $(basename "$0")"
}

# rewrite_csvs DIR N: DIR/k1.csv .. kN.csv, each setting every one of the
# 100 x 100 cells of a sparse_2d_int copy to a = K, s = vK.
rewrite_csvs() {
  "$PY" - "$1" "$2" <<'PYEOF'
import sys
work, n = sys.argv[1], int(sys.argv[2])
for k in range(1, n + 1):
    with open(f"{work}/k{k}.csv", "w") as out:
        out.write("x,y,a,s\n")
        for x in range(100):
            for y in range(100):
                out.write(f"{x},{y},{k},v{k}\n")
PYEOF
}

# rewrite_state DATA_CSV: which of those files the array shows whole (K),
# "old" before any of them, or "mixed" (data.csv columns x,y,a,s; the
# values written by rewrite_csvs are never quoted).
rewrite_state() {
  awk -F, 'NR > 1 { n++; if (!($3 in as)) { as[$3]; na++; a = $3 }
                    if (!($4 in ss)) { ss[$4]; ns++; s = $4 } }
           END { if (n != 10000) print "old"
                 else if (na == 1 && ns == 1 && s == "v" a) print a
                 else print "mixed" }' "$1"
}

# The real TileDB (../shared/reference/tiledb), where it is there.
REF=${REF:-$CORPUS/../../reference/tiledb}

# same_in_tiledb ARRAY: tfs and real TileDB read the same schema, metadata
# and cells (skipped where the reference is not there).
same_in_tiledb() {
  [ -x "$REF" ] || return 0
  "$REF" dump "$1" >"$WORK/ref.json" 2>"$WORK/ref.err" ||
    fail "tiledb dump $1: $(head -3 "$WORK/ref.err")"
  "$TFS" dump "$1" >"$WORK/tfs.json" || fail "tfs dump $1"
  "$PY" - "$WORK/tfs.json" "$WORK/ref.json" <<'PYEOF' || fail "TileDB reads $1 differently"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for k in ("schema", "non_empty_domain", "metadata", "reads"):
    assert a[k] == b[k], (k, a[k], b[k])
PYEOF
}
