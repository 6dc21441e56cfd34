#!/bin/bash
# PostgreSQL store against a real PostgreSQL 15 (initdb + pg_ctl on a unix socket in a temp dir, no
# TCP): migrations recorded, rows written from bundles, re-running an attempt updates its row,
# run_nodes replaced, cursors, and the verdict bytes equal the SQLite store's.
# Usage: postgres.sh BLUEPRINT_BINARY SOURCE_DIR. Exit 77 = skipped (no PostgreSQL installed).
set -euo pipefail
BIN=$(realpath "$1"); SRC=$(realpath "$2")
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$PGBIN" ] || [ ! -x "$PGBIN/initdb" ]; then echo "SKIP: postgresql-15 not installed"; exit 77; fi
command -v psql >/dev/null || { echo "SKIP: psql missing"; exit 77; }

T=$(mktemp -d /tmp/bp-pg.XXXXXX); chmod 755 "$T"
RUNAS=()
if [ "$(id -u)" = 0 ]; then chown postgres "$T"; RUNAS=(runuser -u postgres --); fi
cleanup() {
  local rc=$?
  "${RUNAS[@]}" "$PGBIN/pg_ctl" -D "$T/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$T"; exit $rc
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

"${RUNAS[@]}" "$PGBIN/initdb" -D "$T/data" -U postgres --auth=trust >"$T/initdb.log" 2>&1 || { cat "$T/initdb.log"; fail initdb; }
"${RUNAS[@]}" "$PGBIN/pg_ctl" -D "$T/data" -l "$T/pg.log" -w -o "-k $T -c listen_addresses=''" start >/dev/null \
  || { cat "$T/pg.log"; fail "pg_ctl start"; }
psql -h "$T" -U postgres -qc "CREATE DATABASE attribution" postgres
DSN="host=$T user=postgres dbname=attribution"
q() { psql -h "$T" -U postgres -d attribution -Atc "$1"; }

cd "$T"
B1=$SRC/samples/cuinit-999-one-node; B2=$SRC/samples/ib-link-flap-midrun
"$BIN" run --bundle "$B1" --bundle "$B2" --postgres "$DSN" --db "$T/mirror.sqlite" --progress never >"$T/run1.out" 2>&1 \
  || { cat "$T/run1.out"; fail "run into postgres"; }
[ "$(q 'SELECT count(*) FROM runs')" = 2 ] || fail "expected 2 runs"
[ "$(q "SELECT string_agg(version::text, ',' ORDER BY version) FROM schema_migrations")" = 1,2 ] || fail "schema_migrations (1: runs, 2: fabric tables)"
[ "$(q "SELECT outcome||'/'||domain||'/'||quality FROM runs WHERE job_id='748002'")" = "gpu.driver/gpu/definitive" ] || fail "stored verdict"
[ "$(q "SELECT affected_nodes::text FROM runs WHERE job_id='748002'")" = '["gpu-s03"]' ] || fail "affected_nodes jsonb"
[ "$(q "SELECT pg_typeof(end_time)::text FROM runs LIMIT 1")" = "timestamp with time zone" ] || fail "timestamptz"
[ "$(q "SELECT count(*) FROM run_nodes n JOIN runs r ON r.id=n.run_id WHERE r.job_id='748002' AND role='root_cause' AND node='gpu-s03'")" = 1 ] || fail run_nodes
ID1=$(q "SELECT id FROM runs WHERE job_id='748002'")
# verdict bytes identical to the embedded analyze and the SQLite mirror
"$BIN" analyze "$B1" >"$T/a.json"
q "SELECT verdict_json FROM runs WHERE job_id='748002'" >"$T/pg.json"
cmp -s "$T/a.json" "$T/pg.json" || fail "verdict bytes differ from analyze"
# re-run: same attempt updates its row (same id, newer analyzed_at), no duplicate
AT1=$(q "SELECT analyzed_at FROM runs WHERE id=$ID1")
sleep 1
"$BIN" run --bundle "$B1" --postgres "$DSN" --progress never >/dev/null 2>&1 || fail "re-run"
[ "$(q 'SELECT count(*) FROM runs')" = 2 ] || fail "re-run duplicated a row"
[ "$(q "SELECT id FROM runs WHERE job_id='748002'")" = "$ID1" ] || fail "re-run changed the id"
[ "$(q "SELECT analyzed_at > '$AT1'::timestamptz FROM runs WHERE id=$ID1")" = t ] || fail "re-run did not update analyzed_at"
[ "$(q "SELECT count(*) FROM run_nodes WHERE run_id=$ID1")" = "$(q "SELECT count(DISTINCT (node,gpu,role)) FROM run_nodes WHERE run_id=$ID1")" ] || fail "run_nodes duplicated"
# a second process migrating concurrently does not fail (advisory lock)
"$BIN" run --bundle "$B2" --postgres "$DSN" --progress never >/dev/null 2>&1 &
"$BIN" run --bundle "$B2" --postgres "$DSN" --progress never >/dev/null 2>&1 || fail "concurrent run"
wait $! || fail "concurrent run 2"
[ "$(q 'SELECT count(*) FROM schema_migrations')" = 2 ] || fail "migration applied twice"
# bad DSN: error names the key, exit 2
set +e
OUT=$("$BIN" run --bundle "$B1" --postgres "host=$T/nope dbname=x" --progress never 2>&1); RC=$?
set -e
[ $RC = 2 ] || fail "bad dsn exit $RC"
echo "$OUT" | grep -q "stores.postgres.dsn: cannot connect" || fail "bad dsn message: $OUT"
# --print-config redacts the DSN
"$BIN" run --postgres "$DSN" --print-config | grep -q '<redacted>' || fail "dsn not redacted"
"$BIN" run --postgres "$DSN" --print-config | grep -q "$T" && fail "dsn leaked in --print-config"
echo "PASS: postgres store ($(q 'SELECT count(*) FROM runs') runs, PostgreSQL $(q 'SHOW server_version'))"
