#!/usr/bin/env bash
# Cleanup of crashed writes (SPEC §6) never touches committed data: a
# writable mount over a copy of the whole corpus, told to treat every
# uncommitted fragment folder as a leftover at once (cleanup_grace=0),
# removes nothing from it (every format version, consolidated and vacuumed
# arrays, groups), while a leftover planted in a copy is removed; and a
# read-only copy (no write bits) is never swept.
source "$(dirname "$0")/lib/common.sh"

SRC=$WORK/src
cp -r "$CORPUS" "$SRC"
chmod -R u+w "$SRC"
# A crashed write's leftover: a fragment folder without its commit.
cp -r "$SRC/dense_1d" "$SRC/crashed"
frag=$(ls "$SRC/crashed/__fragments" | head -1)
cp -r "$SRC/crashed/__fragments/$frag" "$SRC/crashed/__fragments/__1_1_0123456789abcdef0123456789abcdef_22"
# The same in a folder without write bits: not this mount's to clean.
cp -r "$SRC/crashed" "$SRC/readonly"
chmod -R a-w "$SRC/readonly"
list() { (cd "$SRC" && find . | sort); }
before=$(list)

mount_tilefs "$SRC" "$WORK/mnt" -o cleanup_grace=0
for _ in $(seq 1 200); do
  grep -q 'cleanup: .* checked' "$LOG" && break
  sleep 0.05
done
grep -q 'cleanup: .* checked' "$LOG" || fail "the sweep did not finish"
after=$(list)
gone=$(diff <(echo "$before") <(echo "$after") | grep '^<' || true)
want="< ./crashed/__fragments/__1_1_0123456789abcdef0123456789abcdef_22"
echo "$gone" | grep -v "^$want" | grep -q . && fail "cleanup removed committed data: $gone"
echo "$gone" | grep -qx "$want" || fail "the leftover was not removed: $gone"
[ -d "$SRC/readonly/__fragments/__1_1_0123456789abcdef0123456789abcdef_22" ] ||
  fail "a folder without write bits was swept"
grep -q "cleanup of '$SRC/crashed': removed 1" "$LOG" || fail "the removal was not logged"
echo "cleanup: only the leftover removed, the corpus intact"
chmod -R u+w "$SRC/readonly"
pass
