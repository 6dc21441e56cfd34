#!/usr/bin/env bash
# The dashboard over a PostgreSQL store: a throwaway PostgreSQL 15 (initdb + pg_ctl on a unix
# socket, no TCP), the samples and tests/dashboard/bundles/ written by `run --postgres`, then the
# same browser test as run.sh.
#   postgres.sh BLUEPRINT_BINARY BUILD_DIR        (exit 77 = skipped)
set -euo pipefail
bin=$(realpath "${1:?usage: postgres.sh BLUEPRINT_BINARY BUILD_DIR}")
build=$(realpath "${2:?}")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
art="$build/test-artifacts/dashboard-postgres"
mkdir -p "$art"
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
[[ -n $PGBIN && -x $PGBIN/initdb ]] || { echo "SKIP: postgresql not installed"; exit 77; }
[[ -x ${CHROMIUM:-/usr/bin/chromium} ]] || { echo "SKIP: chromium not installed"; exit 77; }
command -v psql >/dev/null || { echo "SKIP: psql missing"; exit 77; }
if [[ ! -d $here/node_modules/playwright-core ]]; then
  (cd "$here" && npm ci --no-audit --no-fund >/dev/null) || { echo "SKIP: npm ci failed"; exit 77; }
fi

T=$(mktemp -d /tmp/dash-pg.XXXXXX); chmod 755 "$T"
RUNAS=()
if [[ $(id -u) == 0 ]]; then chown postgres "$T"; RUNAS=(runuser -u postgres --); fi
server=""
cleanup() {
  local rc=$?
  [[ -n $server ]] && { kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true; }
  "${RUNAS[@]}" "$PGBIN/pg_ctl" -D "$T/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$T"
  exit $rc
}
trap cleanup EXIT
"${RUNAS[@]}" "$PGBIN/initdb" -D "$T/data" -U postgres --auth=trust >"$art/initdb.log" 2>&1 || {
  echo "FAIL: initdb -D $T/data failed:"; cat "$art/initdb.log"; df -h "$T" "$build" 2>/dev/null; exit 1; }
"${RUNAS[@]}" "$PGBIN/pg_ctl" -D "$T/data" -l "$T/pg.log" -w -o "-k $T -c listen_addresses=''" start >/dev/null || {
  echo "FAIL: pg_ctl start failed:"; cat "$T/pg.log" 2>/dev/null; df -h "$T" "$build" 2>/dev/null; exit 1; }
psql -h "$T" -U postgres -qc "CREATE DATABASE attribution" postgres
DSN="host=$T user=postgres dbname=attribution"

# Every sample and the dashboard's own bundles (tests/dashboard/bundles/), by the product's writer.
bundles=()
for d in "$root"/samples/*/ "$here"/bundles/*/; do [[ -f $d/workload.yaml ]] && bundles+=(--bundle "${d%/}"); done
rc=0
ATTRIBUTION_RULES_DIR=${ATTRIBUTION_RULES_DIR:-$root/rules} \
  "$bin" run --adapter static "${bundles[@]}" --postgres "$DSN" -j 2 --progress never >"$art/run.log" 2>&1 || rc=$?
n=$(psql -h "$T" -U postgres -d attribution -Atc "SELECT count(*) FROM runs")
[[ $rc -eq 0 && $n -eq $(( ${#bundles[@]} / 2 )) ]] || {
  echo "FAIL: 'run --postgres' exited $rc and stored $n runs of $(( ${#bundles[@]} / 2 )) bundles"; tail -20 "$art/run.log"; exit 1; }

: >"$art/server.log"  # exists before the server starts, so the wait below never reads a missing file
"$bin" web --postgres "$DSN" --listen 127.0.0.1:0 >"$art/server.log" 2>&1 &
server=$!
url=""
deadline=$((SECONDS + 120))  # waits for the "listening on" line; the limit only bounds a hang
while (( SECONDS < deadline )); do
  url=$(sed -n 's/^listening on \(http:[^ ]*\)$/\1/p' "$art/server.log")
  [[ -n $url ]] && break
  kill -0 $server 2>/dev/null || { cat "$art/server.log"; exit 1; }
  sleep 0.1
done
[[ -n $url ]] || { echo "server did not start"; cat "$art/server.log"; exit 1; }
echo "dashboard over postgres ($n runs) at $url"
# Read-only: the server's sessions refuse writes.
BASE_URL=$url ART_DIR=$art node "$here/dashboard.test.mjs"
