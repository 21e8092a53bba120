#!/usr/bin/env bash
# Partial reads in every format (raw, .txt, .csv, .json, .npy, .offsets,
# .validity) hold exactly the selected cells of the corpus JSON.
source "$(dirname "$0")/lib/common.sh"

mount_tilefs "$CORPUS" "$WORK/mnt"
"$PY" "$HERE/check_formats.py" "$WORK/mnt" "$CORPUS" || fail "formats differ"
pass
