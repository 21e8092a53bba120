#!/usr/bin/env bash
# Runs a command against the test server of server_fixture.sh:
#   with_s3.sh SERVER_DIR COMMAND [ARGS...]
# with the AWS_* settings of the server exported, TFS_S3_TEST_URI naming a
# fresh prefix of the test bucket, and S3CMD_CONFIG an s3cmd configuration.
set -euo pipefail
dir=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
eval "$("$here/../../scripts/s3-server.sh" env "$dir")"
export AWS_ENDPOINT_URL AWS_REGION AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
# Settings from files in a home of the tests' own: none.
export HOME=$dir/home
mkdir -p "$HOME"
export TFS_S3_TEST_URI=${TFS_S3_TEST_URI:-s3://tfs-test/run-$$}
export S3CMD_CONFIG=$dir/s3cfg
exec "$@"
