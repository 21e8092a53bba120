#!/usr/bin/env bash
# The main job: installs the Debian packages, builds tilefs, writes a small
# set of TileDB arrays with the project's own writer (`tfs create`,
# `tfs ingest`), mounts them and shows a short tour of what plain tools
# see. The mount stays up;
#   fusermount3 -u MOUNTPOINT     unmounts it (the tour prints the command).
#   TFS_DEMO_DATA=DIR    where the arrays are written (default
#                        /tmp/tilefs-demo-arrays; rewritten on every run)
#   TFS_DEMO_MNT=DIR     the mountpoint (default /tmp/tilefs-demo)
#
# The arrays (schemas in scripts/demo/*.json):
#   temperature  dense 2-D FLOAT32 180 × 360 grid, ZSTD
#   stations     sparse, a string and a date dimension, nullable float and
#                string attributes (empty CSV fields are nulls)
#   inventory    dense 2-D, three writes (a full box, a row, a few cells):
#                three fragments to travel in time through versions/
#   secrets      dense, AES-256-GCM encrypted; the key is in this script
set -euo pipefail
cd "$(dirname "$0")/.."

data=${TFS_DEMO_DATA:-/tmp/tilefs-demo-arrays}
mnt=${TFS_DEMO_MNT:-/tmp/tilefs-demo}
# The demo's key for `secrets` (never use a published key for real data).
key=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f

bash scripts/install-deps.sh
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-release -j "${TFS_JOBS:-2}" --target tfs tilefs_daemon
tfs=$PWD/build-release/tools/tfs
tilefs=$PWD/build-release/fs/tilefs

if mountpoint -q "$mnt"; then
  fusermount3 -u "$mnt"
fi
rm -rf "$data"
mkdir -p "$data" "$mnt"
csv=$(mktemp -d)
trap 'rm -rf "$csv"' EXIT

echo "demo: writing arrays into $data"
# temperature: every cell of the grid, so the write is one dense fragment.
"$tfs" create "$data/temperature" scripts/demo/temperature.json
awk 'BEGIN {
  print "lat,lon,celsius"
  for (i = 0; i < 180; i++)
    for (j = 0; j < 360; j++)
      printf "%d,%d,%.2f\n", i, j,
        30 * cos((i - 90) / 57.2958) - 8 + 4 * sin(j / 20.0) * cos(i / 15.0)
}' >"$csv/temperature.csv"
"$tfs" ingest "$data/temperature" "$csv/temperature.csv"

# stations: sparse, strings, dates and nulls.
"$tfs" create "$data/stations" scripts/demo/stations.json
cat >"$csv/stations.csv" <<'EOF'
station,day,rain_mm,note
OSLO,2024-01-01,3.5,snow
OSLO,2024-01-02,,
LIMA,2024-01-01,0,"dry, sunny"
LIMA,2024-01-03,0.2,
PUNE,2024-01-02,12.25,"monsoon ""early"""
PUNE,2024-01-03,,gauge broken
BERGEN,2024-01-01,31.7,
EOF
"$tfs" ingest "$data/stations" "$csv/stations.csv"

# inventory: three writes, three fragments, three versions.
"$tfs" create "$data/inventory" scripts/demo/inventory.json
awk 'BEGIN {
  split("apple pear plum fig kiwi lime date nut", fruit, " ")
  print "shelf,slot,count,item"
  for (s = 1; s <= 8; s++)
    for (t = 1; t <= 10; t++)
      printf "%d,%d,%d,%s\n", s, t, (s * 7 + t * 3) % 20, fruit[s]
}' >"$csv/inventory-1.csv"
"$tfs" ingest "$data/inventory" "$csv/inventory-1.csv"
sleep 1
awk 'BEGIN {
  print "shelf,slot,count,item"
  for (t = 1; t <= 10; t++) printf "2,%d,0,sold out\n", t
}' >"$csv/inventory-2.csv"
"$tfs" ingest "$data/inventory" "$csv/inventory-2.csv"
sleep 1
printf 'shelf,slot,count,item\n5,5,99,melon\n7,2,42,mango\n' >"$csv/inventory-3.csv"
"$tfs" ingest "$data/inventory" "$csv/inventory-3.csv"

# secrets: encrypted with the demo's key.
"$tfs" create "$data/secrets" scripts/demo/secrets.json --key "$key"
printf 'id,pin,owner\n1,1234,ada\n2,9876,grace\n3,5555,"linus, jr"\n' >"$csv/secrets.csv"
"$tfs" ingest "$data/secrets" "$csv/secrets.csv" --key "$key"

# The key goes into a keyfile (keys never appear in ps output).
keyfile=$csv/keys
echo "secrets $key" >"$keyfile"
chmod 600 "$keyfile"
"$tilefs" -o ro,keyfile="$keyfile" "$data" "$mnt"

run() {
  echo
  echo "\$ $*"
  (cd "$mnt" && eval "$@") 2>&1 | head -n 14 || true
}

# tfs works on the arrays themselves, not on the mount.
run_tfs() {
  echo
  echo "\$ tfs $*"
  "$tfs" "$@" 2>&1 | head -n 16 || true
}

echo "tilefs: $data is mounted read-only on $mnt"
run "ls"
run "ls -l temperature"
run "head -n 3 temperature/data.csv"
run "cat 'temperature/celsius/slice[88:90,0:4].txt'"
run "/usr/bin/python3 -c 'import numpy as np; a = np.load(\"temperature/celsius/slice[:,:].npy\"); print(a.shape, a.dtype, round(float(a.mean()), 3))'"
run "/usr/bin/python3 -c 'import struct, sys; [print(p, \"%d x %d\" % struct.unpack(\">II\", open(p, \"rb\").read()[16:24])) for p in sys.argv[1:]]' temperature/preview.png 'temperature/celsius/slice[::4,::4].png'"
run "/usr/bin/python3 -c 'import os; p = \"temperature/celsius/slice[::4,::4].png\"; print([os.getxattr(p, n).decode() for n in (\"user.tilefs.range\", \"user.tilefs.colormap\")])'"
run "cat stations/data.csv"
run "cat 'stations/slice[\"LIMA\":\"P\"].json'"
run "cat stations/rain_mm/slice[:,:].validity | od -An -tu1"
run "ls inventory/versions"
run "cat \"inventory/versions/\$(ls inventory/versions | head -n 1)/count/slice[2,1:6].txt\" | tr '\\n' ' '"
run "cat 'inventory/count/slice[2,1:6].txt' | tr '\\n' ' '"
run "cat 'inventory/slice[5:8,2:6:3].csv'"
run "ls inventory/fragments"
run "cat secrets/data.csv"
run_tfs info "$data/inventory"
run_tfs export "$data/temperature" 0:2,0:3 --field celsius --format json
echo
echo "Try any tool on $mnt (README.md: the view, the slice grammar, tfs)."
echo "The tool:      $tfs info $data/stations"
echo "               $tfs export $data/temperature 88:92,0:4 --field celsius --format txt"
echo "               $tfs consolidate $data/inventory && $tfs vacuum $data/inventory"
echo "More arrays: tilefs -o ro ../shared/corpus/public /some/folder"
echo "Unmount with:  fusermount3 -u $mnt"
