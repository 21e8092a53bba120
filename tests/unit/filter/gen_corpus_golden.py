#!/usr/bin/env python3
"""Turns the corpus JSON (what TileDB itself read) into golden files for
test_corpus.c: for every attribute/dimension file of the filter arrays, the
expected cells in on-disk order (dense: tile order over the fragment's tile
box, padding flagged; sparse: global order), and a C table describing how to
decode each file (filters as the corpus JSON spells them).

Usage: gen_corpus_golden.py CORPUS_PUBLIC_DIR OUTPUT_DIR
Golden cell record: u8 flag (0 null, 1 compare, 2 padding), u32 len, bytes.
"""
import json
import os
import struct
import sys

ARRAYS = [
    "filter_gzip", "filter_zstd", "filter_lz4", "filter_bzip2", "filter_rle",
    "filter_double_delta", "filter_delta", "filter_dictionary",
    "filter_bit_width_reduction", "filter_positive_delta",
    "filter_byteshuffle", "filter_bitshuffle", "filter_xor",
    "filter_scale_float", "filter_checksum_md5", "filter_checksum_sha256",
    "filter_webp", "filter_webp_lossy", "filters_pipelines", "encrypted",
]

TYPES = [
    "INT32", "INT64", "FLOAT32", "FLOAT64", "CHAR", "INT8", "UINT8", "INT16",
    "UINT16", "UINT32", "UINT64", "STRING_ASCII", "STRING_UTF8",
    "STRING_UTF16", "STRING_UTF32", "STRING_UCS2", "STRING_UCS4", "ANY",
    "DATETIME_YEAR", "DATETIME_MONTH", "DATETIME_WEEK", "DATETIME_DAY",
    "DATETIME_HR", "DATETIME_MIN", "DATETIME_SEC", "DATETIME_MS",
    "DATETIME_US", "DATETIME_NS", "DATETIME_PS", "DATETIME_FS",
    "DATETIME_AS", "TIME_HR", "TIME_MIN", "TIME_SEC", "TIME_MS", "TIME_US",
    "TIME_NS", "TIME_PS", "TIME_FS", "TIME_AS", "BLOB", "BOOL", "GEOM_WKB",
    "GEOM_WKT",
]
FMT = {
    "INT8": "b", "UINT8": "B", "INT16": "h", "UINT16": "H", "INT32": "i",
    "UINT32": "I", "INT64": "q", "UINT64": "Q", "FLOAT32": "f",
    "FLOAT64": "d", "BOOL": "B",
}
STRINGS = ("STRING_ASCII", "STRING_UTF8", "CHAR")


def fmt_of(t):
    if t in FMT:
        return FMT[t]
    if t.startswith("DATETIME_") or t.startswith("TIME_"):
        return "q"
    raise ValueError(t)


def num(v):
    if v == "NaN":
        return float("nan")
    if v == "Infinity":
        return float("inf")
    if v == "-Infinity":
        return float("-inf")
    return v


def value_bytes(t, v):
    if t in STRINGS:
        return v.encode("utf-8")
    if t in ("BLOB", "GEOM_WKB", "GEOM_WKT"):
        return bytes.fromhex(v)
    f = fmt_of(t)
    vals = v if isinstance(v, list) else [v]
    return b"".join(struct.pack("<" + f, num(x)) for x in vals)


