#!/usr/bin/env bash
# mount(8) and fstab lines mount through mount.fuse3, which runs tilefs
# (daemonized, options passed with -o) from the system PATH: the build's
# binary is put there for the test (a symlink in /usr/local/sbin, removed
# afterwards) unless a tilefs is installed. The fstab line names the
# program itself (`fuse PROGRAM#SOURCE`), which needs nothing installed.
source "$(dirname "$0")/lib/common.sh"

command -v mount.fuse3 >/dev/null || fail "mount.fuse3 (Debian's fuse3) is missing"
prog=$(cd "$(dirname "$TILEFS")" && pwd)/$(basename "$TILEFS")
mkdir -p "$WORK/mnt" "$WORK/mnt2"
MOUNTS+=("$WORK/mnt" "$WORK/mnt2")

link=
if [ ! -x /usr/bin/tilefs ] && [ ! -e /usr/local/sbin/tilefs ]; then
  [ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to put tilefs in PATH"; exit 77; }
  ln -s "$prog" /usr/local/sbin/tilefs
  link=/usr/local/sbin/tilefs
fi
mount -t fuse.tilefs "$CORPUS" "$WORK/mnt" -o ro,cache=64M || {
  [ -z "$link" ] || rm -f "$link"
  fail "mount -t fuse.tilefs"
}
[ -z "$link" ] || rm -f "$link"
mountpoint -q "$WORK/mnt" || fail "not mounted"
head -n 2 "$WORK/mnt/dense_1d/data.csv" >"$WORK/head" || fail "read through mount -t"
[ "$(head -n 1 "$WORK/head")" = "$(head -n 1 <(cat "$WORK/mnt/dense_1d/data.csv"))" ] || fail "data.csv"
grep -q "$WORK/mnt fuse" /proc/mounts || fail "/proc/mounts has no entry"
umount "$WORK/mnt" || fail "umount"

printf '%s#%s %s fuse ro,cache=64M,whole_max=1000 0 0\n' "$prog" "$CORPUS" "$WORK/mnt2" >"$WORK/fstab"
mount --fstab "$WORK/fstab" "$WORK/mnt2" || fail "mount from an fstab line"
ls "$WORK/mnt2/dense_2d_rowmajor/a" | grep -q 'slice\[1:11,1:13\]' || fail "listing through the fstab mount"
umount "$WORK/mnt2" || fail "umount fstab mount"
pass
