#!/usr/bin/env bash
# The stored-order view `slice[SEL;stored]` through a real mount, for every
# sparse array of the corpus: its cells are exactly the sorted view's (the
# same multiset of rows of the array's .csv), each field's .csv of the same
# selection lists the cells in the same order (its rows are the array
# .csv's rows, projected), the raw files of the fixed-size fields pair the
# same cells, and a dense array or a bad word is ENOENT. Sparse raw files
# whose cell count fragment metadata gives have that exact size at stat.
source "$(dirname "$0")/lib/common.sh"

mount_tilefs "$CORPUS" "$WORK/mnt" -o ro
m=$WORK/mnt

"$PY" - "$m" "$CORPUS" <<'PYEOF' || fail "stored order differs from the sorted view"
import csv, io, json, os, struct, sys

mnt, corpus = sys.argv[1], sys.argv[2]
RAW = {"INT8": "b", "UINT8": "B", "INT16": "h", "UINT16": "H", "INT32": "i",
       "UINT32": "I", "INT64": "q", "UINT64": "Q", "FLOAT32": "f",
       "FLOAT64": "d"}


def rows(path):
    with open(path, newline="") as f:
        r = list(csv.reader(io.StringIO(f.read())))
    return r[0], r[1:]


checked = reordered = 0
for name in sorted(os.listdir(corpus)):
    meta = os.path.join(corpus, name + ".json")
    if not os.path.isfile(meta):
        continue
    doc = json.load(open(meta))
    if doc.get("array_type") != "sparse" or doc.get("key_hex"):
        continue
    if not doc.get("non_empty_domain"):
        continue
    arr = os.path.join(mnt, name)
    head, stored = rows(os.path.join(arr, "slice[;stored].csv"))
    head2, plain = rows(os.path.join(arr, "slice[].csv"))
    assert head == head2, name
    assert sorted(stored) == sorted(plain), f"{name}: other cells"
    reordered += stored != plain
    schema = doc["schema"]
    dims = [d["name"] for d in schema["dims"]]
    for a in schema["attrs"]:
        fh, frows = rows(os.path.join(arr, a["name"], "slice[;stored].csv"))
        cols = [head.index(c) for c in fh]
        want = [[r[c] for c in cols] for r in stored]
        assert frows == want, f"{name}/{a['name']}: another order"
    # Raw files of fixed-size single-value fields pair the same cells.
    fields = [(d["name"], d["type"], d.get("var"), 1) for d in schema["dims"]]
    fields += [(a["name"], a["type"], a.get("var"), a.get("cell_val_num"))
               for a in schema["attrs"] if not a.get("nullable")]
    for fname, ftype, var, num in fields:
        if var or num != 1 or ftype not in RAW:
            continue
        path = os.path.join(arr, fname, "slice[;stored]")
        data = open(path, "rb").read()
        size = os.stat(path).st_size
        assert size in (0, len(data)), f"{name}/{fname}: size {size}, {len(data)} bytes"
        vals = [v[0] for v in struct.iter_unpack("<" + RAW[ftype], data)]
        assert len(vals) == len(stored), f"{name}/{fname}: {len(vals)} values"
        col = head.index(fname)
        for v, r in zip(vals, stored):
            if ftype.startswith("FLOAT"):
                t = float(r[col])
                fmt = "<" + RAW[ftype]
                ok = (v != v and t != t) or \
                    struct.pack(fmt, v) == struct.pack(fmt, t)
            else:
                ok = v == int(r[col])
            assert ok, f"{name}/{fname}: {v} against {r[col]}"
    checked += 1
assert checked >= 5, f"only {checked} sparse arrays"
assert reordered >= 1, "the stored order is the sorted one everywhere"
print(f"{checked} sparse arrays, {reordered} in an order of their own")
PYEOF

# A single-fragment array: the raw file's size is known at the first stat.
size=$(stat -c %s "$m/sparse_2d_int/a/slice[;stored]")
bytes=$(wc -c <"$m/sparse_2d_int/a/slice[;stored]")
[ "$size" -eq "$bytes" ] || fail "sparse_2d_int raw: stat $size, read $bytes"

# Dense arrays have one order; a misspelt word is a bad selection.
for bad in 'dense_1d/a/slice[;stored]' 'sparse_2d_int/a/slice[;sorted]' \
           'sparse_2d_int/a/slice[:;stored;stored]'; do
  [ ! -e "$m/$bad" ] || fail "$bad exists"
done
pass
