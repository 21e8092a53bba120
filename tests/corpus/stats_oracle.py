#!/usr/bin/env python3
"""`tfs stats` against a full computation over every corpus array.

For each array with a full read at the current time in its JSON, the
statistics of every attribute (count, null_count, min, max, sum, mean) are
computed here from the JSON's cells, in read order, and compared with
`tfs stats A` (which takes whole tiles from fragment metadata where it
can), then again under a filter (`--where`, evaluated by where_oracle.py's
evaluator) and a selection of the first dimension. min and max are
compared as the JSON rendering writes them: the record of the cell that
holds the extreme, in `tfs export --where true --format json`.

usage: stats_oracle.py TFS CORPUS_DIR [--only NAME]
"""
import json
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import where_oracle as wo  # noqa: E402


def run(cmd):
    p = subprocess.run(cmd, capture_output=True)
    if p.returncode != 0:
        return None, p.stderr.decode("utf-8", "replace").strip()
    return json.loads(p.stdout.decode("utf-8")), None


def expected(field, cells, records):
    """The statistics of field over cells (records: their rendering)."""
    nulls = sum(1 for c in cells if c[field.name] is None)
    out = {"count": len(cells), "null_count": nulls}
    k = field.kind()
    lo = hi = None
    for i, c in enumerate(cells):
        v = field.value(c[field.name])
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        if k is None:
            return out  # bytewise bounds of lists and blobs: not checked
        if lo is None or v < field.value(cells[lo][field.name]):
            lo = i
        if hi is None or v > field.value(cells[hi][field.name]):
            hi = i
    out["min"] = None if lo is None else records[lo][field.name]
    out["max"] = None if hi is None else records[hi][field.name]
    n = len(cells) - nulls
    if k != "number":
        out["sum"] = out["mean"] = None
        return out
    vals = [field.value(c[field.name]) for c in cells
            if c[field.name] is not None]
    if field.type in ("FLOAT32", "FLOAT64"):
        s = 0.0
        for v in vals:
            s += v
        out["sum"] = s
        out["mean"] = s / n if n else None
    else:
        s = sum(vals)
        out["sum"] = s
        out["mean"] = float(s) / n if n else None
    return out


def same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(b, float) and math.isnan(b):
        return a == "nan"
    if isinstance(b, float) and math.isinf(b):
        return a == ("inf" if b > 0 else "-inf")
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) \
            and not isinstance(a, bool) and not isinstance(b, bool):
        return a == b
    return a == b


def check(tfs, name, path, key, fields, cells, records, extra, what):
    cmd = [tfs, "stats", path]
    if key:
        cmd += ["--key", key]
    cmd += extra
    got, err = run(cmd)
    if got is None:
        print("FAIL %s %s: %s" % (name, what, err))
        return 1
    bad = 0
    for f in fields:
        want = expected(f, cells, records)
        have = got.get(f.name)
        for k, v in want.items():
            if have is None or not same(have.get(k), v):
                print("FAIL %s %s: %s.%s = %r, expected %r" % (
                    name, what, f.name, k,
                    None if have is None else have.get(k), v))
                bad += 1
    return bad


def main():
    tfs, corpus = sys.argv[1], sys.argv[2]
    only = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--only" \
        else None
    failures = checked = 0
    names = []
    for root, _, files in os.walk(corpus):
        for fn in files:
            if fn.endswith(".json"):
                names.append(os.path.join(root, fn[:-5]))
    for path in sorted(names):
        name = os.path.relpath(path, corpus)
        if (only and name != only) or not os.path.isdir(path):
            continue
        doc = json.load(open(path + ".json"))
        if "schema" not in doc or "reads" not in doc:
            continue
        read = next((r for r in doc["reads"]
                     if r.get("timestamp") is None and
                     r.get("subarray") == doc.get("non_empty_domain")),
                    None)
        if read is None or "cells" not in read:
            continue
        s = doc["schema"]
        enums = {e["name"]: e for e in s.get("enumerations") or []}
        dims = [wo.Field(f, True, enums) for f in s["dims"]]
        attrs = [wo.Field(f, False, enums) for f in s["attrs"]]
        key = doc.get("key_hex")
        cells = read["cells"]
        records, err = wo.export(tfs, path, key, "true")
        if records is None or len(records) != len(cells):
            print("FAIL %s: export: %s" % (name, err))
            failures += 1
            continue
        checked += 1
        failures += check(tfs, name, path, key, attrs, cells, records, [],
                          "whole array")
        # Under a filter: the first condition where_oracle makes up.
        conds = wo.conditions(dims + attrs, cells)
        if conds:
            text, ev = conds[0]
            keep = [i for i, c in enumerate(cells) if ev(c) is True]
            failures += check(tfs, name, path, key, attrs,
                              [cells[i] for i in keep],
                              [records[i] for i in keep],
                              ["--where", text], "where[%s]" % text)
        # A selection: the lower half of an integer first dimension.
        d0 = s["dims"][0]
        ned = doc.get("non_empty_domain")
        if ned and d0["type"].startswith(("INT", "UINT")) and \
                not d0.get("var"):
            lo, hi = ned[0]
            mid = lo + (hi - lo) // 2
            keep = [i for i, c in enumerate(cells)
                    if lo <= c[d0["name"]] < mid]
            failures += check(tfs, name, path, key, attrs,
                              [cells[i] for i in keep],
                              [records[i] for i in keep],
                              ["--", "%d:%d" % (lo, mid)], "slice[%d:%d]" % (
                                  lo, mid))
    print("statistics of %d arrays, %d failures" % (checked, failures))
    return 1 if failures or not checked else 0


if __name__ == "__main__":
    sys.exit(main())
