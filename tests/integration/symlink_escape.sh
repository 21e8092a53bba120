#!/usr/bin/env bash
# Nothing outside SOURCE, ever: an unprivileged user who may write in
# SOURCE plants symbolic links into a root-only array outside it, and
# tries through an allow_other mount to read it, write to it, and make
# the mount-time cleanup delete in it. Every trick: a folder whose
# __schema, __fragments, __commits, __meta are links, a linked array
# folder, a linked fragment folder and linked tile files inside real
# arrays, a link in a group. None may show a byte of the outside array
# or change it (a checksum of its whole tree), and the daemon logs what
# it refused.
source "$(dirname "$0")/lib/common.sh"

if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
  echo "SKIP: needs root and setpriv"
  exit 77
fi
: "${TFS:?TFS must name the tfs tool}"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

chmod 755 "$WORK"
secret=$WORK/secret
src=$WORK/src
mkdir -m 700 "$secret"
mkdir -m 1777 "$src"

# The outside array: a base fragment, then one with the marker values.
printf 'a,s\n5,publicvaluexx\n6,publicvalueyy\n' >"$WORK/base.csv"
printf 'row,a,s\n1,987654321,TOPSECRETVAL\n' >"$WORK/marker.csv"
printf 'row,a,s\n1,123456789,DECOYDECOYDE\n' >"$WORK/decoy.csv"
"$TFS" ingest "$secret/arr" "$WORK/base.csv" --new >/dev/null
# The user's own arrays share the schema and the base fragment.
for own in own_frag own_tile; do
  cp -r "$secret/arr" "$src/$own"
done
"$TFS" ingest "$secret/arr" "$WORK/marker.csv" >/dev/null
"$TFS" ingest "$src/own_tile" "$WORK/decoy.csv" >/dev/null
mfrag=$(cd "$secret/arr/__fragments" && ls -t | head -1)
dfrag=$(cd "$src/own_tile/__fragments" && ls -t | head -1)
# A crashed write's leftover in the outside array: only cleanup through
# a link would remove it.
cp -r "$secret/arr/__fragments/$mfrag" \
  "$secret/arr/__fragments/__1_1_0123456789abcdef0123456789abcdef_22"
# A TileDB group of the user's, whose member folder becomes a link.
cp -r "$CORPUS/group" "$src/realgrp"
chmod -R u+w "$src/realgrp"
chown -R nobody "$src/own_frag" "$src/own_tile" "$src/realgrp"
# An array of root's (0755): the user may read it, not write to it.
cp -r "$src/own_frag" "$src/rootarr"
chown -R root "$src/rootarr"
chmod -R go-w "$src/rootarr"
mkdir -p "$secret/grp"

sum_secret() {
  (cd "$secret" && find . -printf '%p %y %s %m\n' | sort &&
     find . -type f -exec sha256sum {} + | sort) | sha256sum
}
before=$(sum_secret)

# The user's tricks, all made as that user.
as_nobody bash -eu -c '
  src=$1 secret=$2 mfrag=$3 dfrag=$4
  mkdir "$src/evil"
  for d in __schema __fragments __commits __meta __fragment_meta; do
    ln -s "$secret/arr/$d" "$src/evil/$d"
  done
  ln -s "$secret/arr" "$src/linked_array"
  ln -s "$secret" "$src/linked_folder"
  ln -s "$secret/arr/__fragments/$mfrag" "$src/own_frag/__fragments/$mfrag"
  ln -s "$secret/arr/__commits/$mfrag.wrt" "$src/own_frag/__commits/$mfrag.wrt"
  for f in "$src/own_tile/__fragments/$dfrag"/*.tdb; do
    case $f in */__fragment_metadata.tdb) continue ;; esac
    rm "$f"
    ln -s "$secret/arr/__fragments/$mfrag/$(basename "$f")" "$f"
  done
  mkdir "$src/grp"
  ln -s "$secret/arr" "$src/grp/member"
  rm -rf "$src/realgrp/dense_member"
  ln -s "$secret/arr" "$src/realgrp/dense_member"
' _ "$src" "$secret" "$mfrag" "$dfrag"

