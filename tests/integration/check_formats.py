"""Partial reads in every format through a mount, checked against the
corpus JSON's full read: for each case, the cells of the selection are
picked from the JSON by coordinates (half-open ranges, strides), and the
raw, .txt, .csv, .json, .npy, .offsets and .validity renderings of the
field must all hold exactly those cells (SPEC §3, §4).

usage: check_formats.py MOUNT CORPUS"""
import csv
import io
import json
import math
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_csv import cell_ok  # noqa: E402

STRUCT = {"INT8": "b", "UINT8": "B", "INT16": "h", "UINT16": "H", "INT32": "i",
          "UINT32": "I", "INT64": "q", "UINT64": "Q", "FLOAT32": "f",
          "FLOAT64": "d", "BOOL": "B"}

# (array, field, SEL as in the file name, per-dimension (lo, hi, step) in
# coordinates, None = the whole non-empty domain)
CASES = [
    ("dense_2d_rowmajor", "a", "2:5,3:9", [(2, 5, 1), (3, 9, 1)]),
    ("dense_2d_rowmajor", "f", "4", [(4, 5, 1), None]),
    ("dense_2d_rowmajor", "s", "1:11:3,2:13:4", [(1, 11, 3), (2, 13, 4)]),
    ("dense_2d_colmajor", "a", "3:8,5:", [(3, 8, 1), (5, None, 1)]),
    ("dense_3d", "u", "-2:1,1:4", [(-2, 1, 1), (1, 4, 1), None]),
    ("dense_3d", "f", ":,:,0", [None, None, (0, 1, 1)]),
    ("dense_nullable", "ni", "5:20", [(5, 20, 1)]),
    ("dense_nullable", "ns", "1:31:2", [(1, 31, 2)]),
    ("dense_nullable", "np", "10:14", [(10, 14, 1)]),
    ("dense_cellvalnum", None, ":", None),
    ("sparse_2d_int", "a", "0:10", [(0, 10, 1), None]),
    ("sparse_2d_int", "s", ":,20:60", [None, (20, 60, 1)]),
]


def load(path):
    return json.load(open(path), parse_int=lambda s: -0.0 if s == "-0" else int(s))


def fields_of(doc):
    out = {}
    for d in doc["schema"]["dims"]:
        out[d["name"]] = {"name": d["name"], "type": d["type"], "var": d["var"],
                          "nullable": False, "cvn": 1}
    for a in doc["schema"]["attrs"]:
        out[a["name"]] = {"name": a["name"], "type": a["type"],
                          "var": a["cell_val_num"] == "var",
                          "nullable": a["nullable"],
                          "cvn": a["cell_val_num"], "fill": a.get("fill")}
    return out


def selected(doc, ranges):
    """Cells of the full read inside the selection, with the shape."""
    dims = doc["schema"]["dims"]
    ned = doc["non_empty_domain"]
    axes = []
    for k, d in enumerate(dims):
        r = ranges[k] if ranges and k < len(ranges) else None
        lo, hi, step = r if r else (None, None, 1)
        lo = ned[k][0] if lo is None else lo
        hi = ned[k][1] + 1 if hi is None else hi
        axes.append((lo, hi, step))
    cells = [c for c in doc["reads"][0]["cells"]
             if all(lo <= c[d["name"]] < hi and (c[d["name"]] - lo) % step == 0
                    for d, (lo, hi, step) in zip(dims, axes))]
    shape = [len(range(lo, hi, step)) for lo, hi, step in axes]
    return cells, shape


def read(path):
    with open(path, "rb") as f:
        return f.read()


def raw_of(field, value):
    """The raw bytes of one cell value."""
    t = field["type"]
    if isinstance(value, str):
        if t in ("BLOB", "ANY"):
            return bytes.fromhex(value)
        return value.encode("utf-8", errors="surrogateescape")
    values = value if isinstance(value, list) else [value]
    code = STRUCT[t]
    out = b""
    for v in values:
        if code in "fd":
            v = {"NaN": math.nan, "Infinity": math.inf,
                 "-Infinity": -math.inf}.get(v, v)
            out += struct.pack("<" + code, float(v))
        else:
            out += struct.pack("<" + code, int(v))
    return out


def same_value(field, got, want):
    if want is None:
        return got is None
    if field["type"] in ("FLOAT32", "FLOAT64") and not isinstance(want, list):
        w = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(want, want)
        g = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}.get(got, got)
        code = "<f" if field["type"] == "FLOAT32" else "<d"
        return struct.pack(code, float(g)) == struct.pack(code, float(w)) or \
            (math.isnan(float(g)) and math.isnan(float(w)))
    return got == want


