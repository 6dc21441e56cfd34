#!/usr/bin/env bash
# Browser test of the dashboard's Fabric page (registered with ctest by blueprint/web.cmake):
#   fabric.sh BLUEPRINT_BINARY BUILD_DIR
# The store is written by the product from the simulated fleet (bench/fabric/run.sh, profile ctest:
# gen_fleet.py → topology import → run --adapter static → fleet fabric, which stores its findings),
# served by `attribution-blueprint web`, driven in headless Debian chromium (playwright-core).
# Screenshots go to BUILD_DIR/test-artifacts/dashboard-fabric/ (the test prints the paths).
set -euo pipefail
bin=${1:?usage: fabric.sh BLUEPRINT_BINARY BUILD_DIR}
build=${2:?usage: fabric.sh BLUEPRINT_BINARY BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
art="$build/test-artifacts/dashboard-fabric"
mkdir -p "$art"

chromium=${CHROMIUM:-/usr/bin/chromium}
[[ -x $chromium ]] || { echo "SKIP: $chromium not installed (apt-get install chromium)"; exit 77; }
command -v node >/dev/null || { echo "SKIP: node not installed"; exit 77; }
if [[ ! -d $here/node_modules/playwright-core ]]; then
  (cd "$here" && npm ci --no-audit --no-fund >/dev/null) || { echo "SKIP: npm ci failed (playwright-core)"; exit 77; }
fi

fleet="$art/fleet"
BIN=$bin OUT=$fleet PROFILE=ctest bash "$root/bench/fabric/run.sh" >"$art/bench.log" 2>&1 || {
  tail -30 "$art/bench.log"; echo "FAIL: bench/fabric/run.sh (log: $art/bench.log)"; df -h "$art" /tmp 2>/dev/null; exit 1; }
tail -1 "$art/bench.log"
db="$fleet/fleet.sqlite"

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
BASE_URL=$url ART_DIR=$art CHROMIUM=$chromium TRUTH=$fleet/truth.json node "$here/fabric.test.mjs"
