#!/usr/bin/env bash
# Crashes of the tool: `tfs ingest`, `tfs consolidate --mode M` and
# `tfs vacuum --mode M` are SIGKILLed at a random moment (within 0.8 times
# an uninterrupted run as the script times it, process start included, so
# that about half the kills land mid-way) on fresh copies of arrays with several fragments
# and metadata. After every kill `tfs dump` (latest, and opened at older
# times) must read exactly the state before or the state after the
# operation, whatever the killed run left behind, and the same operation
# run again must succeed and give the state after. TFS_CRASH_ITERATIONS
# sets the number of kills (300 by default, for CI; more for a long run),
# TFS_CRASH_SECONDS stops earlier (150 by default; every case runs once
# at least), so that a sanitizer build stays within CTest's timeout.
source "$(dirname "$0")/lib/common.sh"
: "${TFS:?TFS must name the tfs tool}"

ITER=${TFS_CRASH_ITERATIONS:-300}
SECS=${TFS_CRASH_SECONDS:-150}
B=$WORK/base
mkdir -p "$B"
cp -r "$CORPUS/dense_fragments_overlap" "$CORPUS/many_fragments" \
      "$CORPUS/metadata" "$CORPUS/metadata_consolidated" "$B/"
chmod -R u+w "$B"

# A sparse array written by the tool itself: 4 ingests (4 fragments) over
# 200 x 50 cells, and k.csv that rewrites all of them (the ingest case).
cat >"$WORK/schema.json" <<'EOF'
{
  "array_type": "sparse",
  "schema": {
    "dims": [
      {"name": "x", "type": "INT32", "domain": [0, 199], "tile": 50},
      {"name": "y", "type": "INT32", "domain": [0, 49], "tile": 50}
    ],
    "attrs": [
      {"name": "a", "type": "INT64", "cell_val_num": 1, "nullable": false},
      {"name": "s", "type": "STRING_UTF8", "cell_val_num": "var", "nullable": false}
    ],
    "allows_dups": false, "capacity": 1000
  }
}
EOF
"$PY" - "$WORK" <<'PYEOF'
import sys
work = sys.argv[1]
for k in range(1, 5):
    with open(f"{work}/p{k}.csv", "w") as out:
        out.write("x,y,a,s\n")
        for x in range((k - 1) * 60, (k - 1) * 60 + 80):
            if x < 200:
                for y in range(50):
                    out.write(f"{x},{y},{k * 1000 + y},v{k}_{x}\n")
with open(f"{work}/k.csv", "w") as out:
    out.write("x,y,a,s\n")
    for x in range(200):
        for y in range(50):
            out.write(f"{x},{y},{-x * y},new{x}\n")
PYEOF
"$TFS" create "$B/made" "$WORK/schema.json" || fail "tfs create"
for k in 1 2 3 4; do
  "$TFS" ingest "$B/made" "$WORK/p$k.csv" --quiet || fail "tfs ingest p$k"
  sleep 0.01
done

# snap A TIMES...: what a reader sees, as one canonical line: the schema,
# non-empty domain, metadata and cells of the latest state, and the
# metadata and cells as of every older time. Fragment lists are left out
# (consolidation and vacuum change them, not what is read), and cells are
# compared as a multiset (a consolidated fragment may order duplicates
# differently).
cat >"$WORK/snap.py" <<'PYEOF'
import json, subprocess, sys
tfs, array, times = sys.argv[1], sys.argv[2], sys.argv[3:]
out = []
for t in [None] + times:
    cmd = [tfs, "dump", array] + ([] if t is None else ["--timestamp", t])
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"dump {t}: status {p.returncode}: {p.stderr.strip()}")
    d = json.loads(p.stdout)
    reads = [sorted(json.dumps(c, sort_keys=True) for c in r["cells"])
             for r in d["reads"]]
    keep = {"metadata": d["metadata"], "reads": reads}
    if t is None:
        keep["schema"] = d["schema"]
        keep["non_empty_domain"] = d["non_empty_domain"]
    out.append(keep)
