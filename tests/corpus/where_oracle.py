#!/usr/bin/env python3
"""Filters (`tfs export --where`) against an evaluator of their own.

For every array of the corpus whose JSON holds a full read at the current
time, conditions are made up from its cells (comparisons with a median
value, sets, string prefixes, null tests, and/or/not) and evaluated here,
in Python, on the JSON's cells with SQL's three-valued logic (NULL
compared with anything is unknown; NaN is unknown for ordered comparisons,
false for = and true for !=; a cell is kept when the condition is true),
which is TileDB's semantics written another way. The engine's answer is
`tfs export A --where COND --format json`; it must equal, in order, the
records of `tfs export A --format json` at the indices this evaluator
keeps.

With --mount DIR (a tilefs mount of CORPUS_DIR) the engine's answers are
read from DIR/A/where[COND]/slice[...].json instead, for the arrays named
by --arrays (conditions that cannot be file names are left out).

usage: where_oracle.py TFS CORPUS_DIR [--only NAME]
       where_oracle.py TFS CORPUS_DIR --mount DIR --arrays A,B,...
"""
import json
import math
import os
import struct
import subprocess
import sys

NUMERIC = {
    "INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32", "UINT64",
    "FLOAT32", "FLOAT64", "BOOL",
}
STRINGS = {"CHAR", "STRING_ASCII", "STRING_UTF8"}


def is_time(t):
    return t.startswith("DATETIME_") or t.startswith("TIME_")


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def num_value(ftype, v):
    """A JSON cell value as the number the engine compares."""
    if isinstance(v, str):
        if v.lower() in ("nan", "-nan"):
            return math.nan
        if v.lower() in ("inf", "-inf", "infinity", "-infinity"):
            return float(v)
        raise ValueError(v)
    if ftype == "FLOAT32":
        return f32(float(v))
    if ftype == "FLOAT64":
        return float(v)
    return int(v)


def cmp3(op, a, b):
    """Three-valued comparison: None when unknown."""
    if a is None:
        return None
    if isinstance(a, float) and math.isnan(a):
        if op == "=":
            return False
        if op == "!=":
            return True
        return None
    if op == "=":
        return a == b
    if op == "!=":
        return a != b
    if op == "<":
        return a < b
    if op == "<=":
        return a <= b
    if op == ">":
        return a > b
    return a >= b


def k_not(x):
    return None if x is None else not x


def k_and(xs):
    if any(x is False for x in xs):
        return False
    if all(x is True for x in xs):
        return True
    return None


def k_or(xs):
    if any(x is True for x in xs):
        return True
    if all(x is False for x in xs):
        return False
    return None


class Field:
    def __init__(self, f, is_dim, enums):
        self.name = f["name"]
        self.type = f["type"]
        cvn = f.get("cell_val_num", 1)
        self.var = f.get("var", False) or cvn == "var"
        self.single = not self.var and cvn in (1, None)
        self.nullable = f.get("nullable", False)
        self.enum = None
        if f.get("enumeration"):
            self.enum = enums[f["enumeration"]]

    def kind(self):
        if self.enum is not None:
            return "enum" if self.single else None
        if self.type in STRINGS:
            return "string"
        if self.single and (self.type in NUMERIC or is_time(self.type)):
            return "number"
        return None

    def value(self, v):
        """The cell's value for comparisons (None for NULL)."""
        if v is None:
            return None
        if isinstance(v, list):
            return tuple(v)
        k = self.kind()
        if k == "string":
            return v.encode("utf-8") if isinstance(v, str) else bytes(v)
        if k == "enum":
            return int(v)
        if k == "number":
            return num_value(self.type, v)
        return ("raw", json.dumps(v))


