#!/usr/bin/env bash
# Every array of the public corpus: data.csv read with cat through a mount
# equals the JSON's full read (check_csv.py), the encrypted one with its key
# from a keyfile; once rendered whole (exact size) and once streamed
# (whole_max=0: not listed, its exact size counted at stat, direct I/O).
source "$(dirname "$0")/lib/common.sh"

keyfile=$WORK/keys
: >"$keyfile"
chmod 600 "$keyfile"
for j in "$CORPUS"/*.json "$CORPUS"/legacy/*.json; do
  key=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1])).get("key_hex") or "")' "$j")
  if [ -n "$key" ]; then
    rel=${j#"$CORPUS"/}
    echo "${rel%.json} $key" >>"$keyfile"
  fi
done
mount_tilefs "$CORPUS" "$WORK/mnt" -o keyfile="$keyfile"
mount_tilefs "$CORPUS" "$WORK/stream" -o keyfile="$keyfile",whole_max=0

checked=0
failed=0
for mnt in "$WORK/mnt" "$WORK/stream"; do
for j in "$CORPUS"/*.json "$CORPUS"/legacy/*.json; do
  rel=${j#"$CORPUS"/}
  rel=${rel%.json}
  case "$rel" in
    *@*) continue ;; # time-travel views: versions.sh
  esac
  kind=$("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get("object","array"), len(d.get("reads",[])))' "$j")
  if [ "${kind%% *}" != array ] || [ "${kind##* }" = 0 ]; then
    continue
  fi
  if ! cat "$mnt/$rel/data.csv" >"$WORK/out.csv" 2>"$WORK/err"; then
    echo "cat $rel/data.csv: $(cat "$WORK/err")"
    failed=$((failed + 1))
    continue
  fi
  if ! "$PY" "$HERE/check_csv.py" "$WORK/out.csv" "$j"; then
    failed=$((failed + 1))
  fi
  checked=$((checked + 1))
done
done
echo "corpus arrays checked through data.csv: $checked, failed: $failed"
[ "$failed" -eq 0 ] || fail "$failed arrays differ"
[ "$checked" -ge 100 ] || fail "only $checked arrays checked"
pass
