#!/usr/bin/env bash
# `tfs dump` with every argument under a local folder rewritten to the same
# path under an s3:// URI: s3_dump.sh LOCAL URI TFS dump ARGS...
set -euo pipefail
local_dir=$1 uri=$2
shift 2
args=()
for a in "$@"; do
	case "$a" in
	"$local_dir"/*) args+=("$uri/${a#"$local_dir"/}") ;;
	*) args+=("$a") ;;
	esac
done
exec "${args[@]}"
