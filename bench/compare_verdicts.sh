#!/usr/bin/env bash
# Verdict bytes and exit codes of two analyze builds on the same bundles and the same rules: the
# check that an engine change which should not change any verdict did not. Each build keeps its own
# compiled-rules cache. Prints every bundle whose JSON or exit code differ, then the totals; exits 1
# when any differ.
#   bench/compare_verdicts.sh BEFORE_BIN AFTER_BIN [BUNDLE_DIR...]
# Without bundle directories: every bundle under samples/, tests/real/ and tests/heldout/.
# Environment: RULES (rules/), THREADS ("1 2": analyze -j values to run).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RULES=${RULES:-$ROOT/rules}
THREADS=${THREADS:-"1 2"}
[[ $# -ge 2 ]] || { echo "usage: $0 BEFORE_BIN AFTER_BIN [BUNDLE_DIR...]" >&2; exit 2; }
before=$1 after=$2
shift 2
dirs=("$@")
if [[ ${#dirs[@]} -eq 0 ]]; then
  for d in "$ROOT"/samples/*/ "$ROOT"/tests/real/*/ "$ROOT"/tests/heldout/batch*/*/; do dirs+=("$d"); done
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
runs=0 differ=0
for d in "${dirs[@]}"; do
  [[ -f "$d/workload.yaml" ]] || continue
  for j in $THREADS; do
    runs=$((runs + 1))
    XDG_CACHE_HOME="$TMP/cache-before" "$before" analyze "$d" -j"$j" -o json --rules "$RULES" > "$TMP/b.json" 2> /dev/null
    eb=$?
    XDG_CACHE_HOME="$TMP/cache-after" "$after" analyze "$d" -j"$j" -o json --rules "$RULES" > "$TMP/a.json" 2> /dev/null
    ea=$?
    if [[ $eb != "$ea" ]] || ! cmp -s "$TMP/b.json" "$TMP/a.json"; then
      differ=$((differ + 1))
      echo "differs: $d -j$j (exit $eb / $ea)"
    fi
  done
done
echo "runs=$runs differing=$differ"
[[ $differ -eq 0 ]]