print(json.dumps(out, sort_keys=True))
PYEOF

# Older times to open at: each fragment's t1 and t1 - 1, at most 6.
times_of() {
  "$TFS" dump "$1" --no-full | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
ts = sorted({f["timestamps"][0] for f in d["fragments"]})
pick = [ts[i * (len(ts) - 1) // 2] for i in range(3)] if ts else []
print(" ".join(str(x) for t in sorted(set(pick)) for x in (t - 1, t)))'
}
snap() {
  local a=$1
  shift
  "$PY" "$WORK/snap.py" "$TFS" "$a" "$@"
}

# run CASE ARRAY: the operation of a case on ARRAY.
# command_of OPERATION ARRAY: sets CMD to the tool's command line, so that
# a background run is the tool's own process (a backgrounded shell function
# would be a subshell, and killing it would leave the tool running).
command_of() {
  case "$1" in
    ingest) CMD=("$TFS" ingest "$2" "$WORK/k.csv" --quiet) ;;
    con-*) CMD=("$TFS" consolidate "$2" --mode "${1#con-}") ;;
    vac-*) CMD=("$TFS" vacuum "$2" --mode "${1#vac-}") ;;
  esac
}

run() {
  command_of "$1" "$2"
  "${CMD[@]}"
}

# Cases: ARRAY:OPERATION. A vacuum case starts from the array consolidated
# in that mode (uninterrupted), since vacuum removes only what a
# consolidation made obsolete.
CASES=(made:ingest made:con-fragments made:con-fragment-meta
       made:con-commits made:vac-fragments
       dense_fragments_overlap:con-fragments dense_fragments_overlap:vac-fragments
       dense_fragments_overlap:con-commits dense_fragments_overlap:vac-commits
       many_fragments:con-fragment-meta many_fragments:vac-fragment-meta
       many_fragments:con-fragments many_fragments:vac-fragments
       metadata:con-array-meta metadata:vac-array-meta
       metadata_consolidated:con-array-meta metadata_consolidated:vac-array-meta
       metadata_consolidated:con-fragments)
