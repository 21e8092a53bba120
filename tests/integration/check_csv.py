"""Checks a CSV rendered by tilefs (data.csv or slice[...].csv) against the
first read of a corpus JSON, by the rules of SPEC §4: dense cells in
row-major order, sparse cells sorted by coordinates (duplicates in any
order), values as text (integers in decimal, floats that read back to the
same bits, bool true/false, datetimes ISO-8601 UTC at the type's precision,
blobs hex, multi-value cells space-separated, null an empty field,
enumeration attributes as their labels).

usage: check_csv.py CSV JSON [--read N]
Exits 0 when equal, 1 with the first differences otherwise."""
import csv
import io
import json
import math
import struct
import sys

DATETIME_UNITS = ["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as"]
TIME_UNITS = ["h", "m", "s", "ms", "us", "ns", "ps", "fs", "as"]
PER_SEC = {"ms": 3, "us": 6, "ns": 9, "ps": 12, "fs": 15, "as": 18}
STRING_TYPES = {"CHAR", "STRING_ASCII", "STRING_UTF8", "STRING_UTF16",
                "STRING_UTF32", "STRING_UCS2", "STRING_UCS4"}
BYTE_TYPES = {"BLOB", "ANY", "GEOM_WKB", "GEOM_WKT"}


def civil(days):
    """Proleptic Gregorian date of a day number (0 = 1970-01-01)."""
    z = days + 719468
    era = (z if z >= 0 else z - 146096) // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (m <= 2), m, d


