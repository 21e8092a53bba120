#!/usr/bin/env bash
# tfs on s3:// URIs (runs under with_s3.sh): a new array from a CSV
# (ingest --new), more fragments, consolidation and vacuum in a bucket;
# after each step `tfs dump` of the bucket equals `tfs dump` of a local
# copy made the same way (but for fragment names and times), and vacuum
# leaves only the consolidated fragment's objects.
#   tools_s3.sh TFS
set -euo pipefail
tfs=$1
uri=${TFS_S3_TEST_URI%/}/tools
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

python3 - "$work" <<'PYEOF'
import sys
w = sys.argv[1]
with open("%s/p0.csv" % w, "w") as f:
    f.write("id,name,score\n")
    for i in range(80):
        f.write("%d,n%d,%g\n" % (i, i, i * 1.5))
for k in (1, 2):
    with open("%s/p%d.csv" % (w, k), "w") as f:
        f.write("row,id,name,score\n")
        for i in range(k * 20, k * 20 + 30):
            f.write("%d,%d,m%d_%d,%g\n" % (i, i * 10, k, i, i * 0.5 + k))
PYEOF
# Fragment names hold the time and a random part: compare without them.
strip_names() { sed -E 's/__[0-9]+_[0-9]+_[0-9a-f]{32}_[0-9]+/FRAG/g; s/"(t1|t2|timestamp|opened_at)":[0-9]+/"\1":T/g'; }
same_cells() {
	"$tfs" dump "$uri/arr" | strip_names >"$work/s3.json" || fail "dump ($1)"
	"$tfs" dump "$work/arr" | strip_names >"$work/local.json" || fail "dump ($1)"
	python3 - "$work/s3.json" "$work/local.json" "$1" <<'PYEOF' || fail "$1: cells differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for d in (a, b):
    d["schema"].pop("timestamp_range", None)
assert a["schema"] == b["schema"], "schema"
assert len(a["fragments"]) == len(b["fragments"]), ("fragments", len(a["fragments"]), len(b["fragments"]))
assert a.get("reads") == b.get("reads"), "reads"
PYEOF
	echo "$1: bucket and folder hold the same cells"
}

"$tfs" ingest --new "$uri/arr" "$work/p0.csv" >/dev/null || fail "ingest --new into the bucket"
"$tfs" ingest --new "$work/arr" "$work/p0.csv" >/dev/null
for k in 1 2; do
	"$tfs" ingest "$uri/arr" "$work/p$k.csv" >/dev/null || fail "ingest $k into the bucket"
	"$tfs" ingest "$work/arr" "$work/p$k.csv" >/dev/null
done
same_cells "three ingests"
"$tfs" consolidate "$uri/arr" >/dev/null || fail "consolidate in the bucket"
"$tfs" consolidate "$work/arr" >/dev/null
same_cells "consolidated"
"$tfs" vacuum "$uri/arr" >/dev/null || fail "vacuum in the bucket"
"$tfs" vacuum "$work/arr" >/dev/null
same_cells "vacuumed"
s3cmd -c "$S3CMD_CONFIG" ls -r "$uri/arr/__fragments/" >"$work/keys.txt"
n=$(sed -E 's#.*/__fragments/([^/]*)/.*#\1#' "$work/keys.txt" | sort -u | wc -l)
[ "$n" -eq 1 ] || fail "after vacuum: $n fragment folders in the bucket, want 1"
echo "PASS: tools_s3.sh"
