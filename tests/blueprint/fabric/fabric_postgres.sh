#!/usr/bin/env bash
# The fabric store test against a real PostgreSQL: a throwaway server (initdb + pg_ctl on a unix
# socket, no TCP), then fabric_store_test's Postgres case with its DSN.
#   fabric_postgres.sh FABRIC_STORE_TEST        (exit 77 = skipped: PostgreSQL not installed)
set -euo pipefail
bin=$(realpath "${1:?usage: fabric_postgres.sh FABRIC_STORE_TEST}")
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
[[ -n $PGBIN && -x $PGBIN/initdb ]] || { echo "SKIP: postgresql not installed"; exit 77; }
command -v psql >/dev/null || { echo "SKIP: psql missing"; exit 77; }
T=$(mktemp -d /tmp/fabric-pg.XXXXXX); chmod 755 "$T"
RUNAS=()
if [[ $(id -u) == 0 ]]; then chown postgres "$T"; RUNAS=(runuser -u postgres --); fi
cleanup() {
  local rc=$?
  "${RUNAS[@]}" "$PGBIN/pg_ctl" -D "$T/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$T"
  exit $rc
}
trap cleanup EXIT
"${RUNAS[@]}" "$PGBIN/initdb" -D "$T/data" -U postgres --auth=trust >"$T/initdb.log" 2>&1
"${RUNAS[@]}" "$PGBIN/pg_ctl" -D "$T/data" -l "$T/pg.log" -w -o "-k $T -c listen_addresses=''" start >/dev/null
psql -h "$T" -U postgres -qc "CREATE DATABASE attribution" postgres
ATTRIBUTION_TEST_POSTGRES_DSN="host=$T user=postgres dbname=attribution" "$bin" --gtest_filter=FabricStore.Postgres
# The test skips itself without a DSN; here it must have run.
n=$(psql -h "$T" -U postgres -d attribution -Atc "SELECT count(*) FROM run_fabric")
[[ $n -eq 308 ]] || { echo "FAIL: run_fabric holds $n rows, expected 308"; exit 1; }
echo "fabric store on PostgreSQL: ok ($n run_fabric rows)"
