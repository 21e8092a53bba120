#!/usr/bin/env bash
# Injected faults never give wrong bytes (runs under with_s3.sh): through
# a proxy that delays, drops, truncates or answers 503/500 for 30% of the
# requests, `tfs dump` of corpus arrays in the bucket still equals their
# JSON (retries absorb the faults) or fails with an error, never with other
# bytes; an ingest through the proxy either commits a whole fragment or
# leaves none visible, and with the faults off the array reads exactly.
#   faults_s3.sh PYTHON CORPUS_CHECK TFS CORPUS_DIR
set -euo pipefail
python=$1 check=$2 tfs=$3 corpus=$4
here=$(cd "$(dirname "$0")" && pwd)
corpus=$(cd "$corpus" && pwd)
uri=${TFS_S3_TEST_URI%/}/faults
work=$(mktemp -d)
proxy_pid=
cleanup() {
	[ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

arrays=(dense_1d sparse_2d_int consolidated_fragments)
mkdir -p "$work/src"
for a in "${arrays[@]}"; do
	cp -r "$corpus/$a" "$work/src/"
	cp "$corpus/$a.json" "$work/src/" 2>/dev/null || true
	cp "$corpus/$a"@*.json "$work/src/" 2>/dev/null || true
done
s3cmd -c "$S3CMD_CONFIG" sync -q --no-progress "$work/src/" "$uri/"

upstream=${AWS_ENDPOINT_URL##*:}
"$python" "$here/fault_proxy.py" "$upstream" "$work/port" --seed 7 --rate 0.3 \
	2>"$work/proxy.log" &
proxy_pid=$!
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || fail "the proxy did not start"
direct=$AWS_ENDPOINT_URL
export AWS_ENDPOINT_URL=http://127.0.0.1:$(cat "$work/port")

# ---- reads: exact or an error, never other bytes -------------------------------
# The judge compares every field and read; any difference is a failure.
for round in 1 2; do
	"$python" "$check" --dump "bash $here/s3_dump.sh $work/src $uri $tfs dump" \
		--corpus "$work/src" >"$work/check.txt" 2>&1 ||
		fail "reads through faults (round $round): $(tail -5 "$work/check.txt")"
done
echo "reads through injected faults: $(tail -1 "$work/check.txt")"

# ---- a write through faults: a whole fragment or none ---------------------------
printf 'a,d,b\n1000,5,0.5\n1001,6,0.25\n' >"$work/in.csv"
for i in 1 2 3 4; do
	if "$tfs" ingest "$uri/dense_1d" "$work/in.csv" >"$work/ing$i.log" 2>&1; then
		echo "ingest $i through faults: committed"
	else
		echo "ingest $i through faults: failed cleanly ($(tail -1 "$work/ing$i.log"))"
	fi
done
kill "$proxy_pid"
wait "$proxy_pid" 2>/dev/null || true
proxy_pid=
cat "$work/proxy.log"
export AWS_ENDPOINT_URL=$direct
# Every commit names a whole fragment that reads: the array dumps, with
# the rows written, and every committed fragment's files are all there.
"$tfs" dump "$uri/dense_1d" >"$work/after.json" || fail "dump after the faulty ingests"
"$python" - "$work/after.json" <<'PYEOF' || fail "after the faulty ingests"
import json, sys
doc = json.load(open(sys.argv[1]))
text = json.dumps(doc)
assert "1000" in text and "1001" in text or len(doc["fragments"]) == 1, "rows"
PYEOF
s3cmd -c "$S3CMD_CONFIG" ls -r "$uri/dense_1d/" >"$work/keys.txt"
for c in $(grep -o '__commits/[^ ]*\.wrt' "$work/keys.txt"); do
	name=$(basename "$c" .wrt)
	for f in __fragment_metadata.tdb a0.tdb a1.tdb; do
		grep -q "__fragments/$name/$f" "$work/keys.txt" ||
			fail "commit $name without its $f"
	done
done
echo "PASS: faults_s3.sh"
