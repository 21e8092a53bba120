#!/usr/bin/env bash
# Whole reads under concurrent commits: one writer copies small CSVs into
# a sparse array through the mount while readers `cat` its data.csv and
# slice[:].json in a loop. The files grow from a few KB past the size
# rendered whole at open (whole_max=) into streamed files of several
# hundred KB. Every read must be one version's whole rendering: the
# model of version k is the final rendering restricted to the rows of the
# first k files, in the same order (the global order does not depend on
# which rows are present). Zero short, empty or mixed reads.
source "$(dirname "$0")/lib/common.sh"

# STRESS_COMMIT_FILES=400 STRESS_COMMIT_READERS=8
# STRESS_COMMIT_MIN_READS=250 for the long run (docs/TESTING.md: over 500
# reads); the check wants MIN_READS reads of each file, every one byte for
# byte one version's whole rendering, and prints the count.
FILES=${STRESS_COMMIT_FILES:-50}
READERS=${STRESS_COMMIT_READERS:-4}
MIN_READS=${STRESS_COMMIT_MIN_READS:-50}
ROWS=500
SRC=$WORK/src
mkdir -p "$SRC" "$WORK/seen"
copy_corpus "$SRC" sparse_2d_int
chmod -R u+w "$SRC"
mount_tilefs "$SRC" "$WORK/mnt" -o whole_max=20000
m=$WORK/mnt

# A sparse array like sparse_2d_int with room for the files' rows.
"$PY" - "$m/sparse_2d_int/schema.json" "$WORK/schema.json" <<'PYEOF'
import json, sys
s = json.load(open(sys.argv[1]))
for d in s["schema"]["dims"]:
    d["domain"] = [0, 9999]
    d["tile"] = 100
json.dump(s, open(sys.argv[2], "w"))
PYEOF
mkdir "$m/big" || fail "mkdir big"
cp "$WORK/schema.json" "$m/big/" || fail "creating big"
# File f holds rows x = 10 * f .. 10 * f + 9 (y = 0..49), so the rows of
# a file are spread through the global order.
"$PY" - "$WORK" "$FILES" "$ROWS" <<'PYEOF'
import sys
work, files, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for f in range(1, files + 1):
    with open(f"{work}/f{f}.csv", "w") as out:
        out.write("x,y,a,s\n")
        for i in range(rows):
            x, y = 10 * f + i // 50, (i % 50) * 7 % 50
            out.write(f"{x},{y},{f * 100000 + i},file{f}\n")
PYEOF
cp "$WORK/f1.csv" "$m/big/" || fail "first write"

touch "$WORK/writing"
reader() {
  local r=$1 n=0 f h tmp=$WORK/read.$1
  while [ -e "$WORK/writing" ] || [ "$n" -lt 4 ]; do
    for f in data.csv "slice[:].json"; do
      cat "$m/big/$f" >"$tmp" || { echo "reader $r: cat $f failed"; return 1; }
      h=$(md5sum <"$tmp" | cut -c1-32)
      [ -e "$WORK/seen/$h" ] || mv "$tmp" "$WORK/seen/$h"
      echo "$f $h" >>"$WORK/reads.$r"
    done
    n=$((n + 1))
  done
}
pids=()
for r in $(seq 1 "$READERS"); do
  reader "$r" &
  pids+=($!)
done
for f in $(seq 2 "$FILES"); do
  cp "$WORK/f$f.csv" "$m/big/" || fail "write $f"
done
rm -f "$WORK/writing"
for p in "${pids[@]}"; do
  wait "$p" || fail "a reader failed"
done
cat "$m/big/data.csv" >"$WORK/final.csv"
cat "$m/big/slice[:].json" >"$WORK/final.json"

"$PY" - "$WORK" "$FILES" "$MIN_READS" <<'PYEOF' || fail "a read was not one version's whole file"
import glob, json, os, sys
work, files = sys.argv[1], int(sys.argv[2])
MIN_READS = int(sys.argv[3])
final_csv = open(f"{work}/final.csv", "rb").read()
header, *rows = final_csv.split(b"\n")[:-1]
def file_of_csv(line):
    return int(line.rsplit(b",", 1)[1][4:])
csv_model = {}
for k in range(1, files + 1):
    body = [r for r in rows if file_of_csv(r) <= k]
    csv_model[b"\n".join([header] + body) + b"\n"] = k
assert len(rows) == files * 500, f"final data.csv has {len(rows)} rows"
final_json_bytes = open(f"{work}/final.json", "rb").read()
final_json = json.loads(final_json_bytes)
assert len(final_json) == len(rows), "final json and csv disagree"
def file_of_obj(o):
    return int(o["s"][4:])
# The JSON is "[" + one object per line, joined by ",\n", + "]\n": the
# bytes of version k are those of the objects of its files, so framed.
assert final_json_bytes.startswith(b"[{") and final_json_bytes.endswith(b"}]\n")
objs = final_json_bytes[1:-2].split(b",\n")
assert len(objs) == len(rows), "final json is not one object per line"
json_model = {}
for k in range(1, files + 1):
    body = [o for o in objs if file_of_obj(json.loads(o)) <= k]
    json_model[b"[" + b",\n".join(body) + b"]\n"] = k
contents = {}
for h in os.listdir(f"{work}/seen"):
    contents[h] = open(f"{work}/seen/{h}", "rb").read()
reads = {"data.csv": 0, "slice[:].json": 0}
sizes = []
versions = set()
for path in glob.glob(f"{work}/reads.*"):
    for line in open(path):
        name, h = line.split()
        data = contents[h]
        reads[name] += 1
        sizes.append(len(data))
        if name == "data.csv":
            k = csv_model.get(data)
            assert k, (f"data.csv read of {len(data)} bytes is no version's "
                       f"whole rendering (ends {data[-40:]!r})")
        else:
            k = json_model.get(data)
            assert k, (f"slice[:].json read of {len(data)} bytes is no "
                       f"version's whole rendering (ends {data[-40:]!r})")
        versions.add((name, k))
print(f"reads: {sum(reads.values())} ({reads}), each one version's "
      f"bytes exactly (none short or empty: {min(sizes)} to {max(sizes)} "
      f"bytes), distinct (file, version) seen: {len(versions)}")
assert min(reads.values()) >= MIN_READS, "too few reads"
PYEOF
pass
