#!/usr/bin/env bash
# CTest fixture of the s3 tests: `start DIR` runs radosgw on loopback in DIR
# (scripts/s3-server.sh), makes the bucket tfs-test and an s3cmd
# configuration; `stop DIR` stops it and removes DIR.
set -euo pipefail
cmd=$1
dir=$2
here=$(cd "$(dirname "$0")" && pwd)
server=$here/../../scripts/s3-server.sh
case "$cmd" in
start)
	if [ -d "$dir" ]; then
		"$server" stop "$dir" || true
		rm -rf "$dir"
	fi
	"$server" start "$dir" >/dev/null
	"$server" bucket "$dir" tfs-test
	port=$(cat "$dir/s3.port")
	cat >"$dir/s3cfg" <<CFG
[default]
access_key = $(cat "$dir/s3.access")
secret_key = $(cat "$dir/s3.secret")
host_base = 127.0.0.1:$port
host_bucket = 127.0.0.1:$port
use_https = False
signature_v2 = False
bucket_location = us-east-1
CFG
	echo "s3 test server on 127.0.0.1:$port"
	;;
stop)
	"$server" stop "$dir"
	rm -rf "$dir"
	;;
*)
	echo "usage: $0 start|stop DIR" >&2
	exit 2
	;;
esac