def quote(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def num_text(ftype, v):
    if ftype == "FLOAT32":
        return repr(v) if not v.is_integer() else repr(v)
    if isinstance(v, float):
        return repr(v)
    return str(v)


def leaf(field, op, v):
    """(text, evaluator) of FIELD op v; v in the engine's terms."""
    name = "`" + field.name + "`"
    k = field.kind()
    if k == "enum":
        label = field.enum["values"][v]
        text = "%s %s %s" % (name, op, quote(str(label)))
    elif k == "string":
        text = "%s %s %s" % (name, op, quote(v.decode("utf-8")))
    else:
        text = "%s %s %s" % (name, op, num_text(field.type, v))
    return text, lambda cell: cmp3(op, field.value(cell[field.name]), v)


def conditions(fields, cells):
    """A few conditions for these fields: (text, evaluator) pairs."""
    out = []
    for f in fields:
        k = f.kind()
        vals = [f.value(c[f.name]) for c in cells]
        if any(isinstance(v, tuple) for v in vals):
            k = None
            vals = []
        present = [v for v in vals if v is not None and
                   not (isinstance(v, float) and math.isnan(v))]
        if f.nullable:
            out.append(("`%s` is null" % f.name,
                        lambda c, f=f: c[f.name] is None))
            out.append(("not (`%s` is null)" % f.name,
                        lambda c, f=f: c[f.name] is not None))
        if k is None or not present:
            continue
        present.sort()
        mid = present[len(present) // 2]
        lo = present[0]
        if k == "enum":
            out.append(leaf(f, "=", mid))
            t, e = leaf(f, "!=", lo)
            out.append(("not (%s)" % t, lambda c, e=e: k_not(e(c))))
            continue
        out.append(leaf(f, "<", mid))
        out.append(leaf(f, ">=", mid))
        t, e = leaf(f, "=", mid)
        out.append(("not (%s)" % t, lambda c, e=e: k_not(e(c))))
        if k == "number":
            ins = sorted({lo, mid})
            text = "`%s` in (%s)" % (
                f.name, ", ".join(num_text(f.type, v) for v in ins))
            out.append((text, lambda c, f=f, ins=ins: (
                None if f.value(c[f.name]) is None else
                any(cmp3("=", f.value(c[f.name]), v) is True
                    for v in ins))))
        else:
            pre = mid[:1]
            text = "startswith(`%s`, %s)" % (f.name,
                                             quote(pre.decode("utf-8")))
            out.append((text, lambda c, f=f, pre=pre: (
                None if c[f.name] is None else
                f.value(c[f.name]).startswith(pre))))
    # Combinations of the first few.
    if len(out) >= 2:
        (t1, e1), (t2, e2) = out[0], out[-1]
        out.append(("(%s) and not (%s)" % (t1, t2),
                    lambda c: k_and([e1(c), k_not(e2(c))])))
        out.append(("%s or %s" % (t1, t2),
                    lambda c: k_or([e1(c), e2(c)])))
    return out


MOUNT = None


def from_mount(name, where):
    """The cells of where[...] of array name as the mount shows them."""
    folder = os.path.join(MOUNT, name, "where[%s]" % where)
    try:
        js = [n for n in os.listdir(folder)
              if n.startswith("slice[") and n.endswith(".json")]
        if not js:  # an empty array lists no slice: take its data.csv
            with open(os.path.join(folder, "data.csv"), "rb") as f:
                lines = f.read().decode("utf-8").splitlines()
            return ([] if len(lines) <= 1 else None), \
                "%d CSV lines" % len(lines)
        with open(os.path.join(folder, js[0]), "rb") as f:
            return json.loads(f.read().decode("utf-8")), None
    except OSError as e:
        return None, str(e)


def export(tfs, path, key, where=None):
    if MOUNT is not None and where is not None:
        return from_mount(os.path.relpath(path, CORPUS_DIR), where)
    cmd = [tfs, "export", path, "--format", "json"]
    if key:
        cmd += ["--key", key]
    if where is not None:
        cmd += ["--where", where]
    p = subprocess.run(cmd, capture_output=True)
    if p.returncode != 0:
        return None, p.stderr.decode("utf-8", "replace").strip()
    return json.loads(p.stdout.decode("utf-8")), None


CORPUS_DIR = None


def main():
    global MOUNT, CORPUS_DIR
    tfs, corpus = sys.argv[1], sys.argv[2]
    CORPUS_DIR = corpus
    args = sys.argv[3:]
    only = set()
    while args:
        if args[0] == "--only":
            only.add(args[1])
        elif args[0] == "--arrays":
            only.update(args[1].split(","))
        elif args[0] == "--mount":
            MOUNT = args[1]
        args = args[2:]
    failures, checked, arrays, skipped = 0, 0, 0, []
    names = []
    for root, _, files in os.walk(corpus):
        for fn in files:
            if fn.endswith(".json"):
                names.append(os.path.join(root, fn[:-5]))
    for path in sorted(names):
        name = os.path.relpath(path, corpus)
        if only and name not in only:
            continue
        if not os.path.isdir(path):
            continue
        doc = json.load(open(path + ".json"))
        if "schema" not in doc or "reads" not in doc:
            skipped.append(name + " (no array)")
            continue
        read = None
        for r in doc["reads"]:
            if r.get("timestamp") is None and \
                    r.get("subarray") == doc.get("non_empty_domain"):
                read = r
                break
        if read is None or "cells" not in read:
            skipped.append(name + " (no full read)")
            continue
        s = doc["schema"]
        enums = {e["name"]: e for e in s.get("enumerations") or []}
        fields = [Field(f, True, enums) for f in s["dims"]] + \
                 [Field(f, False, enums) for f in s["attrs"]]
        key = doc.get("key_hex")
        cells = read["cells"]
        # Every cell, in order, as records (a dense array's JSON nests
        # rows unless filtered).
        full, err = export(tfs, path, key, "true")
        if full is None or len(full) != len(cells):
            print("FAIL %s: unfiltered export: %s" % (
                name, err or "%d cells, the JSON has %d" % (
                    len(full), len(cells))))
            failures += 1
            continue
        arrays += 1
        for text, ev in conditions(fields, cells)[:14]:
            if MOUNT is not None and ("/" in text or len(text) > 200 or
                                      "\\" in text):
                continue
            want = [full[i] for i, c in enumerate(cells) if ev(c) is True]
            got, err = export(tfs, path, key, text)
            checked += 1
            if got is None:
                print("FAIL %s: where[%s]: %s" % (name, text, err))
                failures += 1
            elif got != want:
                print("FAIL %s: where[%s]: %d cells, expected %d" % (
                    name, text, len(got), len(want)))
                failures += 1
    print("%d conditions on %d arrays, %d failures; skipped: %s" % (
        checked, arrays, failures, ", ".join(skipped) or "none"))
    return 1 if failures or not checked else 0


if __name__ == "__main__":
    sys.exit(main())
