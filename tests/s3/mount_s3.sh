#!/usr/bin/env bash
# A bucket mounted like a folder (runs under with_s3.sh): arrays copied in
# with s3cmd read through the mount exactly as from a local folder; a CSV
# written through one mount is seen by a second mount of the same bucket
# within 2 s, and concurrent writes through both become two fragments;
# what tilefs wrote, copied back to a folder, opens in real TileDB (when
# ../shared/reference is there); bad credentials, a missing bucket and an
# unreachable endpoint fail the mount at once with one clear message; a
# bucket mounts from an fstab line and with mount -t fuse.tilefs.
source "$(dirname "$0")/../integration/lib/common.sh"
: "${TFS_S3_TEST_URI:?run under with_s3.sh}"
REF=${REF:-$CORPUS/../../reference/tiledb}
uri=${TFS_S3_TEST_URI%/}/mount

copy_corpus "$WORK/src" dense_1d sparse_2d_int
s3cmd -c "$S3CMD_CONFIG" sync -q --no-progress "$WORK/src/" "$uri/" ||
	fail "s3cmd sync"

mount_tilefs "$WORK/src" "$WORK/local"
mount_tilefs "$uri" "$WORK/a"
mount_tilefs "$uri" "$WORK/b"

# ---- reads equal a local folder's ---------------------------------------------
for arr in dense_1d sparse_2d_int; do
	diff -r "$WORK/local/$arr" "$WORK/a/$arr" >"$WORK/diff.txt" 2>&1 ||
		fail "$arr differs through the bucket: $(head -5 "$WORK/diff.txt")"
done
df "$WORK/a" >/dev/null || fail "statfs of the bucket mount"
echo "reads through the bucket equal the local folder"

# ---- mount(8): an fstab line and mount -t fuse.tilefs --------------------------
# Both go through mount.fuse3, which runs tilefs with the -o options; the
# endpoint and region come as options (an fstab line has no environment
# of its own), the keys from the environment as the AWS tools read them.
prog=$(cd "$(dirname "$TILEFS")" && pwd)/$(basename "$TILEFS")
mkdir -p "$WORK/fstab" "$WORK/mount_t"
MOUNTS+=("$WORK/fstab" "$WORK/mount_t")
printf '%s#%s %s fuse ro,s3_endpoint=%s,s3_region=%s 0 0\n' "$prog" "$uri" \
	"$WORK/fstab" "$AWS_ENDPOINT_URL" "$AWS_REGION" >"$WORK/fstab.txt"
mount --fstab "$WORK/fstab.txt" "$WORK/fstab" || fail "mount of a bucket from an fstab line"
diff -r "$WORK/local/dense_1d" "$WORK/fstab/dense_1d" >"$WORK/diff.txt" 2>&1 ||
	fail "the fstab mount differs: $(head -5 "$WORK/diff.txt")"
umount "$WORK/fstab" || fail "umount of the fstab mount"
link=
if [ ! -x /usr/bin/tilefs ] && [ ! -e /usr/local/sbin/tilefs ]; then
	ln -s "$prog" /usr/local/sbin/tilefs
	link=/usr/local/sbin/tilefs
fi
mount -t fuse.tilefs "$uri" "$WORK/mount_t" -o "ro,s3_endpoint=$AWS_ENDPOINT_URL" || {
	[ -z "$link" ] || rm -f "$link"
	fail "mount -t fuse.tilefs of a bucket"
}
[ -z "$link" ] || rm -f "$link"
diff -r "$WORK/local/sparse_2d_int" "$WORK/mount_t/sparse_2d_int" >"$WORK/diff.txt" 2>&1 ||
	fail "the mount -t mount differs: $(head -5 "$WORK/diff.txt")"
umount "$WORK/mount_t" || fail "umount of the mount -t mount"
echo "a bucket mounts from an fstab line and with mount -t fuse.tilefs"

# ---- a write through a is seen through b within 2 s ---------------------------
cat "$WORK/b/dense_1d/data.csv" >/dev/null
printf 'a,d,b\n1000,5,0.5\n1001,6,0.25\n' >"$WORK/in1.csv"
cp "$WORK/in1.csv" "$WORK/a/dense_1d/" || fail "cp into the bucket mount"
grep -q 'in1.csv  ok: 2 rows' "$WORK/a/dense_1d/ingest.log" ||
	fail "ingest.log: $(cat "$WORK/a/dense_1d/ingest.log")"