declare -A WINDOW TIMES KILLED TOTAL LANDED
c=0
for cs in "${CASES[@]}"; do
  a=${cs%%:*} op=${cs#*:}
  d=$WORK/case$c
  mkdir -p "$d"
  cp -r "$B/$a" "$d/start"
  if [[ $op == vac-* ]]; then
    "$TFS" consolidate "$d/start" --mode "${op#vac-}" >/dev/null ||
      fail "$cs: consolidation before the vacuum"
  fi
  TIMES[$c]=$(times_of "$d/start")
  # shellcheck disable=SC2086
  snap "$d/start" ${TIMES[$c]} >"$d/before" || fail "$cs: dump before"
  cp -r "$d/start" "$d/done"
  t0=$(date +%s%N)
  run "$op" "$d/done" >/dev/null || fail "$cs: uninterrupted run"
  WINDOW[$c]=$(( ($(date +%s%N) - t0) / 1000000 * 4 / 5 + 2 ))
  # shellcheck disable=SC2086
  snap "$d/done" ${TIMES[$c]} >"$d/after" || fail "$cs: dump after"
  # Consolidation must not change what any time reads.
  if [[ $op == con-* ]]; then
    cmp -s "$d/before" "$d/after" || fail "$cs: consolidation changed a read"
  else
    cmp -s "$d/before" "$d/after" && [ "$op" = ingest ] && fail "$cs: ingest changed nothing"
  fi
  KILLED[$c]=0 TOTAL[$c]=0 LANDED[$c]=0
  c=$((c + 1))
done
echo "cases: ${#CASES[@]}; windows (ms): ${WINDOW[*]}"

# Which of before/after a snapshot is, or the first difference.
which_state() {
  if cmp -s "$1" "$2/before"; then echo before
  elif cmp -s "$1" "$2/after"; then echo after
  else echo neither
  fi
}

end=$(( $(date +%s) + SECS ))
n=0
leftovers=0
PARTIAL=0
while [ "$n" -lt "$ITER" ] || [ "$n" -lt "${#CASES[@]}" ]; do
  [ "$n" -ge "${#CASES[@]}" ] && [ "$(date +%s)" -ge "$end" ] && break
  c=$(( n % ${#CASES[@]} ))
  cs=${CASES[$c]} op=${CASES[$c]#*:}
  d=$WORK/case$c
  rm -rf "$d/try"
  cp -r "$d/start" "$d/try"
  command_of "$op" "$d/try"
  "${CMD[@]}" >/dev/null 2>&1 &
  pid=$!
  ms=$(( RANDOM % WINDOW[$c] ))
  sleep "$(printf '%d.%03d' $(( ms / 1000 )) $(( ms % 1000 )))"
  kill -9 "$pid" 2>/dev/null || true
  rc=0
  { wait "$pid"; } 2>/dev/null || rc=$?  # no "Killed" line per kill
  case "$rc" in
    0) ;;
    137) KILLED[$c]=$(( KILLED[$c] + 1 )) ;;
    *) fail "$cs: iteration $n: status $rc without a kill" ;;
  esac
  # shellcheck disable=SC2086
  snap "$d/try" ${TIMES[$c]} >"$d/now" || fail "$cs: iteration $n: dump after the kill"
  s=$(which_state "$d/now" "$d")
  if [ "$s" = neither ] && [[ $op == vac-* ]]; then
    # A vacuum removes the history inside a consolidated range one
    # fragment at a time, so older times may lose it part way; the latest
    # state and its metadata must still be exact.
    "$PY" - "$d/now" "$d/before" <<'PYEOF' && s=partial-history
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
sys.exit(a[0] != b[0])
PYEOF
  fi
  [ "$s" != partial-history ] || PARTIAL=$((PARTIAL + 1))
  [ "$s" != neither ] || {
    diff <(tr ',' '\n' <"$d/before") <(tr ',' '\n' <"$d/now") | head -20 >&2
    fail "$cs: iteration $n (killed after $ms ms, status $rc): the array reads neither as before nor as after"
  }
  if [ "$s" = before ]; then
    # What the killed run left (hidden files, uncommitted folders) was
    # ignored by the reads above.
    extra=$(comm -13 <(cd "$d/start" && find . | sort) <(cd "$d/try" && find . | sort) | wc -l)
    leftovers=$(( leftovers + extra ))
  else
    LANDED[$c]=$(( LANDED[$c] + 1 ))
  fi
  # The same operation again succeeds over whatever was left, and ends in
  # the state after.
  run "$op" "$d/try" >/dev/null || fail "$cs: iteration $n: run after the kill failed"
  # shellcheck disable=SC2086
  snap "$d/try" ${TIMES[$c]} >"$d/now" || fail "$cs: iteration $n: dump after the rerun"
  cmp -s "$d/now" "$d/after" || {
    diff <(tr ',' '\n' <"$d/after") <(tr ',' '\n' <"$d/now") | head -20 >&2
    fail "$cs: iteration $n: the run after the kill does not read as an uninterrupted run"
  }
  TOTAL[$c]=$(( TOTAL[$c] + 1 ))
  n=$((n + 1))
done

killed=0
for c in "${!CASES[@]}"; do
  echo "${CASES[$c]}: ${TOTAL[$c]} runs, ${KILLED[$c]} killed mid-way, ${LANDED[$c]} read as after (for consolidation, and vacuums other than fragments, after reads as before) (window ${WINDOW[$c]} ms)"
  killed=$(( killed + KILLED[$c] ))
done
echo "$n runs, $killed killed mid-way, $leftovers leftover paths ignored by readers, $PARTIAL vacuums stopped with part of the history inside a range left: always before or after"
pass
