#!/usr/bin/env bash
# The service and a real PostgreSQL starting in either order (issue #13): a replica started before
# its database keeps retrying (`--store-connect-timeout-s`), logs each failed attempt, and becomes
# ready once PostgreSQL is up; with the timeout at 0 it exits 1 at once with an error naming the
# store, instead of hanging.
#
#   service_store_wait.sh SERVICE_BINARY SOURCE_DIR   (exit 77: PostgreSQL not installed —
#   scripts/install-deps.sh --test installs it)
set -uo pipefail
svc=$(realpath "${1:?usage: service_store_wait.sh SERVICE SOURCE_DIR}")
root=$(realpath "${2:?}")
source "$(dirname "$0")/pg_lib.sh"
pg_find || { echo "SKIP: postgresql not installed"; exit 77; }
command -v psql >/dev/null && command -v curl >/dev/null || { echo "SKIP: psql or curl missing"; exit 77; }

T=$(mktemp -d /tmp/svc-store-wait.XXXXXX)
chmod 755 "$T"
mkdir -p "$T/d1" "$T/d2"
pg_prepare "$T/pg"
pids=()
LOGS_ON_FAILURE=($T/svc*.log)
trap pg_test_cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

PGPORT=$(free_port)
SPORT=$(free_port)
URI="postgres://postgres@127.0.0.1:$PGPORT/postgres"

# 1. Timeout 0, nothing listening: exit 1 promptly, the error names the store.
start=$SECONDS
"$svc" --listen "127.0.0.1:$SPORT" --store "$URI" --store-connect-timeout-s 0 --rules "$root/rules" \
  --data-dir "$T/d1" --log-format text >"$T/svc0.log" 2>&1
rc=$?
[[ $rc == 1 ]] || fail "with --store-connect-timeout-s 0 and no database the service exited $rc, expected 1"
((SECONDS - start <= 10)) || fail "exiting took $((SECONDS - start)) s"
grep -q "store" "$T/svc0.log" || fail "the error does not name the store: $(cat "$T/svc0.log")"
grep -q "retrying" "$T/svc0.log" && fail "timeout 0 must not retry"
echo "ok: timeout 0 exits 1 in $((SECONDS - start)) s naming the store"

# 2. The service first, PostgreSQL a few seconds later: the service waits, then becomes ready.
"$svc" --listen "127.0.0.1:$SPORT" --store "$URI" --store-connect-timeout-s 120 --rules "$root/rules" \
  --data-dir "$T/d2" --log-format text --log-level info >"$T/svc1.log" 2>&1 &
pids+=($!)
wait_for 30 grep -q "store not reachable yet, retrying" "$T/svc1.log" || fail "no retry logged while the database is down"
kill -0 "${pids[0]}" 2>/dev/null || fail "the service exited while waiting for its store"
pg_initdb || fail "initdb"
pg_start "$PGPORT" || fail "postgres did not start"
ready() { curl -sf -o /dev/null "http://127.0.0.1:$SPORT/v2/readyz"; }
wait_for 60 ready || fail "the service did not become ready after PostgreSQL came up"
attempts=$(grep -c "store not reachable yet, retrying" "$T/svc1.log")
body=$(curl -sf "http://127.0.0.1:$SPORT/v2/readyz")
[[ $body == *'"store":"ok"'* ]] || fail "readyz: $body"
echo "ok: started before its database, retried $attempts times, ready once PostgreSQL was up ($body)"
echo "PASS"
