#!/usr/bin/env bash
# Browser test of `attribution-blueprint web` (registered with ctest by blueprint/web.cmake):
#   run.sh BLUEPRINT_BINARY BUILD_DIR
# Builds a store with the product's own writer (`run --adapter static --db`) from samples/ and from
# the test's own bundles (tests/dashboard/bundles/, written by samples/_gen for this test: they
# make gpu-a03 a repeat offender in the fleet view), serves it on a free loopback port, drives
# headless Debian chromium with playwright-core, saves screenshots under
# BUILD_DIR/test-artifacts/dashboard/. If the writer fails or stores fewer runs than bundles, the
# test fails: there is no fallback writer.
set -euo pipefail
bin=${1:?usage: run.sh BLUEPRINT_BINARY BUILD_DIR}
build=${2:?usage: run.sh BLUEPRINT_BINARY BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
art="$build/test-artifacts/dashboard"
mkdir -p "$art"

chromium=${CHROMIUM:-/usr/bin/chromium}
[[ -x $chromium ]] || { echo "SKIP: $chromium not installed (apt-get install chromium)"; exit 77; }
command -v node >/dev/null || { echo "SKIP: node not installed"; exit 77; }
if [[ ! -d $here/node_modules/playwright-core ]]; then
  (cd "$here" && npm ci --no-audit --no-fund >/dev/null) || { echo "SKIP: npm ci failed (playwright-core)"; exit 77; }
fi

# The store, written by the product: every sample and every dashboard bundle, one run each.
db="$art/samples.sqlite"
rm -f "$db" "$db-wal" "$db-shm"
bundles=()
for d in "$root"/samples/*/ "$here"/bundles/*/; do
  [[ -f $d/workload.yaml ]] && bundles+=(--bundle "${d%/}")
done
rc=0
ATTRIBUTION_RULES_DIR=${ATTRIBUTION_RULES_DIR:-$root/rules} \
  "$bin" run --adapter static "${bundles[@]}" --db "$db" -j 2 --progress never >"$art/run.log" 2>&1 || rc=$?
n=$(sqlite3 "$db" 'SELECT count(*) FROM runs' 2>/dev/null || echo 0)
if [[ $rc -ne 0 || $n -ne $(( ${#bundles[@]} / 2 )) ]]; then
  echo "FAIL: 'run --adapter static --db' exited $rc and stored $n runs of $(( ${#bundles[@]} / 2 )) bundles"
  tail -20 "$art/run.log"
  exit 1
fi
echo "store written by 'attribution-blueprint run --db': $db ($n runs)"

log="$art/server.log"
: >"$log"  # exists before the server starts, so the wait below never reads a missing file
"$bin" web --db "$db" --listen 127.0.0.1:0 >"$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
url=""
deadline=$((SECONDS + 120))  # waits for the "listening on" line; the limit only bounds a hang
while (( SECONDS < deadline )); do
  url=$(sed -n 's/^listening on \(http:[^ ]*\)$/\1/p' "$log")
  [[ -n $url ]] && break
  kill -0 $server 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.1
done
[[ -n $url ]] || { echo "server did not start"; cat "$log"; exit 1; }
echo "dashboard at $url (store $db)"

BASE_URL=$url ART_DIR=$art CHROMIUM=$chromium SAMPLES_DIR=$root/samples node "$here/dashboard.test.mjs"