def datetime_text(typ, v):
    if typ.startswith("TIME_"):
        unit = TIME_UNITS[["HR", "MIN", "SEC", "MS", "US", "NS", "PS", "FS",
                           "AS"].index(typ[5:])]
        sign, mag = ("-", -v) if v < 0 else ("", v)
        if unit == "h":
            return "%s%02d" % (sign, mag)
        if unit == "m":
            return "%s%02d:%02d" % (sign, mag // 60, mag % 60)
        frac = ""
        if unit in PER_SEC:
            n = PER_SEC[unit]
            frac = ".%0*d" % (n, mag % 10 ** n)
            mag //= 10 ** n
        return "%s%02d:%02d:%02d%s" % (sign, mag // 3600, mag // 60 % 60,
                                       mag % 60, frac)
    unit = DATETIME_UNITS[["YEAR", "MONTH", "WEEK", "DAY", "HR", "MIN", "SEC",
                           "MS", "US", "NS", "PS", "FS", "AS"].index(typ[9:])]
    if unit == "Y":
        return "%04d" % (1970 + v)
    if unit == "M":
        return "%04d-%02d" % (1970 + v // 12, v % 12 + 1)
    if unit in ("W", "D"):
        return "%04d-%02d-%02d" % civil(v * (7 if unit == "W" else 1))
    if unit == "h":
        return "%04d-%02d-%02dT%02dZ" % (civil(v // 24) + (v % 24,))
    if unit == "m":
        return "%04d-%02d-%02dT%02d:%02dZ" % (civil(v // 1440) +
                                              (v % 1440 // 60, v % 60))
    frac = ""
    secs = v
    if unit in PER_SEC:
        n = PER_SEC[unit]
        frac = ".%0*d" % (n, v % 10 ** n)
        secs = v // 10 ** n
    return "%04d-%02d-%02dT%02d:%02d:%02d%sZ" % (
        civil(secs // 86400) + (secs % 86400 // 3600, secs % 3600 // 60,
                                secs % 60, frac))


def json_float(v):
    return {"NaN": math.nan, "Infinity": math.inf,
            "-Infinity": -math.inf}.get(v, v) if isinstance(v, str) else float(v)


def same_float(typ, text, want):
    """text (CSV) and want (JSON) are the same float of type typ."""
    try:
        got = float(text)
    except ValueError:
        return False
    want = json_float(want)
    if math.isnan(want):
        return math.isnan(got)
    if typ == "FLOAT32":
        pack = lambda x: struct.pack("<f", x)
    else:
        pack = lambda x: struct.pack("<d", x)
    return pack(got) == pack(want)


def value_text(typ, v):
    """Expected text of one non-float value."""
    if typ == "BOOL":
        return "true" if v else "false"
    if typ.startswith("DATETIME_") or typ.startswith("TIME_"):
        return datetime_text(typ, int(v))
    return str(int(v))


def cell_ok(field, text, want):
    typ = field["type"]
    if want is None:
        return text == ""
    if field.get("labels") is not None:
        labels = field["labels"]
        if isinstance(want, int) and 0 <= want < len(labels):
            want = labels[want]
            typ = field["label_type"]
    if typ in STRING_TYPES:
        return text == want
    if typ in BYTE_TYPES:
        return text == want
    values = want if isinstance(want, list) else [want]
    parts = text.split(" ") if text != "" else []
    if len(parts) != len(values):
        return False
    for p, w in zip(parts, values):
        if typ in ("FLOAT32", "FLOAT64"):
            if not same_float(typ, p, w):
                return False
        elif p != value_text(typ, w):
            return False
    return True


def unescape_bytes(s):
    """CSV text decoded with surrogateescape → the JSON convention (bytes
    that are not UTF-8 as code points U+00XY)."""
    return "".join(chr(ord(c) - 0xDC00) if 0xDC80 <= ord(c) <= 0xDCFF else c
                   for c in s)


def main():
    args = sys.argv[1:]
    read_no = 0
    if "--read" in args:
        i = args.index("--read")
        read_no = int(args[i + 1])
        del args[i:i + 2]
    csv_path, json_path = args
    # "-0" is negative zero of a float attribute (JSON ints have none).
    doc = json.load(open(json_path),
                    parse_int=lambda s: -0.0 if s == "-0" else int(s))
    schema = doc["schema"]
    enums = {e["name"]: e for e in schema.get("enumerations", [])}
    fields = []
    for d in schema["dims"]:
        fields.append({"name": d["name"], "type": d["type"], "dim": True})
    for a in schema["attrs"]:
        f = {"name": a["name"], "type": a["type"], "dim": False}
        if a.get("enumeration"):
            en = enums[a["enumeration"]]
            f["labels"] = en["values"]
            f["label_type"] = en["type"]
        fields.append(f)
    read = doc["reads"][read_no]
    with open(csv_path, "rb") as fh:
        raw = fh.read()
    text = raw.decode("utf-8", errors="surrogateescape")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    header, rows = rows[0], rows[1:]
    names = [f["name"] for f in fields]
    errors = []
    if header != names:
        errors.append("header %r, want %r" % (header, names))
    want_cells = read["cells"]
    if len(rows) != len(want_cells):
        errors.append("%d rows, want %d" % (len(rows), len(want_cells)))
    rows = [[unescape_bytes(c) for c in r] for r in rows]
    if doc["array_type"] == "sparse":
        # Sorted by coordinates in both; duplicates may come in any order,
        # so compare runs of equal coordinates as multisets.
        ndim = len(schema["dims"])
        def matches(row, cell):
            return len(row) == len(fields) and all(
                cell_ok(f, row[i], cell[f["name"]]) for i, f in enumerate(fields))
        used = [False] * len(want_cells)
        i = 0
        while i < len(rows) and i < len(want_cells) and not errors[3:]:
            j = i
            while (j + 1 < len(want_cells) and
                   all(json.dumps(want_cells[j + 1][f["name"]]) ==
                       json.dumps(want_cells[i][f["name"]]) for f in fields[:ndim])):
                j += 1
            for r in range(i, min(j + 1, len(rows))):
                for c in range(i, j + 1):
                    if not used[c] and matches(rows[r], want_cells[c]):
                        used[c] = True
                        break
                else:
                    errors.append("row %d %r: no such cell among %r" %
                                  (r + 1, rows[r], want_cells[i:j + 1][:3]))
            i = j + 1
    else:
        for r, (row, cell) in enumerate(zip(rows, want_cells)):
            if len(row) != len(fields):
                errors.append("row %d has %d fields" % (r + 1, len(row)))
                continue
            for i, f in enumerate(fields):
                if not cell_ok(f, row[i], cell[f["name"]]):
                    errors.append("row %d %s: %r, want %r" %
                                  (r + 1, f["name"], row[i], cell[f["name"]]))
            if len(errors) > 5:
                break
    if errors:
        print("%s vs %s:" % (csv_path, json_path))
        for e in errors[:8]:
            print("  " + e)
        sys.exit(1)


if __name__ == "__main__":
    main()