seen=0
for _ in $(seq 1 20); do
	if grep -q '^5,1000,0.5$' "$WORK/b/dense_1d/data.csv"; then
		seen=1
		break
	fi
	sleep 0.1
done
[ "$seen" = 1 ] || fail "the write through a is not seen through b after 2 s"
echo "a write through one mount is seen through the other within 2 s"

# ---- objects as TileDB lays them out: no folder markers, commit last ----------
s3cmd -c "$S3CMD_CONFIG" ls -r "$uri/dense_1d/" >"$WORK/keys.txt"
grep -q '/$' "$WORK/keys.txt" && fail "folder marker objects: $(grep '/$' "$WORK/keys.txt")"
[ "$(grep -c '__commits/.*\.wrt$' "$WORK/keys.txt")" -eq 2 ] ||
	fail "want 2 commit objects: $(cat "$WORK/keys.txt")"

# ---- concurrent writes through both mounts: two fragments ----------------------
printf 'a,d,b\n7,50,7.5\n' >"$WORK/c1.csv"
printf 'a,d,b\n8,60,8.5\n' >"$WORK/c2.csv"
cp "$WORK/c1.csv" "$WORK/a/dense_1d/" &
p1=$!
cp "$WORK/c2.csv" "$WORK/b/dense_1d/" &
p2=$!
wait "$p1" || fail "concurrent cp through a"
wait "$p2" || fail "concurrent cp through b"
sleep 1.2
for m in a b; do
	n=$(ls "$WORK/$m/dense_1d/fragments" | wc -l)
	[ "$n" -eq 4 ] || fail "$m: $n fragments after two concurrent writes, want 4"
	grep -q '^50,7,7.5$' "$WORK/$m/dense_1d/data.csv" || fail "$m: c1 lost"
	grep -q '^60,8,8.5$' "$WORK/$m/dense_1d/data.csv" || fail "$m: c2 lost"
done
echo "concurrent writes through two mounts: two fragments, nothing lost"

# ---- copied back to a folder, it opens in real TileDB -------------------------
if [ -x "$REF" ]; then
	mkdir -p "$WORK/back"
	s3cmd -c "$S3CMD_CONFIG" get -q -r "$uri/dense_1d" "$WORK/back/" ||
		fail "s3cmd get"
	"$REF" dump "$WORK/back/dense_1d" >"$WORK/ref.json" 2>"$WORK/ref.err" ||
		fail "tiledb dump of the copy: $(head -3 "$WORK/ref.err")"
	"$PY" - "$WORK/ref.json" <<'PYEOF' || fail "tiledb reads the written cells wrong"
import json, sys
doc = json.load(open(sys.argv[1]))
text = json.dumps(doc)
for v in ("1000", "1001"):
    assert v in text, v
PYEOF
	echo "written through the bucket, copied back: real TileDB opens it"
fi

# ---- clear errors at mount ------------------------------------------------------
printf '[default]\naws_access_key_id = nobody\naws_secret_access_key = wrong\n' \
	>"$WORK/badcred"
check_refused() {
	local what=$1 want=$2
	shift 2
	mkdir -p "$WORK/x"
	if timeout 60 "$TILEFS" -f "$@" "$WORK/x" >"$WORK/x.log" 2>&1; then
		fusermount3 -u "$WORK/x" 2>/dev/null || true
		fail "$what: mounted"
	fi
	grep -q "$want" "$WORK/x.log" || fail "$what: message: $(cat "$WORK/x.log")"
	grep -q 'wrong' "$WORK/x.log" && fail "$what: the secret is in the message"
	echo "$what: refused ($(head -1 "$WORK/x.log"))"
}
check_refused "bad credentials" "check the credentials" \
	-o s3_credentials="$WORK/badcred" "$uri"
check_refused "missing bucket" "no such bucket" "s3://tfs-no-such-bucket/x"
check_refused "unreachable endpoint" "unreachable" \
	-o s3_endpoint=http://127.0.0.1:1 "$uri"
pass
