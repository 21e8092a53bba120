#!/usr/bin/env bash
# Damaged arrays under a mount: tiles under a checksum or AES-GCM tag with
# flipped bits, truncated fragment metadata, a zeroed schema, garbage in
# consolidated fragment metadata. Every file of the mount is read with
# cat: the daemon survives, a damaged read is EIO (never other bytes),
# each failing file has its log line naming it, and the intact arrays
# beside the damaged ones still read exactly.
source "$(dirname "$0")/lib/common.sh"

src=$WORK/src
copy_corpus "$src" filter_checksum_md5 filter_checksum_sha256 encrypted \
  dense_1d sparse_2d_int consolidated_fragment_meta dense_2d_rowmajor
key=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["key_hex"])' "$CORPUS/encrypted.json")

# mutate FILE OP: flip (8 bits spread over the middle), trunc (to 60%),
# zero (bytes 8..40 of the file).
mutate() {
  "$PY" - "$1" "$2" <<'PYEOF'
import sys
path, op = sys.argv[1], sys.argv[2]
b = bytearray(open(path, "rb").read())
if op == "flip":
    for i in range(8):
        b[len(b) // 3 + i * (len(b) // 24)] ^= 0x10
elif op == "trunc":
    b = b[: len(b) * 6 // 10]
elif op == "zero":
    b[8:40] = bytes(32)
open(path, "wb").write(b)
PYEOF
}
one() { find "$src/$1" -path "$2" -type f | sort | head -1; }
mutate "$(one filter_checksum_md5 '*/__fragments/*/a0.tdb')" flip
mutate "$(one filter_checksum_sha256 '*/__fragments/*/a0.tdb')" flip
mutate "$(one encrypted '*/__fragments/*/a0.tdb')" flip
mutate "$(one dense_1d '*/__fragment_metadata.tdb')" trunc
mutate "$(one sparse_2d_int '*/__schema/*')" zero
mutate "$(one consolidated_fragment_meta '*/__fragment_meta/*')" flip

mount_tilefs "$src" "$WORK/m" -o "ro,key=$key"
m=$WORK/m
pid=${PIDS[-1]}
ok=0
eio=0
other=0
: >"$WORK/failed"
while IFS= read -r -d '' f; do
  if err=$(timeout 60 cat "$f" 2>&1 >/dev/null); then
    ok=$((ok + 1))
  else
    case "$err" in
      *"Input/output error"*) eio=$((eio + 1)); echo "${f#"$m"}" >>"$WORK/failed" ;;
      *) other=$((other + 1)); echo "other error: $err" ;;
    esac
  fi
done < <(find "$m" -type f -print0 2>/dev/null)
kill -0 "$pid" 2>/dev/null && mountpoint -q "$m" || fail "the daemon died"
echo "cat of every file: $ok read, $eio EIO, $other other errors"
[ "$other" -eq 0 ] || fail "errors other than EIO"
[ "$eio" -gt 0 ] || fail "no damaged file gave EIO"
# The damaged tiles are under checksums and tags: their files fail, and
# nothing of them reads.
for a in filter_checksum_md5 filter_checksum_sha256 encrypted; do
  grep -q "^/$a/data.csv" "$WORK/failed" || fail "$a/data.csv read despite damage"
done
# One log line per failing file, naming it (a stat, an open and a read
# may each say why; never more).
while IFS= read -r f; do
  n=$(grep -cF "'$f'" "$LOG" || true)
  [ "$n" -ge 1 ] || fail "no log line for $f"
  [ "$n" -le 3 ] || fail "$n log lines for $f"
done <"$WORK/failed"
grep -q "checksum" "$LOG" || fail "no log line says checksum"
# The intact arrays beside them.
cat "$m/dense_2d_rowmajor/data.csv" >"$WORK/intact.csv" || fail "intact array"
"$PY" "$HERE/check_csv.py" "$WORK/intact.csv" "$CORPUS/dense_2d_rowmajor.json" ||
  fail "the intact array reads other bytes"
pass
