#!/usr/bin/env bash
# The `tfs` command line outside the corpus JSON: exit statuses (0 ok,
# 1 error, 2 usage, 3 not an array or group), one-line messages on stderr,
# and the refusal of an unsupported format version.
# usage: tfs_cli_test.sh TFS_BINARY CORPUS_DIR
set -u
tfs=$1
corpus=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

# expect STATUS DESCRIPTION -- COMMAND...: runs COMMAND, checks its status.
expect() {
  local want=$1 what=$2
  shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL $what: exit $got, expected $want; stderr: $(head -c 300 "$tmp/err")"
    fails=$((fails + 1))
  else
    echo "ok   $what"
  fi
}

# stderr_has PATTERN DESCRIPTION: the last command's stderr matches.
stderr_has() {
  if ! grep -q -E "$1" "$tmp/err"; then
    echo "FAIL $2: stderr does not match '$1': $(head -c 300 "$tmp/err")"
    fails=$((fails + 1))
  fi
  if [ "$(wc -l <"$tmp/err")" -gt 1 ]; then
    echo "FAIL $2: more than one line on stderr"
    fails=$((fails + 1))
  fi
}

expect 0 "dump of a dense array" -- "$tfs" dump "$corpus/dense_1d"
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["name"]=="dense_1d", d["name"]; assert d["reads"][0]["cell_count"]==100' "$tmp/out" \
  || { echo "FAIL dense_1d output"; fails=$((fails + 1)); }
expect 0 "--name, --no-full and two --subarray reads" -- \
  "$tfs" dump "$corpus/dense_1d/" --name other --no-full --subarray 5:20 --subarray 90:100
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["name"]=="other"; assert [r["cell_count"] for r in d["reads"]]==[16,11]' "$tmp/out" \
  || { echo "FAIL subarray reads output"; fails=$((fails + 1)); }

expect 2 "no arguments" -- "$tfs"
expect 2 "dump without a path" -- "$tfs" dump
expect 2 "unknown option" -- "$tfs" dump "$corpus/dense_1d" --bogus
expect 2 "bad timestamp" -- "$tfs" dump "$corpus/dense_1d" --timestamp soon
expect 2 "bad key" -- "$tfs" dump "$corpus/dense_1d" --key 12zz
expect 3 "missing path" -- "$tfs" dump "$tmp/nothing-here"
stderr_has "not a TileDB array or group" "missing path message"
mkdir -p "$tmp/plain"
expect 3 "plain folder" -- "$tfs" dump "$tmp/plain"
expect 1 "subarray with the wrong number of ranges" -- \
  "$tfs" dump "$corpus/dense_1d" --no-full --subarray 1:2,3:4
stderr_has "subarray" "subarray message"
expect 1 "subarray of the wrong type" -- "$tfs" dump "$corpus/dense_1d" --no-full --subarray a:b
expect 1 "subarray outside the domain" -- "$tfs" dump "$corpus/dense_1d" --no-full --subarray 0:500
if [ -d "$corpus/encrypted" ]; then
  expect 1 "encrypted array without its key" -- "$tfs" dump "$corpus/encrypted"
  stderr_has "." "missing key message"
fi
if [ -d "$corpus/legacy/experimental_array_vUINT32_MAX" ]; then
  expect 1 "format version newer than any TileDB" -- \
    "$tfs" dump "$corpus/legacy/experimental_array_vUINT32_MAX"
  stderr_has "unsupported format version 4294967295" "unsupported version message"
fi

# Groups: members are dumped recursively, one full read each.
if [ -d "$corpus/group" ]; then
  expect 0 "dump of a group" -- "$tfs" dump "$corpus/group"
  /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["object"]=="group"; m=d["members"]; assert [x["name"] for x in m]==["dense_member","sparse_member","sub"]; assert m[2]["content"]["members"][0]["content"]["reads"][0]["cell_count"]==6; assert len(m[0]["content"]["reads"])==1' "$tmp/out" \
    || { echo "FAIL group output"; fails=$((fails + 1)); }
  expect 0 "group with --no-full" -- "$tfs" dump "$corpus/group" --no-full
  /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["members"][0]["content"]["reads"]==[]' "$tmp/out" \
    || { echo "FAIL group --no-full output"; fails=$((fails + 1)); }
  expect 2 "--subarray on a group" -- "$tfs" dump "$corpus/group" --subarray 1:2
  stderr_has "group" "group subarray message"

  # A member whose folder is gone: content null, a warning, status 0.
  cp -r "$corpus/group" "$tmp/g" && chmod -R u+w "$tmp/g"
  rm -rf "$tmp/g/sparse_member"
  expect 0 "group with a missing member" -- "$tfs" dump "$tmp/g"
  stderr_has "sparse_member" "missing member warning"
  /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); m=d["members"]; assert m[1]["name"]=="sparse_member" and m[1]["content"] is None; assert m[0]["content"]["name"]=="dense_member"' "$tmp/out" \
    || { echo "FAIL missing member output"; fails=$((fails + 1)); }

  # A group from before __group/: members are the child objects, unnamed.
  mkdir -p "$tmp/legacy"
  touch "$tmp/legacy/__tiledb_group.tdb"
  cp -r "$corpus/group/dense_member" "$tmp/legacy/arr"
  mkdir -p "$tmp/legacy/not_an_object"
  expect 0 "legacy group" -- "$tfs" dump "$tmp/legacy"
  /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); m=d["members"]; assert len(m)==1 and m[0]["name"] is None and m[0]["path"]=="arr" and m[0]["content"]["name"]=="arr"' "$tmp/out" \
    || { echo "FAIL legacy group output"; fails=$((fails + 1)); }
  # ... that contains itself through a link: refused, not endless.
  ln -s . "$tmp/legacy/self"
  expect 1 "group containing itself" -- "$tfs" dump "$tmp/legacy"
  stderr_has "nested deeper" "group cycle message"
fi

if [ "$fails" -ne 0 ]; then
  echo "$fails check(s) failed"
  exit 1
fi
echo "all checks passed"
