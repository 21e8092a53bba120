#!/usr/bin/env bash
# The public corpus from a bucket: copies it into the test bucket with a
# standard client (s3cmd sync), then runs the corpus judge with `tfs dump`
# on s3:// URIs instead of folders. Runs under with_s3.sh.
#   corpus_s3.sh PYTHON CORPUS_CHECK TFS CORPUS_DIR
set -euo pipefail
python=$1 check=$2 tfs=$3 corpus=$4
uri=${TFS_S3_TEST_URI%/}/corpus
corpus=$(cd "$corpus" && pwd)
s3cmd -c "$S3CMD_CONFIG" sync --no-progress -q "$corpus/" "$uri/"
here=$(cd "$(dirname "$0")" && pwd)
"$python" "$check" --dump "bash $here/s3_dump.sh $corpus $uri $tfs dump" \
	--corpus "$corpus"
