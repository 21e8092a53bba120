#!/usr/bin/env bash
# Errors users see: an encrypted array without its key is EACCES with a
# log line, with the key it reads exactly; bad selections are ENOENT and
# one log line saying why; writes to a read-only mount are EROFS; the key
# is not left in the daemon's command line.
source "$(dirname "$0")/lib/common.sh"

# --version, --help, and bad options refused before mounting.
"$TILEFS" --version | grep -q '^tilefs [0-9]' || fail "--version"
"$TILEFS" --help >"$WORK/help" || fail "--help exit status"
for opt in ro key= keyfile= cache= threads= timestamp= whole_max= max_cells= max_memory=; do
  grep -q -- "$opt" "$WORK/help" || fail "--help does not mention $opt"
done
for bad in cache=lots threads=0 timestamp=yesterday key=abc max_cells=0 \
           max_cells=many max_memory=100k; do
  mkdir -p "$WORK/never"
  if timeout 10 "$TILEFS" -f -o "$bad" "$CORPUS" "$WORK/never" 2>"$WORK/err"; then
    fail "-o $bad was accepted"
  fi
  grep -q "${bad%%=*}" "$WORK/err" || fail "-o $bad: no message naming it"
done

key=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["key_hex"])' "$CORPUS/encrypted.json")

mount_tilefs "$CORPUS" "$WORK/nokey"
nokey_log=$LOG
if out=$(cat "$WORK/nokey/encrypted/data.csv" 2>&1); then
  fail "encrypted array read without a key"
fi
case "$out" in *"Permission denied"*) ;; *) fail "no key: '$out', want EACCES" ;; esac
grep -q "encrypted.*no key" "$nokey_log" || fail "no log line for the missing key"

mount_tilefs "$CORPUS" "$WORK/key" -o ro,key="$key"
cat "$WORK/key/encrypted/data.csv" >"$WORK/enc.csv" || fail "encrypted with key"
"$PY" "$HERE/check_csv.py" "$WORK/enc.csv" "$CORPUS/encrypted.json" || fail "encrypted differs"
pid=${PIDS[-1]}
if tr '\0' ' ' </proc/"$pid"/cmdline | grep -q "$key"; then
  fail "the key is visible in /proc/$pid/cmdline"
fi
if grep -q "$key" "$LOG"; then
  fail "the key is in the log"
fi
if echo x 2>/dev/null >"$WORK/key/dense_1d/new.csv"; then
  fail "wrote to a read-only mount"
fi
err=$( (echo x >"$WORK/key/dense_1d/new.csv") 2>&1 || true)
case "$err" in *"Read-only file system"*) ;; *) fail "ro write: '$err', want EROFS" ;; esac

a=$WORK/nokey/dense_2d_rowmajor
bad=(
  "a/slice[abc]"             # not a number
  "a/slice[1:5,1:5,1:5]"     # too many ranges
  "a/slice[5:1]"             # lo > hi
  "a/slice[0:500]"           # outside the domain
  "a/slice[1:5].offsets"     # not var-size
  "a/slice[1:5"              # no closing bracket
  "a/slice[1:5].xlsx"        # unknown format
  "a/slice[1:5:0]"           # zero step
  'a/slice["1":5]'           # a string for an integer
  "slice[1:5].txt"           # array-level slices are csv/json/npy
)
for b in "${bad[@]}"; do
  if err=$(cat "$a/$b" 2>&1); then
    fail "bad selection '$b' was readable"
  fi
  case "$err" in *"No such file"*) ;; *) fail "'$b': '$err', want ENOENT" ;; esac
done
for why in "not a value" "more ranges than" "lo > hi" "outside the domain" \
           "no offsets" "step must be" "array-level slices"; do
  grep -q "$why" "$nokey_log" || fail "no log line saying '$why'"
done
echo "bad selections: ENOENT with a log line each"

# -d logs every request.
mount_tilefs "$CORPUS" "$WORK/debug" -d
ls "$WORK/debug/dense_1d" >/dev/null
grep -q "LOOKUP" "$LOG" || fail "-d logged no requests"
pass
