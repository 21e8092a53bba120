#!/usr/bin/env bash
# The `tfs` command line outside the corpus JSON: exit statuses (dump: 0
# ok, 1 error, 2 usage, 3 not an array or group; the other subcommands the
# finer statuses of `tfs --help`), one-line messages on stderr, the
# refusal of an unsupported format version, and every subcommand end to
# end: info, export, create, ingest, consolidate, vacuum.
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

# ---- Every subcommand --------------------------------------------------------

for cmd in dump info export stats create ingest consolidate vacuum; do
  expect 0 "$cmd --help" -- "$tfs" "$cmd" --help
  grep -q "usage: tfs $cmd" "$tmp/out" || { echo "FAIL $cmd --help text"; fails=$((fails + 1)); }
done
expect 2 "unknown command" -- "$tfs" frobnicate

# info: text, JSON, a group, not found, a key.
expect 0 "info" -- "$tfs" info "$corpus/dense_fragments_overlap"
grep -q "^fragments  4 (4 visible)" "$tmp/out" || { echo "FAIL info fragments"; fails=$((fails + 1)); }
grep -q "^non-empty  \[1, 12\] × \[1, 12\]" "$tmp/out" || { echo "FAIL info non-empty"; fails=$((fails + 1)); }
expect 0 "info --json" -- "$tfs" info "$corpus/metadata" --json
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["reads"]==[] and d["metadata"]["int16"]["values"]==[-12345]' "$tmp/out" \
  || { echo "FAIL info --json output"; fails=$((fails + 1)); }
expect 0 "info at a time" -- "$tfs" info "$corpus/dense_fragments_overlap" --timestamp 2023-11-14T22:13:22Z
grep -q "(2 visible)" "$tmp/out" || { echo "FAIL info --timestamp"; fails=$((fails + 1)); }
expect 3 "info of nothing" -- "$tfs" info "$tmp/nothing-here"
expect 3 "info --json of nothing" -- "$tfs" info "$tmp/nothing-here" --json
stderr_has "nothing-here" "info not found message"
expect 2 "info bad timestamp" -- "$tfs" info "$corpus/dense_1d" --timestamp later
if [ -d "$corpus/encrypted" ]; then
  key=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["key_hex"])' "$corpus/encrypted.json")
  expect 6 "info without the key" -- "$tfs" info "$corpus/encrypted"
  expect 0 "info with the key" -- "$tfs" info "$corpus/encrypted" --key "$key"
  expect 6 "info --json without the key" -- "$tfs" info "$corpus/encrypted" --json
  expect 0 "info --json with the key" -- "$tfs" info "$corpus/encrypted" --json --key "$key"
fi
if [ -d "$corpus/group" ]; then
  expect 0 "info of a group" -- "$tfs" info "$corpus/group"
  grep -q "^members    3" "$tmp/out" || { echo "FAIL info group"; fails=$((fails + 1)); }
fi

# export: the mount's renderings, selections refused with 4.
expect 0 "export txt" -- "$tfs" export "$corpus/dense_2d_rowmajor" '2:4,3:5' --field a --format txt
[ "$(tr '\n' ' ' <"$tmp/out")" = "203 204 303 304 " ] || { echo "FAIL export txt: $(cat "$tmp/out")"; fails=$((fails + 1)); }
expect 0 "export csv of every field" -- "$tfs" export "$corpus/sparse_string_dim" '"b":"c"'
head -n 1 "$tmp/out" | grep -q '^key,' || { echo "FAIL export csv header"; fails=$((fails + 1)); }
expect 0 "export npy to a file" -- "$tfs" export "$corpus/dense_1d" 'slice[1:11]' --field a --format npy -o "$tmp/a.npy"
head -c 6 "$tmp/a.npy" | grep -q NUMPY || { echo "FAIL export npy magic"; fails=$((fails + 1)); }
[ "$(stat -c %s "$tmp/a.npy")" -eq $((128 + 40)) ] || { echo "FAIL export npy size $(stat -c %s "$tmp/a.npy")"; fails=$((fails + 1)); }
expect 0 "export raw" -- "$tfs" export "$corpus/dense_1d" 1:3 --field a --format raw
[ "$(wc -c <"$tmp/out")" -eq 8 ] || { echo "FAIL export raw size"; fails=$((fails + 1)); }
expect 4 "export outside the domain" -- "$tfs" export "$corpus/dense_1d" 0:500 --field a
stderr_has "domain" "export selection message"
expect 4 "export bad syntax" -- "$tfs" export "$corpus/dense_1d" '1:2:3:4'
expect 3 "export of a missing field" -- "$tfs" export "$corpus/dense_1d" --field nope
stderr_has "no field 'nope'" "export field message"
expect 3 "export of nothing" -- "$tfs" export "$tmp/nothing-here"
expect 2 "export raw of every field" -- "$tfs" export "$corpus/dense_1d" --format raw
expect 2 "export unknown format" -- "$tfs" export "$corpus/dense_1d" --format png
expect 5 "export into a missing folder" -- "$tfs" export "$corpus/dense_1d" -o "$tmp/no/such/file"
if [ -w /dev/full ]; then
  expect 5 "export to a full device" -- "$tfs" export "$corpus/dense_1d" -o /dev/full
  stderr_has "No space left" "full device message"
