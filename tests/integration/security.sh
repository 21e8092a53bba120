#!/usr/bin/env bash
# What the mount refuses and what it keeps private: odd and overlong
# names, huge selections, deep folders, symlinks out of SOURCE, keys
# (command line, environment, log, listings, extended attributes, core
# files), writes to a read-only mount (every kind), other users under
# allow_other (modes of SOURCE, checked by the kernel), resource caps.
source "$(dirname "$0")/lib/common.sh"

# Another uid must reach the mountpoint (mktemp made WORK 0700).
chmod 755 "$WORK"
src=$WORK/src
outside=$WORK/outside
mkdir -p "$src" "$outside"
copy_corpus "$src" dense_1d sparse_2d_int encrypted dense_big_tile
copy_corpus "$outside" dense_2d_rowmajor
ln -s "$outside/dense_2d_rowmajor" "$src/link_to_array"
ln -s "$outside" "$src/link_to_folder"
ln -s / "$src/link_to_root"
deep=$src
for i in $(seq 1 40); do deep=$deep/level$i; done
mkdir -p "$deep"
cp -r "$CORPUS/dense_1d" "$deep/"
mkdir -m 700 "$src/private"
cp -r "$CORPUS/sparse_2d_int" "$src/private/"

key=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["key_hex"])' "$CORPUS/encrypted.json")
mount_tilefs "$src" "$WORK/m" -o "ro,key=$key,max_cells=30,allow_other"
m=$WORK/m
pid=${PIDS[-1]}

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

# Names: TileDB's own folders (the "__" prefix only reaches the special
# entries, e.g. __fragments), dots, overlong names.
for name in __schema __commits __meta __fragment_meta ... .hidden \
            'a\b' 'slice[..]'; do
  expect_errno ENOENT "$m/dense_1d/$name"
done
expect_errno ENOENT "$m/dense_1d/a/slice[../../etc/passwd]"
expect_errno ENOENT "$m/dense_1d/metadata/..%2F..%2Fetc"
long255=$(printf 'x%.0s' $(seq 1 255))
expect_errno ENOENT "$m/dense_1d/$long255"
expect_errno ENAMETOOLONG "$m/dense_1d/${long255}x"
expect_errno ENAMETOOLONG "$m/dense_1d/a/slice[1:2${long255}]"
expect_errno ENAMETOOLONG "$m/dense_1d/$(printf 'y%.0s' $(seq 1 1200))"
expect_errno ENAMETOOLONG "$m/$(printf 'dense_1d/%.0s' $(seq 1 600))"
grep -q "name of 256 bytes" "$LOG" || fail "no log line for an overlong name"
echo "names: internal ENOENT, > 255 bytes ENAMETOOLONG"

# Selections with huge ranges, strides and numbers.
for sel in '-2147483648:2147483647' '1:99999999999999999999999' \
           '1:101:0' '1:101:-1' '101:1' \
           '1e400:5' 'nan:5' '1:2,1:2'; do
  expect_errno ENOENT "$m/dense_1d/a/slice[$sel]"
done
[ "$(stat -c %s "$m/dense_1d/a/slice[1:101:2147483647]")" = 4 ] ||
  fail "a stride past the end is one cell"
# A step of 2^64 or more is refused (it was taken as 2^64 - 1 before).
expect_errno ENOENT "$m/dense_1d/a/slice[1:101:99999999999999999999]"
[ "$(stat -c %s "$m/dense_1d/a/slice[1:101:18446744073709551615]")" = 4 ] ||
  fail "a stride of 2^64 - 1 is one cell"
[ "$(stat -c %s "$m/dense_1d/a/slice[1:101:7]")" = 60 ] || fail "stride 7"
echo "selections: huge ranges refused, huge strides exact"

# Deep folders work.
rel=${deep#"$src"/}
cmp <(cat "$m/$rel/dense_1d/a/slice[1:21]") \
    <(cat "$m/dense_1d/a/slice[1:21]") || fail "40 folders deep"
find "$m" -maxdepth 45 -name schema.json | grep -q "level40/dense_1d/schema.json" ||
  fail "find does not reach 40 folders deep"

# Symlinks are not followed, in particular not out of SOURCE.
for l in link_to_array link_to_folder link_to_root; do
  expect_errno ENOENT "$m/$l"
  expect_errno ENOENT "$m/$l/schema.json"
  ls "$m" | grep -qx "$l" && fail "symlink $l is listed"
done
echo "symlinks: neither listed nor resolved"

# Resource caps: max_cells=30 (sparse_2d_int has 38 cells, encrypted 30).
expect_errno EFBIG "$m/dense_1d/a/slice[1:32]"
expect_errno EFBIG "$m/dense_1d/data.csv"
[ "$(stat -c %s "$m/dense_1d/a/slice[1:31]")" = 120 ] || fail "30 cells, at the cap"
err=$(cat "$m/sparse_2d_int/a/slice[:].txt" 2>&1 >/dev/null) && fail "38 sparse cells read"
case "$err" in *"File too large"*) ;; *) fail "sparse over the cap: '$err', want EFBIG" ;; esac
cat "$m/encrypted/a/slice[:].txt" | wc -l | grep -qx 30 || fail "30 sparse cells, at the cap"
grep -q "over max_cells=30" "$LOG" || fail "no log line for max_cells"
echo "caps: max_cells refused with EFBIG and a log line"

