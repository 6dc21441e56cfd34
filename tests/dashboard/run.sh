#!/usr/bin/env bash
# Browser test of `attribution-blueprint web` (registered with ctest by blueprint/web.cmake):
#   run.sh BLUEPRINT_BINARY BUILD_DIR
# Builds a store from samples/, serves it on a free loopback port, drives headless Debian
# chromium with playwright-core, saves screenshots under BUILD_DIR/test-artifacts/dashboard/.
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

# The store: the blueprint's own writer when it has one, else the fixture builder.
db="$art/samples.sqlite"
rm -f "$db" "$db-wal" "$db-shm"
if [[ ${DASHBOARD_FIXTURE_STORE:-0} != 1 ]] && "$bin" run --help 2>/dev/null | grep -q -- '--db'; then
  bundles=()
  for d in "$root"/samples/*/; do
    [[ -f $d/workload.yaml ]] && bundles+=(--bundle "${d%/}")
  done
  ATTRIBUTION_RULES_DIR=${ATTRIBUTION_RULES_DIR:-$root/rules} \
    "$bin" run --adapter static "${bundles[@]}" --db "$db" -j 2 >"$art/run.log" 2>&1 || {
      echo "note: 'run --adapter static' exited $? (see $art/run.log)"; }
  echo "store written by the blueprint's writer: $db"
fi
if [[ ! -s $db ]] || [[ $(sqlite3 "$db" 'SELECT count(*) FROM runs' 2>/dev/null || echo 0) == 0 ]]; then
  rm -f "$db"
  python3 "$here/build_store.py" "$bin" "$db" --samples "$root/samples" --cache "$art/verdicts" --jobs 2
fi

log="$art/server.log"
"$bin" web --db "$db" --listen 127.0.0.1:0 >"$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
url=""
for _ in $(seq 100); do
  url=$(sed -n 's/^listening on \(http:[^ ]*\)$/\1/p' "$log")
  [[ -n $url ]] && break
  kill -0 $server 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.1
done
[[ -n $url ]] || { echo "server did not start"; cat "$log"; exit 1; }
echo "dashboard at $url (store $db)"

BASE_URL=$url ART_DIR=$art CHROMIUM=$chromium SAMPLES_DIR=$root/samples node "$here/dashboard.test.mjs"
