#!/usr/bin/env bash
# Listing speed: ls -l of an array of 1 000 fragments on a fresh mount and
# warm, each within 5 times its goal, and mounting a folder of 2 000 small
# arrays and listing it within 5 times 1 s (20 times under a sanitizer)
# (docs/BENCHMARKS.md,
# "Listing"): a margin for loaded CI machines. The measuring is
# tools/bench/bench_listing.sh's; its arrays are generated once under
# TMPDIR (or /var/tmp) and reused by later runs, each on its own mount.
source "$(dirname "$0")/lib/common.sh"
: "${TFS:?TFS must name the tfs tool}"

# A daemon under a sanitizer runs several times slower (shadow memory,
# checks on every access): there the margin is 20 times the bound, which
# still catches a listing that went quadratic.
factor=5
if daemon_sanitized; then
  factor=20
fi
bash "$HERE/../../tools/bench/bench_listing.sh" --quick --check "$factor" \
  --dir "${TMPDIR:-/var/tmp}/tilefs-bench-listing" \
  --tilefs "$TILEFS" --tfs "$TFS" ||
  fail "a listing took more than $factor times its bound (figures above)"
pass
