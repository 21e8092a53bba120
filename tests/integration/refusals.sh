#!/usr/bin/env bash
# What the mount refuses says so, in an error and a log line: selections
# wholly outside the domain (ENOENT), steps of 2^64 or more (ENOENT),
# files of 2^63 bytes or more (EFBIG), CSV names without an array name,
# keyfiles others may read (unless keyfile_insecure), a wrong key. Names
# are escaped in the log and in ingest.log (no forged lines). Staging
# folders of crashed daemons are removed by the next mount.
source "$(dirname "$0")/lib/common.sh"
: "${TFS:?TFS must name the tfs tool}"

src=$WORK/src
mkdir -p "$src" "$WORK/tmp"
copy_corpus "$src" dense_1d encrypted
export TMPDIR=$WORK/tmp

# errno_of PATH: the errno name of stat(PATH), or OK.
errno_of() {
  "$PY" - "$1" <<'PYEOF'
import errno, os, sys
try:
    os.stat(sys.argv[1])
    print("OK")
except OSError as e:
    print(errno.errorcode[e.errno])
PYEOF
}
expect_errno() {
  local want=$1 path=$2 got
  got=$(errno_of "$path")
  [ "$got" = "$want" ] || fail "stat '${path:0:120}': $got, want $want"
}
# logged TEXT: the daemon's log has a line with TEXT (fixed string).
logged() {
  for _ in $(seq 1 40); do
    grep -qF -- "$1" "$LOG" && return 0
    sleep 0.05
  done
  fail "no log line with '$1'"
}

# ---- Staging of a crashed daemon ------------------------------------------
mount_tilefs "$src" "$WORK/m0"
pid=${PIDS[-1]}
exec 3>"$WORK/m0/dense_1d/half.csv"
printf 'd,a,b\n' >&3
staged=$(ls -d "$WORK/tmp"/tilefs-staging.* 2>/dev/null | head -1)
[ -n "$staged" ] || fail "no staging folder in TMPDIR"
[ -n "$(ls "$staged")" ] || fail "nothing staged in $staged"
[ "$(stat -c %a "$staged")" = 700 ] || fail "staging folder not 0700"
kill -9 "$pid"
exec 3>&-
fusermount3 -uz "$WORK/m0" 2>/dev/null || true
for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
[ -d "$staged" ] || fail "the crashed daemon's staging folder is already gone"
# A live daemon's folder (this shell's pid) is not touched.
mkdir "$WORK/tmp/tilefs-staging.$$.abcdef"
: >"$WORK/tmp/tilefs-staging.$$.abcdef/tilefs.$$.1"

m=$WORK/m
key=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["key_hex"])' "$CORPUS/encrypted.json")
wrong=$(printf '%s' "$key" | tr '0-9a-f' '1-9a-f0')
mount_tilefs "$src" "$m" -o "key=$wrong"
logged "of a crashed daemon removed"
[ ! -e "$staged" ] || fail "the staging folder of a crashed daemon stayed: $(ls -la "$staged")"
[ -e "$WORK/tmp/tilefs-staging.$$.abcdef/tilefs.$$.1" ] ||
  fail "a live daemon's staging folder was emptied"
# staging= inside SOURCE is refused.
mkdir -p "$src/stage" "$WORK/ms"
if "$TILEFS" -o "staging=$src/stage" "$src" "$WORK/ms" >"$WORK/ms.out" 2>&1; then
  fusermount3 -u "$WORK/ms" 2>/dev/null || true
  fail "staging= inside SOURCE was taken"
fi
grep -q "inside SOURCE" "$WORK/ms.out" || fail "staging= inside SOURCE: $(cat "$WORK/ms.out")"
rmdir "$src/stage"

# A refused write leaves nothing staged.
live=$(ls -d "$WORK/tmp/tilefs-staging.${PIDS[-1]}".*)
printf 'd,a,b\n1,notanumber,2\n' >"$WORK/bad.csv"
cp "$WORK/bad.csv" "$m/dense_1d/bad.csv" 2>/dev/null && fail "a bad CSV was taken"
empty_soon "$live" || fail "a refused write left $(ls -A "$live")"
echo "staging: a crashed daemon's folder removed at the next mount, nothing left by a refusal"

# ---- Selections ------------------------------------------------------------
for sel in ':-65536' '-2147483648:-2147483648' '0:1' '200:' '::18446744073709551616'; do
  expect_errno ENOENT "$m/dense_1d/a/slice[$sel].csv"
done
logged "/dense_1d/a/slice[:-65536].csv': range 1: outside the domain"
logged "step must be below 2^64"
# An empty range at the domain's edge is still an empty file.
expect_errno OK "$m/dense_1d/a/slice[:1].csv"
expect_errno OK "$m/dense_1d/a/slice[::18446744073709551615].csv"