# max_memory=1M: the caches get half, renderings in flight the rest. A
# stream kept open holds its buffer; a second one that would go over is
# ENOMEM with a log line, and works again once the first is closed.
mount_tilefs "$src" "$WORK/mm" -o ro,max_memory=1M,whole_max=1
"$PY" - "$WORK/mm" <<'PYEOF' || fail "max_memory"
import errno, sys
m = sys.argv[1]
a = open(m + "/dense_big_tile/slice[:].json", "rb", buffering=0)
first = a.read(400000)
try:
    open(m + "/dense_big_tile/data.csv", "rb").read()
    sys.exit("a second rendering went over max_memory")
except OSError as e:
    if e.errno != errno.ENOMEM:
        sys.exit("over max_memory: %s, want ENOMEM" % e)
a.close()
# FUSE sends the release of a closed file after close() returns: the
# buffer is given back a moment later.
import time
for _ in range(40):
    try:
        data = open(m + "/dense_big_tile/data.csv", "rb").read()
        break
    except OSError as e:
        if e.errno != errno.ENOMEM:
            raise
        time.sleep(0.05)
else:
    sys.exit("data.csv still ENOMEM 2 s after the first closed")
if len(data) < 100000:
    sys.exit("data.csv after the first closed")
PYEOF
grep -q "max_memory=1048576" "$LOG" || fail "no log line for max_memory"
echo "caps: max_memory refused with ENOMEM and a log line"

# A tile larger than what max_memory leaves beside the cache (512K of 1M)
# cannot be decoded whole within it: when its filters cut chunks it is
# read a chunk at a time; stored as one chunk, a read of it is ENOMEM
# with a log line, before anything is allocated for it; tiles that fit
# read as usual.
mkdir -p "$WORK/bigsrc"
for chunk in "" ', "max_chunk_size": 0'; do
  name=big; [ -n "$chunk" ] && name=big_one_chunk
  cat >"$WORK/big.json" <<EOF
{"array_type": "dense",
 "attrs": [{"name": "a", "type": "INT32", "filters": ["ZSTD(level=1)"]$chunk}],
 "dims": [{"name": "d", "type": "INT32", "domain": [0, 199999], "tile": 200000}]}
EOF
  "$TFS" create "$WORK/bigsrc/$name" "$WORK/big.json" || fail "tfs create $name"
done
cp -r "$CORPUS/dense_1d" "$WORK/bigsrc/"
seq 0 199999 | awk 'BEGIN { print "d,a" } { print $1 "," 3 * $1 }' >"$WORK/big.csv"
for name in big big_one_chunk; do
  "$TFS" ingest "$WORK/bigsrc/$name" "$WORK/big.csv" </dev/null >/dev/null ||
    fail "tfs ingest $name"
done
mount_tilefs "$WORK/bigsrc" "$WORK/mb" -o ro,max_memory=1M
"$PY" - "$WORK/mb" <<'PYEOF' || fail "a tile over max_memory"
import errno, sys
m = sys.argv[1]
got = open(m + "/big/a/slice[199990:200000].txt", "rb").read().split()
if got != [str(3 * d).encode() for d in range(199990, 200000)]:
    sys.exit("an 800K tile read chunk by chunk: %r" % got)
try:
    open(m + "/big_one_chunk/a/slice[0:10].txt", "rb").read()
    sys.exit("an 800K tile of one chunk was decoded under max_memory=1M")
except OSError as e:
    if e.errno != errno.ENOMEM:
        sys.exit("tile over max_memory: %s, want ENOMEM" % e)
if len(open(m + "/dense_1d/data.csv", "rb").read()) < 1000:
    sys.exit("small tiles under max_memory=1M")
PYEOF
grep -q "tile 0 needs [0-9]* bytes, over the limit of 524288" "$LOG" ||
  fail "no log line for the tile over max_memory: $(tail -3 "$LOG")"
echo "caps: a tile over what max_memory leaves read chunk by chunk, or refused with ENOMEM and a log line"