def flatten(x, levels):
    """The values of a nested list `levels` deep (cells may be lists)."""
    if levels <= 1:
        return x
    return [v for row in x for v in flatten(row, levels - 1)]


def check_field(mnt, doc, name, field, sel, ranges, errors):
    arr = doc["name"]
    cells, shape = selected(doc, ranges)
    dense = doc["array_type"] == "dense"
    want = [c[name] for c in cells]
    base = os.path.join(mnt, arr, name, "slice[%s]" % sel)
    where = "%s/%s/slice[%s]" % (arr, name, sel)

    # raw: values packed; null cells hold the fill value
    raw = read(base)
    fill = field.get("fill")
    exp = b"".join(raw_of(field, fill if v is None else v) for v in want)
    if raw != exp:
        errors.append("%s raw: %d bytes, want %d" % (where, len(raw), len(exp)))

    # .txt: one cell per line
    lines = read(base + ".txt").decode("utf-8", "surrogateescape").split("\n")
    if lines[-1] != "":
        errors.append("%s.txt does not end with a newline" % where)
    lines = lines[:-1]
    if len(lines) != len(want):
        errors.append("%s.txt: %d lines, want %d" % (where, len(lines), len(want)))
    for i, (line, v) in enumerate(zip(lines, want)):
        if v is None:
            ok = line == "NULL"
        elif isinstance(v, str):
            ok = line == v.replace("\\", "\\\\").replace("\n", "\\n")
        else:
            ok = cell_ok(field, line, v)
        if not ok:
            errors.append("%s.txt line %d: %r, want %r" % (where, i + 1, line, v))
            break

    # .csv: a header of the dimensions and the field, then one row per cell
    dims = [d["name"] for d in doc["schema"]["dims"]]
    cols = dims + ([] if name in dims else [name])
    rows = list(csv.reader(io.StringIO(read(base + ".csv").decode("utf-8"), newline="")))
    if rows[0] != cols or len(rows) - 1 != len(want):
        errors.append("%s.csv: header %r, %d rows, want %r, %d" %
                      (where, rows[0], len(rows) - 1, cols, len(want)))
    for i, (row, c) in enumerate(zip(rows[1:], cells)):
        if row[:len(dims)] != [str(c[d]) for d in dims] or \
                not cell_ok(field, row[-1], c[name]):
            errors.append("%s.csv row %d: %r, want %r" % (where, i + 1, row, c))
            break

    # .json: nested like the selection (dense) or a list (sparse)
    doc_json = json.loads(read(base + ".json"))
    if dense:
        probe = doc_json
        for k, n in enumerate(shape):
            if n and (not isinstance(probe, list) or len(probe) != n):
                errors.append("%s.json: axis %d is not %d long" % (where, k, n))
                break
            probe = probe[0] if n else probe
    got = flatten(doc_json, len(shape)) if dense else [o[name] for o in doc_json]
    if len(got) != len(want):
        errors.append("%s.json: %d values, want %d" % (where, len(got), len(want)))
    for i, (g, v) in enumerate(zip(got, want)):
        if not same_value(field, g, v):
            errors.append("%s.json value %d: %r, want %r" % (where, i, g, v))
            break

    # .npy: dense n-D (one more axis for several values per cell)
    if not field["var"] and field["type"] in STRUCT:
        a = np.load(base + ".npy")
        m = np.load(base + ".npy", mmap_mode="r")
        expect_shape = tuple(shape) if dense else (len(want),)
        if isinstance(field["cvn"], int) and field["cvn"] > 1:
            expect_shape += (field["cvn"],)
        if a.shape != expect_shape or a.tobytes() != exp or m.tobytes() != exp:
            errors.append("%s.npy: shape %r, want %r" % (where, a.shape, expect_shape))

    # .offsets and .validity
    if field["var"]:
        offs = np.frombuffer(read(base + ".offsets"), dtype="<u8")
        lens = [len(raw_of(field, fill if v is None else v)) for v in want]
        if list(offs) != list(np.cumsum([0] + lens[:-1])) if want else len(offs):
            errors.append("%s.offsets differ" % where)
    if field["nullable"]:
        val = read(base + ".validity")
        if val != bytes(0 if v is None else 1 for v in want):
            errors.append("%s.validity differs" % where)


def main():
    mnt, corpus = sys.argv[1:]
    errors = []
    checked = 0
    for arr, name, sel, ranges in CASES:
        doc = load(os.path.join(corpus, arr + ".json"))
        fields = fields_of(doc)
        names = [name] if name else [a["name"] for a in doc["schema"]["attrs"]]
        for n in names:
            check_field(mnt, doc, n, fields[n], sel, ranges, errors)
            checked += 1
    print("fields x selections checked in 7 formats: %d" % checked)
    for e in errors:
        print("  " + e)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