m=$WORK/m
mount_tilefs "$src" "$m" -o allow_other,cleanup_grace=1
for _ in $(seq 1 200); do
  grep -q 'cleanup: .* checked' "$LOG" && break
  sleep 0.05
done

leaks=0
# try WHAT CMD...: runs CMD as the user; its output must not show the
# marker (whether it fails or not).
try() {
  local what=$1 out
  shift
  out=$(as_nobody "$@" 2>&1 | tr -d '\\0' || true)
  if printf '%s' "$out" | grep -q -e 987654321 -e TOPSECRETVAL; then
    echo "LEAK: $what" >&2
    leaks=$((leaks + 1))
  fi
}
for p in evil linked_array linked_folder/arr grp/member realgrp/dense_member \
         own_frag own_tile; do
  try "$p: data.csv" cat "$m/$p/data.csv"
  try "$p: a/slice[:].csv" cat "$m/$p/a/slice[:].csv"
  try "$p: s/slice[:].csv" cat "$m/$p/s/slice[:].csv"
  try "$p: a/slice[:]" od -An -td4 "$m/$p/a/slice[:]"
  try "$p: ls" ls -R "$m/$p"
done
try "listing of SOURCE" ls -laR "$m"
try "grep of the tree" grep -r -a -e 987654321 -e TOPSECRETVAL "$m"

# Writes through the links: a CSV into each, a schema, metadata.
for p in evil linked_array linked_folder/arr grp/member realgrp/dense_member; do
  as_nobody cp "$WORK/marker.csv" "$m/$p/w.csv" 2>/dev/null || true
done
as_nobody mkdir "$m/linked_folder/newdir" 2>/dev/null || true
as_nobody rmdir "$m/linked_folder/grp" 2>/dev/null || true
as_nobody cp "$WORK/decoy.csv" "$m/own_frag/more.csv" 2>/dev/null || true

# Writes through allow_other are checked against SOURCE's modes.
as_nobody head -c 1 "$m/rootarr/data.csv" >/dev/null ||
  fail "the user cannot read root's 0755 array"
err=$(as_nobody cp "$WORK/decoy.csv" "$m/rootarr/w.csv" 2>&1) &&
  fail "the user wrote into root's 0755 array"
case $err in *"Permission denied"*) ;; *) fail "write into root's array: $err" ;; esac

fusermount3 -u "$m"
for _ in $(seq 1 100); do kill -0 "${PIDS[-1]}" 2>/dev/null || break; sleep 0.05; done
# The mount-time cleanup once more, with the links in place.
mount_tilefs "$src" "$WORK/m2" -o allow_other,cleanup_grace=1
for _ in $(seq 1 200); do
  grep -q 'cleanup: .* checked' "$LOG" && break
  sleep 0.05
done
grep -q 'cleanup: .* checked' "$LOG" || fail "the sweep did not finish"

# The tool follows no link inside the arrays it is given either.
for p in evil own_frag own_tile; do
  out=$("$TFS" info "$src/$p" 2>&1 || true)
  case $out in *987654321* | *TOPSECRETVAL*) fail "tfs info $p: $out" ;; esac
  "$TFS" ingest "$src/$p" "$WORK/decoy.csv" >/dev/null 2>&1 || true
  "$TFS" consolidate "$src/$p" >/dev/null 2>&1 || true
  "$TFS" vacuum "$src/$p" >/dev/null 2>&1 || true
done
"$TFS" info "$src/evil" >/dev/null 2>&1 && fail "tfs info of linked array parts"
for p in evil own_frag own_tile; do
  out=$("$TFS" dump "$src/$p" 2>&1 || true)
  case $out in *987654321* | *TOPSECRETVAL*) fail "tfs dump $p shows the outside array" ;; esac
done

after=$(sum_secret)
[ "$leaks" = 0 ] || fail "$leaks reads showed the outside array"
[ "$before" = "$after" ] || {
  (cd "$secret" && find . | sort) >&2
  fail "the outside array changed"
}
[ -d "$secret/arr/__fragments/__1_1_0123456789abcdef0123456789abcdef_22" ] ||
  fail "cleanup removed a folder outside SOURCE"
grep -q 'symbolic link .*not followed' "$WORK/m.log" ||
  fail "no log line names a refused link"
echo "symlinks: nothing outside SOURCE read, written or removed"
pass
