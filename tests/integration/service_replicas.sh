#!/usr/bin/env bash
# Fault injection with real parts: three attribution-service replicas behind HAProxy over one
# PostgreSQL (`--store postgres://...`), fed by several blueprint processes (`analyze
# --service-url` over every sample bundle). During the run:
#   1. kill -9 of one replica (restarted on the same port a moment later);
#   2. a PostgreSQL crash and restart (pg_ctl stop -m immediate; start);
#   3. the replicas' connection pools filled: a lock on service_batches held for 4 s while extra
#      clients post straight to the replicas — they must get 503 store_busy + Retry-After in
#      about store_pool_wait_ms, not hang;
#   4. kill -9 of a blueprint process in the middle of a job, then the job run again.
# After it: every acknowledged batch is stored, every verdict is byte-identical to the embedded
# engine's (`analyze` of the same bundle, same exit code), no job missing or duplicated (one
# session per job, one verdict per session, batches numbered 1..n without gaps). Prints one line:
#   batches sent S / acknowledged A / stored D, verdicts identical N/N, duplicates 0
#
#   service_replicas.sh SERVICE_BINARY BLUEPRINT_BINARY SOURCE_DIR   (exit 77: PostgreSQL or
#   HAProxy not installed — scripts/install-deps.sh --test installs both)
set -uo pipefail
svc=$(realpath "${1:?usage: service_replicas.sh SERVICE BLUEPRINT SOURCE_DIR}")
bp=$(realpath "${2:?}")
root=$(realpath "${3:?}")
source "$(dirname "$0")/pg_lib.sh"
pg_find || { echo "SKIP: postgresql not installed"; exit 77; }
command -v haproxy >/dev/null || { echo "SKIP: haproxy not installed"; exit 77; }
command -v psql >/dev/null && command -v curl >/dev/null || { echo "SKIP: psql or curl missing"; exit 77; }

T=$(mktemp -d /tmp/svc-replicas.XXXXXX)
chmod 755 "$T"
mkdir -p "$T/exp" "$T/got" "$T/done" "$T/probe"
pg_prepare "$T/pg"
pids=()
LOGS_ON_FAILURE=($T/r*.log)
trap pg_test_cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
ready() { curl -sf -o /dev/null "http://127.0.0.1:$1/v2/readyz"; }

# --- PostgreSQL (TCP on loopback; fsync off: a process crash loses nothing, only an OS crash would)
PGPORT=$(free_port)
pg_initdb || fail "initdb"
pg_start "$PGPORT" max_connections=80 || fail "postgres did not start"
PSQL=(psql -h 127.0.0.1 -p "$PGPORT" -U postgres -v ON_ERROR_STOP=1 -qAt)
"${PSQL[@]}" -c "CREATE DATABASE attribution" postgres || fail "createdb"
URI="postgres://postgres@127.0.0.1:$PGPORT/attribution"

# --- three replicas
RPORT=("$(free_port)" "$(free_port)" "$(free_port)")
declare -A RPID
start_replica() {
  local i=$1
  "$svc" --listen "127.0.0.1:${RPORT[$i]}" --store "$URI" --store-pool-size 2 --store-pool-wait-ms 500 \
    --work-concurrency 4 --rules "$root/rules" --data-dir "$T/r$i" --log-format text --log-level warn \
    >>"$T/r$i.log" 2>&1 &
  RPID[$i]=$!
  pids+=($!)
}
for i in 0 1 2; do start_replica $i; done
for i in 0 1 2; do wait_for 120 ready "${RPORT[$i]}" || fail "replica $i not ready"; done

# --- HAProxy in front (round robin, health-checked on /v2/readyz, no session affinity)
HAPORT=$(free_port)
cat >"$T/haproxy.cfg" <<EOF
global
  maxconn 1024
defaults
  mode http
  timeout connect 2s
  timeout client 300s
  timeout server 300s
  retries 3
  option redispatch
frontend attribution
  bind 127.0.0.1:$HAPORT
  default_backend replicas
