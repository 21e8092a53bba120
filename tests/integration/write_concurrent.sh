#!/usr/bin/env bash
# Concurrent writes through one mount (SPEC §6): two writers copying CSV
# files into one array at once both land (every fragment, every row), and
# readers reading while writes land always see one whole version: every
# read of data.csv shows the values of exactly one write; CSV files
# appended at once to an array made from a CSV (cp through the mount, and
# two tfs ingest) each get rows of their own.
source "$(dirname "$0")/lib/common.sh"

SRC=$WORK/src
copy_corpus "$SRC" sparse_2d_int dense_1d
chmod -R u+w "$SRC"
mount_tilefs "$SRC" "$WORK/mnt"
m=$WORK/mnt

# ---- two writers into one sparse array --------------------------------------------
# Writer w writes rows x = 10 * f + w (files f = 0..4), y = 0..99: disjoint.
"$PY" - "$WORK" <<'PYEOF'
import sys
for w in (0, 1):
    for f in range(5):
        with open(f"{sys.argv[1]}/w{w}_{f}.csv", "w") as out:
            out.write("x,y,a,s\n")
            x = 10 * f + w
            for y in range(100):
                out.write(f"{x},{y},{x * 1000 + y},w{w}\n")
PYEOF
frags_before=$(ls "$m/sparse_2d_int/fragments" | wc -l)
pids=()
for w in 0 1; do
  ( for f in 0 1 2 3 4; do cp "$WORK/w${w}_$f.csv" "$m/sparse_2d_int/" || exit 1; done ) &
  pids+=($!)
done
for p in "${pids[@]}"; do
  wait "$p" || fail "a concurrent writer failed"
done
frags=$(ls "$m/sparse_2d_int/fragments" | wc -l)
[ "$frags" -eq $((frags_before + 10)) ] || fail "$frags fragments, want $((frags_before + 10))"
"$PY" - "$m/sparse_2d_int/data.csv" <<'PYEOF' || fail "rows of the two writers"
import sys
import pandas as pd
df = pd.read_csv(sys.argv[1], keep_default_na=False)
for w in (0, 1):
    for f in range(5):
        x = 10 * f + w
        rows = df[df.x == x]
        assert len(rows) == 100, (x, len(rows))
        assert (rows.a == x * 1000 + rows.y).all() and (rows.s == f"w{w}").all(), x
PYEOF
echo "two writers at once: 10 fragments, every row"

# ---- readers while writes land ------------------------------------------------------
# Each write sets every cell of dense_1d to one value k; a read must show
# one k throughout.
"$PY" - "$WORK" <<'PYEOF'
import sys
for k in range(1, 13):
    with open(f"{sys.argv[1]}/k{k}.csv", "w") as out:
        out.write("d,a,b\n")
        for d in range(1, 101):
            out.write(f"{d},{k},{k}.5\n")
PYEOF
cp "$WORK/k1.csv" "$m/dense_1d/" || fail "first uniform write"
# A file open before a write keeps reading the version it opened.
"$PY" - "$m/dense_1d" "$WORK/k2.csv" <<'PYEOF' || fail "an open file changed version"
import shutil, sys
a, k2 = sys.argv[1:]
with open(a + "/data.csv") as f:
    head = f.read(10)
    shutil.copyfile(k2, a + "/k2.csv")
    rest = f.read()
text = head + rest
assert "1,1,1.5" in text and "1,2,2.5" not in text, text[:200]
with open(a + "/data.csv") as f:
    assert "1,2,2.5" in f.read(), "the new version is not visible"
PYEOF
touch "$WORK/writing"
for r in 1 2 3; do
  ( n=0
    while [ -e "$WORK/writing" ] || [ "$n" -lt 3 ]; do
      "$PY" - "$m/dense_1d/data.csv" <<'PYEOF' || exit 1
import sys
import pandas as pd
df = pd.read_csv(sys.argv[1])
assert list(df.d) == list(range(1, 101)), "cells missing"
ks = set(df.a)
assert len(ks) == 1, f"a read mixed versions: {sorted(ks)}"
k = ks.pop()
assert set(df.b) == {k + 0.5}, "attributes of different versions"
PYEOF
      n=$((n + 1))
    done ) &
  pids+=($!)
done
readers=("${pids[@]:2}")
for k in $(seq 2 12); do
  cp "$WORK/k$k.csv" "$m/dense_1d/" || fail "write k=$k"
done
rm -f "$WORK/writing"
for p in "${readers[@]}"; do
  wait "$p" || fail "a reader saw a mixed version"
done
grep -q '^1,12,12.5$' "$m/dense_1d/data.csv" || fail "the last write is not visible"
echo "3 readers during 11 writes: every read one whole version"

# ---- appends at once -------------------------------------------------------------
# Each append takes the rows after the last one when it commits: copies
# running together must not take the same rows.
mkdir -p "$SRC/plain"
printf 'name,n\nfirst,0\n' >"$WORK/log.csv"
cp "$WORK/log.csv" "$m/plain/" || fail "cp log.csv into a plain folder"
cp -r "$SRC/plain/log" "$WORK/log2"
rm -f "$WORK/log2/ingest.log"
"$PY" - "$WORK" <<'PYEOF'
import sys
for w in range(4):
    with open(f"{sys.argv[1]}/app{w}.csv", "w") as out:
        out.write("name,n\n")
        for i in range(2000):
            out.write(f"w{w},{i}\n")
PYEOF
pids=()
for w in 0 1 2 3; do
  cp "$WORK/app$w.csv" "$m/plain/log/" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a concurrent append failed"; done
check_appends() { # FILE ROWS WRITERS
  "$PY" - "$@" <<'PYEOF' || fail "concurrent appends: $1"
import sys, csv
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == int(sys.argv[2]), len(rows)
assert [int(r["row"]) for r in rows] == list(range(len(rows)))
for w in range(int(sys.argv[3])):
    got = [int(r["n"]) for r in rows if r["name"] == f"w{w}"]
    assert got == list(range(2000)), (w, len(got))
PYEOF
}
check_appends "$m/plain/log/data.csv" 8001 4
echo "4 appends at once through the mount: every row, rows of their own"

pids=()
for w in 0 1 2 3; do
  "$TFS" ingest "$WORK/log2" "$WORK/app$w.csv" >/dev/null &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a concurrent tfs ingest failed"; done
"$TFS" export "$WORK/log2" >"$WORK/log2.csv"
check_appends "$WORK/log2.csv" 8001 4
echo "4 tfs ingest at once: every row, rows of their own"
pass
