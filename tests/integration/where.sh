#!/usr/bin/env bash
# Filters and statistics through a real mount: A/where[COND]/ against the
# independent evaluator (tests/corpus/where_oracle.py) for arrays of every
# kind, the mount's filtered files byte for byte as `tfs export --where`
# writes them, stats.json as `tfs stats`, and bad filters as ENOENT with
# one log line naming the position and the reason.
source "$(dirname "$0")/lib/common.sh"

TFS=${TFS:-$(dirname "$TILEFS")/../tools/tfs}
[ -x "$TFS" ] || fail "no tfs binary at $TFS"
mount_tilefs "$CORPUS" "$WORK/mnt" -o ro
m=$WORK/mnt

"$PY" "$HERE/../corpus/where_oracle.py" "$TFS" "$CORPUS" --mount "$m" \
  --arrays dense_1d,dense_2d_colmajor,dense_nullable,dense_datetime_dim,sparse_dtypes,sparse_string_dim,sparse_dups,enumeration,empty_sparse \
  || fail "where[] through the mount differs from the evaluator"

# same ARRAY COND PATH-IN-VIEW TFS-ARGS...: mount vs tfs export --where.
same() {
  local arr=$1 cond=$2 file=$3
  shift 3
  cat "$m/$arr/where[$cond]/$file" >"$WORK/mounted" || fail "reading $arr/where[$cond]/$file"
  "$TFS" export "$CORPUS/$arr" --where "$cond" "$@" >"$WORK/exported" || fail "tfs export $arr --where $cond"
  cmp -s "$WORK/mounted" "$WORK/exported" || fail "$arr/where[$cond]/$file and tfs export differ"
}
same dense_2d_rowmajor 'a > 500 and c != 3' data.csv
same dense_2d_rowmajor 'a > 500' 'a/slice[1:11,1:13].npy' --field a --format npy '1:11,1:13'
same dense_2d_rowmajor 's >= "m"' 's/slice[1:11,1:13].offsets' --field s --format offsets '1:11,1:13'
same dense_nullable 'ni is null' 'ns/slice[:].validity' --field ns --format validity ':'
same sparse_string_dim 'startswith(key, "b") or val < 50' 'slice["a":"z"].json' --format json '"a":"z"'

# stats.json under where[] is tfs stats --where.
cat "$m/dense_1d/where[d >= 50]/a/stats.json" >"$WORK/mounted" || fail "stats.json"
"$TFS" stats "$CORPUS/dense_1d" --field a --where 'd >= 50' >"$WORK/exported" || fail "tfs stats"
cmp -s "$WORK/mounted" "$WORK/exported" || fail "stats.json and tfs stats differ"
grep -q '^{"count":51,' "$WORK/mounted" || fail "stats.json: $(cat "$WORK/mounted")"
cat "$m/sparse_dtypes/i8/slice[:].stats.json" >/dev/null || fail "slice stats.json"
ls "$m/dense_1d/a" | grep -qx stats.json || fail "stats.json is not listed"

# Bad filters: ENOENT and one log line with the position and the reason.
for bad in 'nope = 1' 'a >' 'a = "x"' '(a = 1' ''; do
  if cat "$m/dense_1d/where[$bad]/data.csv" >/dev/null 2>"$WORK/err"; then
    fail "where[$bad] was accepted"
  fi
  grep -q "No such file" "$WORK/err" || fail "where[$bad]: $(cat "$WORK/err")"
done
grep -q "filter at 1: no field 'nope'" "$LOG" || fail "no log line for an unknown field"
grep -q "filter at 4: expected a value" "$LOG" || fail "no log line for a missing value"
[ "$(grep -c "where\[a >\]" "$LOG")" -ge 1 ] || fail "the log names no path"

# A filtered view is read-only, even on a writable mount.
copy_corpus "$WORK/src" dense_1d
chmod -R u+w "$WORK/src"
mount_tilefs "$WORK/src" "$WORK/rw"
if cp "$CORPUS/dense_1d.json" "$WORK/rw/dense_1d/where[d < 3]/x.csv" 2>"$WORK/err"; then
  fail "a file was written into where[...]"
fi
grep -q "Read-only" "$WORK/err" || fail "writing into where[...]: $(cat "$WORK/err")"
pass