backend replicas
  balance roundrobin
  option httpchk GET /v2/readyz
  http-check expect status 200
  default-server inter 300ms fall 2 rise 2
  server r0 127.0.0.1:${RPORT[0]} check
  server r1 127.0.0.1:${RPORT[1]} check
  server r2 127.0.0.1:${RPORT[2]} check
EOF
haproxy -f "$T/haproxy.cfg" -db >"$T/haproxy.log" 2>&1 &
pids+=($!)
wait_for 60 ready "$HAPORT" || fail "haproxy not forwarding"
URL="http://127.0.0.1:$HAPORT"

# --- the jobs: every sample bundle; expected verdicts from the embedded engine
bundles=()
for d in "$root"/samples/*/; do [[ -f $d/workload.yaml ]] && bundles+=("${d%/}"); done
n=${#bundles[@]}
((n > 0)) || fail "no sample bundles"
export ATTRIBUTION_RULES_DIR=$root/rules
printf '%s\n' "${bundles[@]}" | xargs -P 2 -I{} sh -c \
  'b={}; name=$(basename "$b"); "$0" analyze "$b" -j 1 >"$1/exp/$name.json" 2>/dev/null; echo $? >"$1/exp/$name.rc"' \
  "$bp" "$T"

# --- several blueprint processes feed the replicas through HAProxy
FEEDERS=4
run_job() {  # run_job BUNDLE: one blueprint process for one job
  local b=$1 name
  name=$(basename "$b")
  "$bp" analyze "$b" -j 1 --service-url "$URL" --service-keep-session --service-stats \
    >"$T/got/$name.json" 2>"$T/got/$name.err"
  echo $? >"$T/got/$name.rc"
  touch "$T/done/$name"
}
job_has_batches() {
  local c
  c=$("${PSQL[@]}" -d attribution -c "SELECT count(*) FROM service_batches b JOIN service_sessions s ON s.id = b.session_id
                                        WHERE s.context::jsonb->>'id' = '$1'" 2>/dev/null) || return 1
  [[ $c -gt 0 ]]
}
# The jobs past each fault's point wait for it to be injected, so every fault meets traffic in
# flight however fast the machine runs the jobs (on an idle machine all of them can finish in the
# time one replica takes to restart).
gate_for() {  # gate_for JOB_INDEX
  local j=$1
  ((j < n / 8)) || wait_for 600 test -e "$T/go1"
  ((j < n * 3 / 8)) || wait_for 600 test -e "$T/go2"
  ((j < n * 5 / 8)) || wait_for 600 test -e "$T/go3"
}
feeder() {
  local f=$1 k=0
  for ((j = f; j < n; j += FEEDERS)); do
    gate_for "$j"
    k=$((k + 1))
    if [[ $f == 0 && $k == 3 ]]; then
      # A blueprint killed in the middle of a job: once the service holds some of its batches,
      # kill -9 it, then run the job again (a restarted blueprint).
      local name
      name=$(basename "${bundles[$j]}")
      "$bp" analyze "${bundles[$j]}" -j 1 --service-url "$URL" --service-keep-session >/dev/null 2>&1 &
      local victim=$!
      local job
      job=$(sed -n 's/^  id: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' "${bundles[$j]}/workload.yaml" | head -1)
      wait_for 60 job_has_batches "$job" || true
      sleep 0.2  # and a few more batches
      kill -9 $victim 2>/dev/null
      wait $victim 2>/dev/null
      echo "$name" >"$T/killed-blueprint"
    fi
    run_job "${bundles[$j]}"
  done
}
for ((f = 0; f < FEEDERS; f++)); do feeder $f & pids+=($!); feeder_pids+=($!); done
done_count() { ls "$T/done" | wc -l; }
at_least() { (($(done_count) >= $1)); }

# Fault 1: kill -9 a replica, restart it on the same port.
wait_for 300 at_least $((n / 8)) || fail "no progress before the replica kill"
kill -9 "${RPID[1]}"
wait "${RPID[1]}" 2>/dev/null
touch "$T/go1"  # the next jobs run while replica 1 is down and while it comes back
sleep 1
start_replica 1
wait_for 120 ready "${RPORT[1]}" || fail "replica 1 did not come back"
echo "fault: replica 1 killed (-9) and restarted after $(done_count)/$n jobs"

# Fault 2: PostgreSQL crashes and restarts.
wait_for 300 at_least $((n * 3 / 8)) || fail "no progress before the postgres restart"
"${RUNAS[@]}" "$PGBIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null || fail "postgres stop"
touch "$T/go2"  # the next jobs meet the database down, then recovering
sleep 1
pg_start "$PGPORT" max_connections=80 || fail "postgres did not restart"
echo "fault: postgres crash-restarted after $(done_count)/$n jobs"

# Fault 3: fill the connection pools. A lock on service_batches holds every append; extra
# clients post straight to each replica until the pools are exhausted.
wait_for 300 at_least $((n * 5 / 8)) || fail "no progress before the pool fill"
touch "$T/go3"  # the remaining jobs compete with the probes for the pools
# The extra clients' sessions exist before the lock (creating one does not touch service_batches).
for k in $(seq 0 11); do
  port=${RPORT[$((k % 3))]} id=""
  for try in $(seq 40); do  # retried with its key: the feeders may hold the pool for a moment
    id=$(curl -s -X POST "http://127.0.0.1:$port/v2/sessions" -H "Idempotency-Key: probe-s$k" \
      --data-binary '{"context":{"id":"pool-probe-'$k'","scheduler":"slurm"}}' | grep -o '^{"id":"[0-9a-f]*' | cut -d'"' -f4)
    [[ -n $id ]] && break
    sleep 0.2
  done
  [[ -n $id ]] || fail "pool probe $k: no session"
  echo "$id" >"$T/probe/$k.id"
done
"${PSQL[@]}" -d attribution -c "BEGIN; LOCK TABLE service_batches IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(4); COMMIT;" \
  >/dev/null 2>&1 &
locker=$!
# Wait until the lock is held (pg_locks), then post one text batch per extra client at once.
wait_for 30 sh -c "[ \"\$(${PSQL[*]} -d attribution -c \"SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'service_batches' AND l.mode = 'AccessExclusiveLock' AND l.granted\")\" = 1 ]" \
  || fail "the table lock was not taken"
probe() {  # probe K PORT: one text batch into its session; records status and seconds
  local k=$1 port=$2 id
  id=$(cat "$T/probe/$k.id")
  curl -s -o "$T/probe/$k.body" -D "$T/probe/$k.head" -w '%{http_code} %{time_total}\n' \
    -X POST "http://127.0.0.1:$port/v2/sessions/$id/text?source=probe.log" -H "Idempotency-Key: probe-b$k" \
    --data-binary 'probe line' >"$T/probe/$k"
}
probe_pids=()
for k in $(seq 0 11); do probe $k "${RPORT[$((k % 3))]}" & probe_pids+=($!); done
wait "${probe_pids[@]}"
wait $locker 2>/dev/null
busy=0 busy_slow=0 hung=0
for k in $(seq 0 11); do
  read -r code secs <"$T/probe/$k" || true
  if [[ $code == 503 ]] && grep -q '"code":"store_busy"' "$T/probe/$k.body" && grep -qi '^retry-after:' "$T/probe/$k.head"; then
    busy=$((busy + 1))
    awk -v s="$secs" 'BEGIN { exit !(s > 3) }' && busy_slow=$((busy_slow + 1))
  elif [[ $code != 200 ]]; then
    hung=$((hung + 1))
    echo "probe $k: $(cat "$T/probe/$k") $(head -c 200 "$T/probe/$k.body" 2>/dev/null)"
  fi
done
((busy > 0)) || fail "filling the pools produced no 503 store_busy"
((busy_slow == 0)) || fail "$busy_slow store_busy answers took more than 3 s (store_pool_wait_ms is 500)"
((hung == 0)) || fail "$hung pool-probe requests got neither 200 nor 503 store_busy"
# The refused probes, retried with the same key once the lock is gone, are stored once.
for k in $(seq 0 11); do
  id=$(cat "$T/probe/$k.id")
  code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:${RPORT[$((k % 3))]}/v2/sessions/$id/text?source=probe.log" \
    -H "Idempotency-Key: probe-b$k" --data-binary 'probe line')
  [[ $code == 200 ]] || fail "pool probe $k retried: $code"
done
echo "fault: pools filled after $(done_count)/$n jobs: $busy of 12 extra requests answered 503 store_busy + Retry-After"

for p in "${feeder_pids[@]}"; do wait "$p"; done
[[ $(done_count) == "$n" ]] || fail "only $(done_count) of $n jobs finished"

# --- accounting
identical=0 sent=0 acked=0 retries=0
for b in "${bundles[@]}"; do
  name=$(basename "$b")
  if [[ $(cat "$T/got/$name.rc") == "$(cat "$T/exp/$name.rc")" ]] && cmp -s "$T/got/$name.json" "$T/exp/$name.json"; then
    identical=$((identical + 1))
  else
    echo "verdict differs: $name (exit $(cat "$T/got/$name.rc") vs embedded $(cat "$T/exp/$name.rc")): $(head -c 300 "$T/got/$name.err")"
  fi
  read -r s a r t < <(sed -n 's/^service: batches sent \([0-9]*\) acknowledged \([0-9]*\) replayed [0-9]* retries \([0-9]*\)$/\1 \2 \3/p' "$T/got/$name.err") || true
  sent=$((sent + ${s:-0})); acked=$((acked + ${a:-0})); retries=$((retries + ${r:-0}))
done
Q() { "${PSQL[@]}" -d attribution -c "$1"; }
JOBS="SELECT id, context::jsonb->>'id' AS job FROM service_sessions WHERE NOT closed AND context::jsonb->>'id' NOT LIKE 'pool-probe-%'"
sessions=$(Q "SELECT count(*) FROM ($JOBS) j")
stored=$(Q "SELECT count(*) FROM service_batches b JOIN ($JOBS) j ON j.id = b.session_id")
dup_sessions=$((sessions > n ? sessions - n : 0))  # a job attributed twice has two sessions
dup_verdicts=$(Q "SELECT count(*) FROM ($JOBS) j WHERE (SELECT count(*) FROM service_verdicts v WHERE v.session_id = j.id) <> 1")
gaps=$(Q "SELECT count(*) FROM (SELECT session_id FROM service_batches GROUP BY session_id HAVING max(batch_no) <> count(*)) g")
probes=$(Q "SELECT count(*) FROM service_batches b JOIN service_sessions s ON s.id = b.session_id WHERE s.context::jsonb->>'id' LIKE 'pool-probe-%'")
duplicates=$((dup_sessions + dup_verdicts + gaps))
echo "batches sent $sent / acknowledged $acked / stored $stored, verdicts identical $identical/$n, duplicates $duplicates" \
     "(jobs $n, sessions $sessions, retried requests $retries, blueprint killed mid-job: $(cat "$T/killed-blueprint" 2>/dev/null))"
ok=1
[[ $identical == "$n" ]] || { echo "FAIL: $((n - identical)) verdicts differ from the embedded engine"; ok=0; }
[[ $sessions == "$n" ]] || { echo "FAIL: $sessions job sessions stored for $n jobs"; ok=0; }
[[ $acked == "$sent" && $sent -gt 0 ]] || { echo "FAIL: $sent batches sent, $acked acknowledged"; ok=0; }
[[ $stored == "$acked" ]] || { echo "FAIL: $acked batches acknowledged, $stored stored"; ok=0; }
[[ $duplicates == 0 ]] || { echo "FAIL: duplicates: $dup_sessions sessions, $dup_verdicts sessions without exactly one verdict, $gaps with gaps"; ok=0; }
[[ $probes == 12 ]] || { echo "FAIL: the 12 pool probes stored $probes batches (each must be stored once)"; ok=0; }
((retries > 0)) || { echo "FAIL: no request was retried: the faults did not reach the clients"; ok=0; }
((ok)) || exit 1
echo "PASS"