fi
expect 4 "export of a 100 kB selection" -- "$tfs" export "$corpus/dense_1d" "$(head -c 100000 /dev/zero | tr '\0' 1)"
expect 4 "export of bytes that are no text" -- "$tfs" export "$corpus/dense_1d" "$(printf '\377\376:')"
expect 4 "export of an unclosed slice" -- "$tfs" export "$corpus/dense_1d" 'slice[1:3' --field a
expect 2 "export with too many threads" -- "$tfs" export "$corpus/dense_1d" --threads 99999

# export --where and stats: filters, and bad ones refused with 4 and where.
expect 0 "export --where" -- "$tfs" export "$corpus/dense_1d" --where 'd >= 99' --field a --format txt
[ "$(wc -l <"$tmp/out")" -eq 2 ] || { echo "FAIL export --where: $(cat "$tmp/out")"; fails=$((fails + 1)); }
expect 4 "export --where of an unknown field" -- "$tfs" export "$corpus/dense_1d" --where 'nope = 1'
stderr_has "filter at 1: no field 'nope'" "export --where message"
expect 4 "export --where with a bad value" -- "$tfs" export "$corpus/dense_1d" --where 'a > 1e99'
stderr_has "filter at 5:" "export --where value message"
expect 0 "stats" -- "$tfs" stats "$corpus/dense_1d" --field a
grep -q '^{"count":100,"null_count":0,"min":-937,"max":982,"sum":6464,"mean":64.64}$' "$tmp/out" || { echo "FAIL stats: $(cat "$tmp/out")"; fails=$((fails + 1)); }
expect 0 "stats --where" -- "$tfs" stats "$corpus/dense_1d" 1:51 --where 'a > 0'
grep -q '^"a":{"count":' "$tmp/out" || { echo "FAIL stats --where: $(cat "$tmp/out")"; fails=$((fails + 1)); }
expect 3 "stats of a dimension" -- "$tfs" stats "$corpus/dense_1d" --field d
expect 4 "stats with a step" -- "$tfs" stats "$corpus/dense_1d" 1:50:2
expect 4 "stats with a bad filter" -- "$tfs" stats "$corpus/dense_1d" --where 'a >'
expect 2 "export of an empty field name" -- "$tfs" export "$corpus/dense_1d" --field ""
expect 3 "info of an empty path" -- "$tfs" info ""

# create and ingest.
"$tfs" info "$corpus/dense_1d" --json >"$tmp/schema.json"
expect 0 "create from a dump" -- "$tfs" create "$tmp/new" "$tmp/schema.json"
expect 8 "create where an array is" -- "$tfs" create "$tmp/new" "$tmp/schema.json"
printf '{"schema": {"dims": []}}' >"$tmp/bad.json"
expect 4 "create from a bad schema" -- "$tfs" create "$tmp/new2" "$tmp/bad.json"
stderr_has '\$\.schema' "schema JSON path in the message"
expect 3 "create from a missing schema" -- "$tfs" create "$tmp/new3" "$tmp/none.json"
printf 'd,a,b\n1,10,0.5\n2,20,1.5\n' >"$tmp/one.csv"
printf 'd,a,b\n2,21,2.5\n3,31,3.5\n' >"$tmp/two.csv"
printf 'd,a,b\n4,41,4.5\n5,x,5.5\n' >"$tmp/bad.csv"
expect 0 "ingest" -- "$tfs" ingest "$tmp/new" "$tmp/one.csv"
[ ! -s "$tmp/err" ] || { echo "FAIL ingest is not quiet off a terminal"; fails=$((fails + 1)); }
expect 0 "ingest again" -- "$tfs" ingest "$tmp/new" "$tmp/two.csv"
expect 4 "ingest of a bad row" -- "$tfs" ingest "$tmp/new" "$tmp/bad.csv"
stderr_has "bad.csv: line 3, column 2 \('a'\)" "ingest refusal message"
expect 0 "export after ingest" -- "$tfs" export "$tmp/new" 1:4
[ "$(cat "$tmp/out")" = "$(printf 'd,a,b\n1,10,0.5\n2,21,2.5\n3,31,3.5')" ] || { echo "FAIL ingested cells: $(cat "$tmp/out")"; fails=$((fails + 1)); }
expect 0 "ingest --new" -- "$tfs" ingest "$tmp/inferred" "$tmp/one.csv" --new
expect 8 "ingest --new where an array is" -- "$tfs" ingest "$tmp/inferred" "$tmp/one.csv" --new
expect 3 "ingest into nothing" -- "$tfs" ingest "$tmp/nothing-here" "$tmp/one.csv"
expect 3 "ingest of a missing file" -- "$tfs" ingest "$tmp/new" "$tmp/none.csv"

