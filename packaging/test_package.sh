#!/usr/bin/env bash
# The Debian package end to end: builds it with cpack, installs it on this
# machine (dpkg -i), checks the files it installed and `tilefs --version`,
# makes a small array with the installed `tfs`, mounts it the way fstab
# does (mount -t fuse.tilefs, through Debian's mount.fuse3), reads a file,
# unmounts, then removes and purges the package and checks that nothing is
# left. Needs root; skips (77) where tilefs is installed otherwise.
#   usage: packaging/test_package.sh [BUILD_DIR]
# BUILD_DIR: a configured and built tree to package (default: a fresh
# build without tests in a temporary folder).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-}

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || skip "needs root (dpkg -i)"
for tool in cpack dpkg dpkg-deb dpkg-shlibdeps mount.fuse3; do
  command -v "$tool" >/dev/null || skip "$tool is missing"
done
dpkg -s tilefs >/dev/null 2>&1 && skip "a tilefs package is installed already"
[ -e /usr/bin/tilefs ] || [ -e /usr/bin/tfs ] && skip "/usr/bin has a tilefs or tfs"

work=$(mktemp -d)
installed=
cleanup() {
  if mountpoint -q "$work/mnt" 2>/dev/null; then
    umount "$work/mnt" || fusermount3 -u "$work/mnt" || true
  fi
  if [ -n "$installed" ] && dpkg -s tilefs >/dev/null 2>&1; then
    dpkg --purge tilefs >/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
start=$(date +%s)

if [ -z "$build" ]; then
  build=$work/build
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DBUILD_TESTING=OFF >/dev/null
  cmake --build "$build" -j "${TFS_JOBS:-2}" >/dev/null
fi
(cd "$build" && cpack -G DEB -B "$work/pkg" >"$work/cpack.log" 2>&1) || fail "cpack -G DEB: $(tail -n 5 "$work/cpack.log")"
deb=$(ls "$work"/pkg/tilefs_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || fail "no tilefs_*.deb in $work/pkg"
echo "built $(basename "$deb")"

# What the package holds and depends on.
dpkg-deb --contents "$deb" >"$work/contents"
for f in ./usr/bin/tilefs ./usr/bin/tfs ./usr/share/man/man1/tilefs.1.gz \
         ./usr/share/man/man1/tfs.1.gz \
         ./usr/share/doc/tilefs/examples/mnt-arrays.mount; do
  grep -q " $f\$" "$work/contents" || fail "package lacks $f"
done
depends=$(dpkg-deb --field "$deb" Depends)
for dep in fuse3 libzstd1 libfuse3; do
  echo "$depends" | grep -q "$dep" || fail "Depends lacks $dep: $depends"
done

dpkg -i "$deb" >/dev/null || fail "dpkg -i"
installed=1
[ "$(command -v tilefs)" = /usr/bin/tilefs ] || fail "tilefs is not /usr/bin/tilefs"
tilefs --version | grep -q '^tilefs 0\.1\.0' || fail "tilefs --version: $(tilefs --version)"
tfs --version | grep -q '^tfs 0\.1\.0' || fail "tfs --version"
zcat /usr/share/man/man1/tilefs.1.gz | grep -q '^\.SH SELECTIONS' || fail "tilefs(1)"
zcat /usr/share/man/man1/tfs.1.gz | grep -q '^\.SS "tfs ingest' || fail "tfs(1)"

# The example mount unit is a valid unit (its man page link included).
if command -v systemd-analyze >/dev/null; then
  cp /usr/share/doc/tilefs/examples/mnt-arrays.mount "$work/"
  out=$(systemd-analyze verify "$work/mnt-arrays.mount" 2>&1) || fail "systemd-analyze verify: $out"
  [ -z "$out" ] || fail "systemd-analyze verify: $out"
fi

# A demo array written by the installed tool, mounted as fstab would.
mkdir -p "$work/arrays" "$work/mnt"
printf 'city,temp,rain\nOslo,3.5,true\nLima,19.25,false\nPune,31,\n' >"$work/w.csv"
tfs ingest "$work/arrays/weather" "$work/w.csv" --new --quiet || fail "tfs ingest --new"
mount -t fuse.tilefs "$work/arrays" "$work/mnt" -o ro,cache=32M || fail "mount -t fuse.tilefs"
grep -q " $work/mnt fuse.tilefs " /proc/mounts || fail "/proc/mounts: $(grep "$work/mnt" /proc/mounts)"
cat "$work/mnt/weather/data.csv" >"$work/mounted.csv" || fail "reading data.csv"
tfs export "$work/arrays/weather" >"$work/exported.csv" || fail "tfs export"
cmp -s "$work/mounted.csv" "$work/exported.csv" || fail "mount and export differ"
grep -q '^2,Pune,31,$' "$work/mounted.csv" || fail "data.csv: $(cat "$work/mounted.csv")"
umount "$work/mnt" || fail "umount"

dpkg -r tilefs >/dev/null || fail "dpkg -r"
[ ! -e /usr/bin/tilefs ] && [ ! -e /usr/bin/tfs ] || fail "binaries left after dpkg -r"
dpkg --purge tilefs >/dev/null 2>&1 || fail "dpkg --purge"
dpkg -s tilefs >/dev/null 2>&1 && fail "still known to dpkg after purge"
[ ! -e /usr/share/man/man1/tilefs.1.gz ] || fail "man page left"
installed=
echo "package: PASS ($(($(date +%s) - start)) s)"
