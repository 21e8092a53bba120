#!/usr/bin/env bash
# Debian's python3: numpy.load (also mmap_mode="r"), numpy.fromfile and
# pandas.read_csv read what the mount serves, equal to the corpus JSON.
source "$(dirname "$0")/lib/common.sh"

mount_tilefs "$CORPUS" "$WORK/mnt"
"$PY" - "$WORK/mnt" "$CORPUS" <<'PYEOF' || fail "python clients"
import json, math, sys
import numpy as np
import pandas as pd

mnt, corpus = sys.argv[1:]
doc = json.load(open(corpus + "/dense_2d_rowmajor.json"))
cells = doc["reads"][0]["cells"]
want_a = np.array([c["a"] for c in cells], dtype="<i4").reshape(10, 12)
want_f = np.array([c["f"] for c in cells], dtype="<f4").reshape(10, 12)

a = np.load(mnt + "/dense_2d_rowmajor/a/slice[1:11,1:13].npy")
assert a.shape == (10, 12) and a.dtype == np.int32 and (a == want_a).all()
m = np.load(mnt + "/dense_2d_rowmajor/a/slice[1:11,1:13].npy", mmap_mode="r")
assert (m == want_a).all() and m[9, 11] == want_a[9, 11]
f = np.fromfile(mnt + "/dense_2d_rowmajor/f/slice[1:11,1:13]", dtype="<f4")
assert f.tobytes() == want_f.tobytes()
part = np.load(mnt + "/dense_2d_rowmajor/f/slice[3:7,2:11].npy")
assert part.tobytes() == want_f[2:6, 1:10].tobytes()

s = np.load(mnt + "/dense_2d_rowmajor/slice[1:11,1:13].npy")
assert s.shape == (10, 12) and list(s.dtype.names) == ["r", "c", "a", "f", "s"]
assert (s["a"] == want_a).all()
assert [x.decode() for x in s["s"].ravel()] == [c["s"] for c in cells]

df = pd.read_csv(mnt + "/dense_2d_rowmajor/data.csv", keep_default_na=False)
assert list(df.columns) == ["r", "c", "a", "f", "s"] and len(df) == 120
assert (df["a"].to_numpy() == want_a.ravel()).all()
assert np.array_equal(df["f"].to_numpy(dtype=np.float32), want_f.ravel())
assert list(df["s"]) == [c["s"] for c in cells]

sp = json.load(open(corpus + "/sparse_2d_int.json"))["reads"][0]["cells"]
df = pd.read_csv(mnt + "/sparse_2d_int/data.csv")
assert list(df["x"]) == [c["x"] for c in sp] and list(df["a"]) == [c["a"] for c in sp]
st = np.load(mnt + "/sparse_2d_int/slice[:].npy")
assert st.shape == (len(sp),) and list(st["y"]) == [c["y"] for c in sp]

dt = pd.read_csv(mnt + "/dense_datetime_dim/data.csv", parse_dates=["when"])
assert str(dt["when"].dtype).startswith("datetime64")
npdt = np.load(mnt + "/dense_datetime_dim/slice[:].npy")
assert npdt.dtype["when"] == np.dtype("<M8[ms]")
print("python clients: numpy.load, mmap, fromfile, pandas.read_csv ok")
PYEOF
pass