# Keys: not in the command line, the environment, the log, listings or
# extended attributes, even after reading the encrypted array with them.
cat "$m/encrypted/data.csv" >/dev/null || fail "encrypted array with key="
ls -laR "$m/encrypted" >"$WORK/listing" 2>&1 || true
tr '\0' '\n' </proc/"$pid"/cmdline >"$WORK/cmdline"
grep -qi "$key" "$WORK/cmdline" && fail "key in /proc/$pid/cmdline"
grep -q "key=x" "$WORK/cmdline" || fail "the key option was not overwritten"
tr '\0' '\n' </proc/"$pid"/environ | grep -qi "$key" && fail "key in the environment"
grep -qi "$key" "$LOG" "$WORK/listing" && fail "key in the log or a listing"
"$PY" - "$m/encrypted" "$key" <<'PYEOF' || fail "key in an extended attribute"
import os, sys
root, key = sys.argv[1], sys.argv[2].lower()
raw = bytes.fromhex(key)
for d, dirs, files in os.walk(root):
    for p in [d] + [os.path.join(d, f) for f in files]:
        for name in os.listxattr(p):
            v = os.getxattr(p, name)
            if raw in v or key.encode() in v.lower():
                sys.exit(p + " " + name)
PYEOF
# Nor in the debug log of every request (-d), nor from a keyfile.
printf '* %s\n' "$key" >"$WORK/keys"
chmod 600 "$WORK/keys"
mount_tilefs "$src" "$WORK/md" -d -o "ro,keyfile=$WORK/keys"
cat "$WORK/md/encrypted/data.csv" >/dev/null || fail "encrypted array with keyfile="
grep -q "LOOKUP" "$LOG" || fail "-d logged no requests"
grep -qi "$key" "$LOG" && fail "key in the debug log"
tr '\0' '\n' </proc/"${PIDS[-1]}"/cmdline | grep -qi "$key" && fail "key in cmdline"
echo "keys: not in cmdline, environ, log (-d too), listings, xattrs"

# Read-only: every kind of write is EROFS.
f=$m/dense_1d/schema.json
for what in "touch $m/dense_1d/new.csv" "mkdir $m/dense_1d/newdir" "rm -f $f" \
            "mv $f $m/dense_1d/x.json" "chmod 600 $f" "truncate -s 0 $f" \
            "ln -s x $m/dense_1d/l" "cp /etc/hostname $m/" "rmdir $m/dense_1d/a" \
            "sh -c 'echo x >>$f'" "touch -d 2001-01-01 $f"; do
  err=$(eval "$what" 2>&1) && fail "'$what' succeeded on a read-only mount"
  case "$err" in *"Read-only file system"*) ;;
    *) fail "'$what': '$err', want EROFS" ;; esac
done
for op in 'os.setxattr(p, "user.x", b"1")' 'os.removexattr(p, "user.tilefs.dtype")'; do
  err=$("$PY" -c "import os,sys; p=sys.argv[1]; $op" "$m/dense_1d/a" 2>&1) &&
    fail "$op succeeded"
  case "$err" in *"Read-only file system"*) ;; *) fail "$op: '$err', want EROFS" ;; esac
done
echo "ro: every write EROFS"

# Other users: allow_other (default_permissions implied) shows SOURCE's
# modes; the kernel lets nobody read public arrays, not private ones.
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
  as_nobody cat "$m/dense_1d/a/slice[1:11].txt" >"$WORK/nobody" ||
    fail "nobody cannot read a public array"
  cmp -s "$WORK/nobody" <(cat "$m/dense_1d/a/slice[1:11].txt") ||
    fail "nobody reads other bytes"
  [ "$(stat -c %a "$m/private")" = 500 ] || fail "private folder not 0500"
  if as_nobody cat "$m/private/sparse_2d_int/schema.json" >/dev/null 2>&1; then
    fail "nobody read an array in a 0700 folder"
  fi
  as_nobody ls "$m/private" >/dev/null 2>&1 && fail "nobody listed a 0700 folder"
  cat "$m/private/sparse_2d_int/schema.json" >/dev/null || fail "root reads private"
  echo "allow_other: modes of SOURCE enforced for another uid"
else
  echo "allow_other: skipped (needs root and setpriv)"
fi

# Core files: while keys are loaded the daemon is not dumpable. A control
# process shows that this machine writes core files at all.
mkdir -p "$WORK/cores"
( cd "$WORK/cores" && ulimit -c unlimited &&
  { sleep 30 >/dev/null 2>&1 & echo $! >"$WORK/ctl"; } )
kill -QUIT "$(cat "$WORK/ctl")" 2>/dev/null || true
sleep 0.5
if ls "$WORK/cores" | grep -q core; then
  rm -f "$WORK/cores"/core*
  ( cd "$WORK/cores" && ulimit -c unlimited &&
    mount_tilefs "$src" "$WORK/mk" -o "ro,key=$key" && echo "${PIDS[-1]}" >"$WORK/kpid" )
  kpid=$(cat "$WORK/kpid")
  kill -QUIT "$kpid"
  for _ in $(seq 1 50); do kill -0 "$kpid" 2>/dev/null || break; sleep 0.1; done
  fusermount3 -uz "$WORK/mk" 2>/dev/null || true
  ls "$WORK/cores" | grep -q core && fail "the daemon with a key wrote a core file"
  echo "core files: none while keys are loaded"
else
  echo "core files: skipped (this machine writes none)"
fi
pass
