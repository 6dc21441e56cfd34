#!/bin/bash
# watch mode against a real single-node Slurm: the first `watch --once` sets the cursor (a job that
# ended before it is not taken), a job that ends afterwards is picked up by the next poll, a third
# poll processes nothing (never twice), each poll is a new process (the cursor survives restarts),
# and a long-running `watch --interval 2s` picks up a job while it runs.
# Usage: watch.sh BLUEPRINT_BINARY SOURCE_DIR. Exit 77 = skipped.
set -euo pipefail
BIN=$(realpath "$1"); SRC=$(realpath "$2")
source "$SRC/tests/integration/slurm_env.sh"
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
check() { if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else fail "$1: got '$2', expected '$3'"; fi; }
cd "$T/out"
DB="$T/watch.sqlite"
W=("$BIN" watch --adapter slurm --set adapters.slurm.slurm_conf="$SLURM_CONF" --cluster "$CLUSTER" --db "$DB" --progress never)
q() { sqlite3 "$DB" "$1"; }
state() { sacct -n -X -P -j "$1" -o State 2>/dev/null | tail -1; }
wait_done() { for _ in $(seq 1 90); do state "$1" | grep -qE '^(FAILED|COMPLETED|CANCELLED|TIMEOUT|OUT_OF_MEMORY)' && return 0; sleep 1; done; fail "job $1 did not end"; }

J_BEFORE=$(sbatch --parsable -J before -o "$T/out/%x-%j.out" --wrap 'exit 1')
wait_done "$J_BEFORE"
sleep 1
"${W[@]}" --once >"$T/w1.out" 2>&1 || fail "watch 1: $(cat "$T/w1.out")"
check "poll 1 (sets cursor): runs" "$(q 'SELECT count(*) FROM runs')" 0
check "cursor stored" "$(q "SELECT count(*) FROM cursors WHERE name='slurm:$CLUSTER'")" 1

J_AFTER=$(sbatch --parsable -J after -o "$T/out/%x-%j.out" --wrap 'echo "RuntimeError: boom"; python3 -c "raise RuntimeError(\"boom\")"')
wait_done "$J_AFTER"
sleep 1
"${W[@]}" --once -o json >"$T/w2.out" 2>"$T/w2.err" || fail "watch 2: $(cat "$T/w2.err")"
check "poll 2 picks up the job that ended after the cursor" "$(python3 -c "import json,sys; print([json.loads(l)['job_id'] for l in open('$T/w2.out') if l.strip()])")" "['$J_AFTER']"
check "stored" "$(q "SELECT job_id||'|'||outcome FROM runs")" "$J_AFTER|application.exception"
"${W[@]}" --once >"$T/w3.out" 2>&1 || fail "watch 3: $(cat "$T/w3.out")"
check "poll 3 processes nothing (never twice)" "$(grep -c "^$J_AFTER " "$T/w3.out" || true)" 0
check "rows after poll 3" "$(q 'SELECT count(*) FROM runs')" 1
check "the job before the cursor was not taken" "$(q "SELECT count(*) FROM runs WHERE job_id='$J_BEFORE'")" 0

# a long-running watcher follows jobs as they end, then stops cleanly on SIGTERM
"${W[@]}" --interval 2s >"$T/w4.out" 2>"$T/w4.err" &
WPID=$!
J_A=$(sbatch --parsable -J live-a -o "$T/out/%x-%j.out" --wrap 'sleep 2; exit 4')
J_B=$(sbatch --parsable -J live-b -o "$T/out/%x-%j.out" --wrap 'sleep 3; exit 5')
wait_done "$J_A"; wait_done "$J_B"
for _ in $(seq 1 30); do [ "$(q "SELECT count(*) FROM runs WHERE job_id IN ('$J_A','$J_B')")" = 2 ] && break; sleep 1; done
kill -TERM "$WPID"; wait "$WPID" || true
check "live watcher stored both jobs once" "$(q "SELECT count(*) FROM runs WHERE job_id IN ('$J_A','$J_B')")" 2
check "live watcher exit codes" "$(q "SELECT group_concat(json_extract(verdict_json,'$.exit_code'), ',') FROM (SELECT * FROM runs WHERE job_id IN ('$J_A','$J_B') ORDER BY end_ns, job_id)")" "4:0,5:0"
"${W[@]}" --once >"$T/w5.out" 2>&1 || true
check "restart after SIGTERM: nothing reprocessed" "$(q 'SELECT count(*) FROM runs')" 3
echo "cursor: $(q "SELECT value FROM cursors")"
if [ $FAILS -gt 0 ]; then echo "FAILED: $FAILS check(s)"; exit 1; fi
echo "PASS: watch against real Slurm"