# consolidate and vacuum: same reads, fewer fragments.
"$tfs" export "$tmp/new" >"$tmp/before.csv"
expect 0 "consolidate" -- "$tfs" consolidate "$tmp/new"
grep -q '^__[0-9]*_[0-9]*_[0-9a-f]*_22$' "$tmp/out" || { echo "FAIL consolidate output: $(cat "$tmp/out")"; fails=$((fails + 1)); }
expect 0 "consolidate commits" -- "$tfs" consolidate "$tmp/new" --mode commits
expect 0 "consolidate fragment metadata" -- "$tfs" consolidate "$tmp/new" --mode fragment-meta
"$tfs" export "$tmp/new" | cmp -s - "$tmp/before.csv" || { echo "FAIL reads changed by consolidation"; fails=$((fails + 1)); }
expect 0 "vacuum" -- "$tfs" vacuum "$tmp/new"
[ "$(cat "$tmp/out")" = 2 ] || { echo "FAIL vacuum count: $(cat "$tmp/out")"; fails=$((fails + 1)); }
expect 0 "vacuum commits" -- "$tfs" vacuum "$tmp/new" --mode commits
"$tfs" export "$tmp/new" | cmp -s - "$tmp/before.csv" || { echo "FAIL reads changed by vacuum"; fails=$((fails + 1)); }
expect 0 "info after vacuum" -- "$tfs" info "$tmp/new"
grep -q "^fragments  1 (1 visible)" "$tmp/out" || { echo "FAIL fragments after vacuum"; fails=$((fails + 1)); }
expect 2 "consolidate unknown mode" -- "$tfs" consolidate "$tmp/new" --mode everything
expect 2 "vacuum with a range" -- "$tfs" vacuum "$tmp/new" --start 1
expect 3 "consolidate nothing" -- "$tfs" consolidate "$tmp/nothing-here"
cp -r "$corpus/dense_fragments_overlap" "$tmp/dfo" && chmod -R u+w "$tmp/dfo"
expect 0 "consolidate a range" -- "$tfs" consolidate "$tmp/dfo" --start 1700000002000 --end 1700000003000
expect 0 "consolidate all but that" -- "$tfs" consolidate "$tmp/dfo" --start 1700000001000 --end 2023-11-14T22:13:22.500Z
[ ! -s "$tmp/out" ] || { echo "FAIL nothing to consolidate printed $(cat "$tmp/out")"; fails=$((fails + 1)); }

# Consolidated copies dump the same metadata and cells at every time (the
# whole non-empty domain read), before and after vacuum, and the same non-empty
# domain after the consolidated range (inside it, a sparse fragment with
# per-cell timestamps counts its whole bounding box, as in TileDB).
reads_at() { # ARRAY OUT: the reads of tfs dump at several times
  local t
  for t in 1700000000500 1700000001000 1700000001500 1700000002000 1700000002500 \
           1700000003000 1700000003500 1700000004000 1700000004500 1700000006000; do
    "$tfs" dump "$1" --timestamp "$t" >"$tmp/at.json" || return 1
    /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps([d["metadata"], [[r["cells"], r["cell_count"]] for r in d["reads"]]], sort_keys=True))' "$tmp/at.json"
  done >"$2"
  /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(d["non_empty_domain"]))' "$tmp/at.json" >>"$2"
}
for arr in dense_fragments_overlap sparse_timetravel metadata consolidated_commits sparse_dups; do
  rm -rf "$tmp/c_$arr"
  cp -r "$corpus/$arr" "$tmp/c_$arr" && chmod -R u+w "$tmp/c_$arr"
  reads_at "$tmp/c_$arr" "$tmp/c_$arr.before" || { echo "FAIL dump $arr"; fails=$((fails + 1)); continue; }
  for mode in fragments fragment-meta commits array-meta; do
    "$tfs" consolidate "$tmp/c_$arr" --mode "$mode" >/dev/null || { echo "FAIL consolidate $arr $mode"; fails=$((fails + 1)); }
  done
  reads_at "$tmp/c_$arr" "$tmp/c_$arr.after"
  cmp -s "$tmp/c_$arr.before" "$tmp/c_$arr.after" && echo "ok   $arr: dumps at 10 times equal after consolidation" \
    || { echo "FAIL $arr: dumps differ after consolidation"; fails=$((fails + 1)); }
  for mode in fragments fragment-meta commits array-meta; do
    "$tfs" vacuum "$tmp/c_$arr" --mode "$mode" >/dev/null || { echo "FAIL vacuum $arr $mode"; fails=$((fails + 1)); }
  done
  reads_at "$tmp/c_$arr" "$tmp/c_$arr.vac"
  [ "$(tail -n 2 "$tmp/c_$arr.before")" = "$(tail -n 2 "$tmp/c_$arr.vac")" ] && echo "ok   $arr: the same after vacuum" \
    || { echo "FAIL $arr: dump differs after vacuum"; fails=$((fails + 1)); }
done

if [ "$fails" -ne 0 ]; then
  echo "$fails check(s) failed"
  exit 1
fi
echo "all checks passed"
