#!/usr/bin/env bash
# Runs every test: unit, samples, rules fixtures, fuzzing smoke, and the integration scripts that
# start real services (Slurm, PostgreSQL, Prometheus, Chromium) on loopback.
#
# A skipped test is not a passed one: the integration scripts skip (exit 77) when a package they
# need is missing, and this script then fails, naming them. ATTRIBUTION_ALLOW_SKIPS=1 accepts
# skips on a developer machine that lacks some packages.
set -uo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/.."
export ATTRIBUTION_RULES_DIR="$PWD/rules"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
ctest --test-dir "$BUILD" --output-on-failure --timeout 1200 | tee "$log"
rc=${PIPESTATUS[0]}
skipped=$(grep -c '\*\*\*Skipped' "$log" || true)
if [[ "$skipped" -gt 0 && "${ATTRIBUTION_ALLOW_SKIPS:-0}" != 1 ]]; then
  echo "error: $skipped test(s) skipped; a skip is not a pass (ATTRIBUTION_ALLOW_SKIPS=1 to accept):" >&2
  grep '\*\*\*Skipped' "$log" >&2
  [[ $rc -eq 0 ]] && rc=1
fi
exit "$rc"