cat >"$WORK/huge.json" <<'EOF'
{
  "array_type": "dense",
  "schema": {
    "dims": [{"name": "d", "type": "INT64", "domain": [0, 4611686018427387903], "tile": 1024}],
    "attrs": [{"name": "a", "type": "INT64", "cell_val_num": 1, "nullable": false}],
    "capacity": 1000
  }
}
EOF
"$TFS" create "$src/huge" "$WORK/huge.json" >/dev/null || fail "tfs create huge"
# 2^60 cells of 8 bytes: 2^63 bytes. One cell less fits.
expect_errno EFBIG "$m/huge/a/slice[0:1152921504606846976]"
logged "2^63 bytes or more"
[ "$(stat -c %s "$m/huge/a/slice[0:1152921504606846975]")" = 9223372036854775800 ] ||
  fail "2^63 - 8 bytes: wrong size"
echo "selections: outside the domain ENOENT, 2^63 bytes EFBIG, with log lines"

# ---- Names -----------------------------------------------------------------
printf 'd,a,b,c\n' >"$WORK/x.csv"
for name in ..csv ...csv; do
  if cp "$WORK/x.csv" "$m/dense_1d/$name" 2>/dev/null; then
    fail "cp to '$name' succeeded"
  fi
  logged "'$name': a CSV file needs a name"
done
if cp "$WORK/x.csv" "$m/..csv" 2>/dev/null; then
  fail "cp to '/..csv' succeeded"
fi
# A newline in a name: one escaped line in the log and in ingest.log.
printf 'a,b\n1,2\n' >"$WORK/nl.csv"
nl_name=$'new\ntilefs: forged line.csv'
cp "$WORK/nl.csv" "$m/$nl_name" || fail "cp of a name with a newline"
logged 'new\ntilefs: forged line'
grep -q '^tilefs: forged' "$LOG" && fail "a file name forged a log line"
ilog=$(cat "$m/ingest.log")
[ "$(printf '%s\n' "$ilog" | grep -c .)" = 1 ] || fail "ingest.log: $ilog"
printf '%s\n' "$ilog" | grep -qF 'new\ntilefs: forged line.csv' ||
  fail "ingest.log does not show the escaped name: $ilog"
echo "names: refused CSV names fail with a log line, newlines escaped"

# ---- Keys ------------------------------------------------------------------
if cat "$m/encrypted/data.csv" >/dev/null 2>&1; then
  fail "read an encrypted array with a wrong key"
fi
logged "wrong encryption key"
grep -q "no key was given" "$LOG" && fail "a wrong key reported as no key"

printf 'encrypted %s\n' "$key" >"$WORK/keys"
mkdir -p "$WORK/mk"
chmod 644 "$WORK/keys"
if "$TILEFS" -o "ro,keyfile=$WORK/keys" "$src" "$WORK/mk" >"$WORK/mk.out" 2>&1; then
  fusermount3 -u "$WORK/mk" 2>/dev/null || true
  fail "a world-readable keyfile was taken"
fi
grep -q "lets group or others read or write it" "$WORK/mk.out" ||
  fail "refusal does not say why: $(cat "$WORK/mk.out")"
mount_tilefs "$src" "$WORK/mi" -o "ro,keyfile=$WORK/keys,keyfile_insecure"
grep -q "allowed by keyfile_insecure" "$LOG" || fail "keyfile_insecure: no log line"
head -c 1 "$WORK/mi/encrypted/data.csv" >/dev/null || fail "keyfile_insecure: no read"
for bad in "$WORK" "$WORK/nokeys"; do
  if "$TILEFS" -o "ro,keyfile=$bad" "$src" "$WORK/mk" >"$WORK/mk.out" 2>&1; then
    fusermount3 -u "$WORK/mk" 2>/dev/null || true
    fail "keyfile '$bad' was taken"
  fi
  grep -q -e "not a regular file" -e "no such file" "$WORK/mk.out" ||
    fail "keyfile '$bad': $(cat "$WORK/mk.out")"
done
# A keyfile the daemon's user cannot read says so (the check comes before
# any mounting, so an unprivileged daemon gets that far).
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  chmod 600 "$WORK/keys"
  if setpriv --reuid=65534 --regid=65534 --clear-groups \
      "$TILEFS" -o "ro,keyfile=$WORK/keys" /tmp /tmp >"$WORK/mk.out" 2>&1; then
    fail "an unreadable keyfile was taken"
  fi
  grep -q "keyfile '$WORK/keys': cannot be read by uid 65534: Permission denied" "$WORK/mk.out" ||
    fail "unreadable keyfile: $(cat "$WORK/mk.out")"
fi
echo "keys: wrong key said, unsafe keyfile refused unless keyfile_insecure"
pass