def disk_order(j):
    """Cells in on-disk order: list of (json cell or None), tile size."""
    s = j["schema"]
    dims = s["dims"]
    cells = j["reads"][0]["cells"]
    names = [d["name"] for d in dims]
    by_coord = {tuple(c[n] for n in names): c for c in cells}
    assert s["cell_order"] == "row-major" and s["tile_order"] == "row-major"
    if j["array_type"] == "sparse":
        ext = [d["tile"] for d in dims]
        lo = [d["domain"][0] for d in dims]

        def key(c):
            co = [c[n] for n in names]
            t = [(co[i] - lo[i]) // ext[i] for i in range(len(co))]
            return t + co
        return sorted(cells, key=key), s["capacity"]
    frag = j["fragments"]
    assert len(frag) == 1
    ned = frag[0]["non_empty_domain"]
    ext = [d["tile"] for d in dims]
    lo = [d["domain"][0] for d in dims]
    hi = [d["domain"][1] for d in dims]
    # tile box of the fragment
    tlo = [(ned[i][0] - lo[i]) // ext[i] for i in range(len(dims))]
    thi = [(ned[i][1] - lo[i]) // ext[i] for i in range(len(dims))]
    out = []

    def rows(ranges):
        if not ranges:
            yield ()
            return
        for v in range(ranges[0][0], ranges[0][1] + 1):
            for rest in rows(ranges[1:]):
                yield (v,) + rest

    for t in rows([(tlo[i], thi[i]) for i in range(len(dims))]):
        box = [(lo[i] + t[i] * ext[i], lo[i] + t[i] * ext[i] + ext[i] - 1)
               for i in range(len(dims))]
        for co in rows(box):
            inside = all(lo[i] <= co[i] <= hi[i] and
                         ned[i][0] <= co[i] <= ned[i][1]
                         for i in range(len(dims)))
            out.append(by_coord.get(co) if inside else None)
    tile = 1
    for e in ext:
        tile *= e
    return out, tile


def c_str_list(xs):
    return "{" + ", ".join('"%s"' % x for x in xs) + (", " if xs else "") + "NULL}"


def main():
    corpus, outdir = sys.argv[1], sys.argv[2]
    rows = []
    for name in ARRAYS:
        j = json.load(open(os.path.join(corpus, name + ".json")))
        s = j["schema"]
        frag = j["fragments"][0]
        fdir = "__fragments/" + frag["name"]
        order, tile_cells = disk_order(j)
        key = j.get("key_hex") or ""
        dims = s["dims"]
        webp = (dims[0]["tile"], dims[1]["tile"]) if len(dims) == 2 else (0, 0)
        fields = [("a%d" % i, a, False) for i, a in enumerate(s["attrs"])]
        if j["array_type"] == "sparse":
            fields += [("d%d" % i, d, True) for i, d in enumerate(dims)]
        for stem, f, is_dim in fields:
            t = f["type"]
            var = f["var"] if is_dim else f["cell_val_num"] == "var"
            cvn = 1 if is_dim or var else f["cell_val_num"]
            nullable = (not is_dim) and f["nullable"]
            filters = f["filters"]
            string_mode = var and t in ("STRING_ASCII", "STRING_UTF8") and \
                any(x.startswith("RLE") or x.startswith("DICTIONARY")
                    for x in filters)
            golden = "%s.%s.bin" % (name, f["name"])
            with open(os.path.join(outdir, "golden", golden), "wb") as g:
                for c in order:
                    if c is None:
                        g.write(struct.pack("<BI", 2, 0))
                        continue
                    v = c[f["name"]]
                    if v is None:
                        g.write(struct.pack("<BI", 0, 0))
                        continue
                    b = value_bytes(t, v)
                    g.write(struct.pack("<BI", 1, len(b)) + b)
            tsize = struct.calcsize(fmt_of(t)) if t not in STRINGS and \
                t not in ("BLOB", "GEOM_WKB", "GEOM_WKT") else 1
            rows.append(
                '\t{"%s", "%s", "%s/%s.tdb", %s, %s, %d /* %s */, %d, %s, %s, %s, '
                '%s, %d, %d, %d, %d, %d, "%s", "%s"},' % (
                    name, f["name"], fdir, stem,
                    '"%s/%s_var.tdb"' % (fdir, stem) if var else "NULL",
                    '"%s/%s_validity.tdb"' % (fdir, stem) if nullable else "NULL",
                    TYPES.index(t), t, tsize * cvn, c_str_list(filters),
                    c_str_list(s["offsets_filters"]),
                    c_str_list(s["validity_filters"]),
                    "true" if string_mode else "false",
                    tile_cells, len(order), frag["format_version"],
                    webp[0], webp[1], key, golden))
    with open(os.path.join(outdir, "corpus_cases.inc"), "w") as out:
        out.write("/* Generated by gen_corpus_golden.py from the corpus "
                  "JSON; do not edit. */\n")
        out.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
