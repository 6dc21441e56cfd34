#!/usr/bin/env bash
# A fleet's week, simulated (issue #13 §3). Measures on this machine, end to end through
# `attribution-blueprint watch` over the replay adapter (collect: the bundle's files; attribute:
# the engine; store: SQLite):
#   1. typical job: TYPICAL_JOBS replays of one 64-rank, 100 MB bundle (bench-gen-bundle, xid79),
#      released at once → workloads attributed per core-hour (CPU time of the watch process) and per
#      machine-hour;
#   2. maintenance-window burst: BURST_JOBS jobs ending within 10 simulated minutes, replaying the
#      sample bundles (samples/*, 68 KB - 1.1 MB each), released at once (speed 10^6, so the drain
#      is bound by attribution, not by the release) → drain time, rate, backlog peak, peak RSS;
#   3. the service: p50/p99 per request (POST of a 1,000-observation NDJSON batch, wrk, CONNS
#      connections) with 1 replica and with 3 replicas behind HAProxy, all on one PostgreSQL store.
# Then sizes a fleet doing 2 million workloads a week. Every measurement records the load average
# (the machine may be shared: numbers taken under load are pessimistic).
# Writes $OUT/fleet.json and, unless DOC is empty, the "A fleet's week" section of
# docs/performance.md (between its fleet-week markers; added at the end when missing).
#
#   bench/fleet/run.sh                 # 16 typical jobs, 10,000-job burst, 15 s per service run
#   QUICK=1 bench/fleet/run.sh         # 4 typical jobs, 1,000-job burst, 5 s per service run
#
# Environment: BUILD (build dir, default build-bench), BIN, GEN, SVC (service binary; empty or
# missing: service rows skipped), DATA (bench/data), OUT (bench/out/fleet), QUICK, TYPICAL_JOBS,
# BURST_JOBS, CONCURRENCY (watch --concurrency, default 2), CONNS (8), SVC_DURATION, DOC.
# Needs /usr/bin/time, /usr/bin/python3; for the service rows wrk, haproxy, PostgreSQL, curl.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench}
BIN=${BIN:-$BUILD/blueprint/attribution-blueprint}
GEN=${GEN:-$BUILD/bench/bench-gen-bundle}
SVC=${SVC-$BUILD/service/attribution-service}
DATA=${DATA:-$ROOT/bench/data}
OUT=${OUT:-$ROOT/bench/out/fleet}
QUICK=${QUICK:-0}
if [[ $QUICK == 1 ]]; then d_typ=4 d_burst=1000 d_dur=5s; else d_typ=16 d_burst=10000 d_dur=15s; fi
TYPICAL_JOBS=${TYPICAL_JOBS:-$d_typ}
BURST_JOBS=${BURST_JOBS:-$d_burst}
SVC_DURATION=${SVC_DURATION:-$d_dur}
CONCURRENCY=${CONCURRENCY:-2}
CONNS=${CONNS:-8}
DOC=${DOC-$ROOT/docs/performance.md}
PY=/usr/bin/python3
for tool in /usr/bin/time "$PY" "$BIN" "$GEN"; do
  command -v "$tool" >/dev/null || { echo "fleet: missing $tool" >&2; exit 1; }
done
mkdir -p "$DATA" "$OUT"
T=$(mktemp -d /tmp/fleet-bench.XXXXXX)
chmod 755 "$T"
PIDS=()
PGDATA_DIR=""
cleanup() {
  for p in "${PIDS[@]:-}"; do [[ -n $p ]] && kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [[ -n $PGDATA_DIR ]] && "${RUNAS[@]}" "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$T"
}
trap cleanup EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "{\"date\":\"$(date -u +%FT%TZ)\",\"cores\":$(nproc),\"quick\":$QUICK,\"concurrency\":$CONCURRENCY}" > "$OUT/fleet.jsonl"
row() { echo "$1" | tee -a "$OUT/fleet.jsonl"; }

# watch_replay NAME YAML_BUNDLES JOBS BACKLOG → runs watch over a replay of JOBS jobs released at
# once; appends a JSON row with wall, cpu, rss, the watch's own drain time and backlog peak.
watch_replay() {
  local name=$1 bundles=$2 jobs=$3 backlog=$4
  cat > "$T/$name.yaml" <<EOF
adapter: replay
rules: $ROOT/rules
adapters:
  replay:
    bundles: [$bundles]
    speed: 1000000
    bursts: [{at: 1s, jobs: $jobs, within: 10m}]
EOF
  local l0; l0=$(load)
  /usr/bin/time -f '%e %M %U %S' -o "$T/$name.time" "$BIN" watch -c "$T/$name.yaml" --db "$T/$name.sqlite" \
    --concurrency "$CONCURRENCY" --backlog "$backlog" --interval 100ms --report-every 10s --progress never \
    --metrics-file "$T/$name.prom" -o json > "$T/$name.jsonl" 2> "$T/$name.err"
  local stored printed
  stored=$(sqlite3 "$T/$name.sqlite" 'SELECT count(DISTINCT job_id) FROM runs' 2>/dev/null ||
           "$PY" -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(DISTINCT job_id) FROM runs").fetchone()[0])' "$T/$name.sqlite")
  printed=$(wc -l < "$T/$name.jsonl")
  [[ $stored == "$jobs" && $printed == "$jobs" ]] || { echo "fleet: $name: stored $stored, printed $printed, expected $jobs" >&2; tail -5 "$T/$name.err" >&2; exit 1; }
  "$PY" - "$name" "$jobs" "$T/$name.time" "$T/$name.err" "$T/$name.jsonl" "$l0" "$(load)" <<'PY'
import json, re, sys
name, jobs, timef, errf, outf, l0, l1 = sys.argv[1:8]
wall, rss_kb, user, sys_s = tail = open(timef).read().split()[-4:]
done = [l for l in open(errf) if l.startswith("watch: done:")][-1]
loop_s = float(re.search(r"([0-9.]+)s$", done.strip()).group(1))
peak = re.search(r"backlog peak (\d+)/(\d+)", done)
mb = sum(json.loads(l)["bytes"] for l in open(outf) if l.strip()) / 1e6
cpu = float(user) + float(sys_s)
print(json.dumps({"label": name, "jobs": int(jobs), "mb_per_job": round(mb / int(jobs), 2), "wall_s": float(wall),
                  "drain_s": loop_s, "cpu_s": round(cpu, 2), "jobs_per_s": round(int(jobs) / loop_s, 2),
                  "per_core_hour": round(int(jobs) * 3600 / cpu), "peak_rss_mb": round(int(rss_kb) / 1024),
                  "backlog_peak": int(peak.group(1)), "backlog_bound": int(peak.group(2)),
                  "load_before": l0, "load_after": l1}))
PY
}

# ---------------------------------------------------------------- 1. typical job
typ=$DATA/s100M-r64-xid79-seed1
if [[ ! -f $typ/.done ]]; then
  rm -rf "$typ"
  "$GEN" --out "$typ" --size 100M --ranks 64 --scenario xid79 --seed 1 --jobs 2 >&2
  touch "$typ/.done"
fi
find "$typ" -type f -print0 | xargs -0 cat > /dev/null  # page cache warm, as a node's recent logs are
row "$(watch_replay typical "$typ" "$TYPICAL_JOBS" $((2 * CONCURRENCY)))"

# ---------------------------------------------------------------- 2. burst
samples=$(for d in "$ROOT"/samples/*/; do [[ -f $d/workload.yaml ]] && printf '%s, ' "${d%/}"; done | sed 's/, $//')
row "$(watch_replay burst "$samples" "$BURST_JOBS" 256)"

# ---------------------------------------------------------------- 3. service replicas
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
RUNAS=()
svc_ok=1
for tool in wrk haproxy curl; do command -v $tool >/dev/null || { echo "fleet: no $tool: service rows skipped" >&2; svc_ok=0; }; done
[[ -n $SVC && -x $SVC ]] || { echo "fleet: no service binary ($SVC): service rows skipped" >&2; svc_ok=0; }
[[ -n $PGBIN && -x $PGBIN/initdb ]] || { echo "fleet: no PostgreSQL: service rows skipped" >&2; svc_ok=0; }
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_ready() { for _ in $(seq 1 1200); do curl -sf -o /dev/null "$1/v2/readyz" && return 0; sleep 0.1; done; return 1; }
if [[ $svc_ok == 1 ]]; then
  mkdir -p "$T/pg"
  if [[ $(id -u) == 0 ]]; then chown postgres "$T/pg"; RUNAS=(runuser -u postgres --); fi
  PGPORT=$(free_port)
  "${RUNAS[@]}" "$PGBIN/initdb" -D "$T/pg/data" -U postgres --auth=trust > "$T/initdb.log" 2>&1
  PGDATA_DIR=$T/pg/data
  "${RUNAS[@]}" "$PGBIN/pg_ctl" -D "$T/pg/data" -l "$T/pg/log" -w -t 60 \
    -o "-k $T/pg -c listen_addresses=127.0.0.1 -p $PGPORT -c max_connections=100" start > /dev/null
  psql -h 127.0.0.1 -p "$PGPORT" -U postgres -qAt -c "CREATE DATABASE attribution" postgres
  URI="postgres://postgres@127.0.0.1:$PGPORT/attribution"
  WL=$T/wl
  "$PY" "$ROOT/bench/service/make_workload.py" synthetic "$WL" --ranks 64 --lines 500 --batch 1000 > /dev/null
  ls "$WL"/batch-*.ndjson | head -16 > "$T/batches"
  # svc_run REPLICAS: starts the replicas (and HAProxy in front of 3), posts batches with wrk.
  svc_run() {
    local n=$1 ports=() pids=() url i
    for ((i = 0; i < n; i++)); do
      ports+=("$(free_port)")
      "$SVC" --listen "127.0.0.1:${ports[$i]}" --store "$URI" --rules "$ROOT/rules" --data-dir "$T/r$n-$i" \
        --log-level warn > "$T/r$n-$i.log" 2>&1 &
      pids+=($!); PIDS+=($!)
    done
    for ((i = 0; i < n; i++)); do wait_ready "http://127.0.0.1:${ports[$i]}" || { echo "replica $i not ready" >&2; tail "$T/r$n-$i.log" >&2; exit 1; }; done
    url="http://127.0.0.1:${ports[0]}"
    if (( n > 1 )); then
      local hp; hp=$(free_port)
      { printf 'global\n  maxconn 1024\ndefaults\n  mode http\n  timeout connect 2s\n  timeout client 60s\n  timeout server 60s\n'
        printf 'frontend f\n  bind 127.0.0.1:%s\n  default_backend b\nbackend b\n  balance roundrobin\n' "$hp"
        for ((i = 0; i < n; i++)); do printf '  server r%d 127.0.0.1:%s\n' "$i" "${ports[$i]}"; done; } > "$T/haproxy.cfg"
      haproxy -f "$T/haproxy.cfg" -db > "$T/haproxy.log" 2>&1 &
      pids+=($!); PIDS+=($!)
      url="http://127.0.0.1:$hp"
      wait_ready "$url" || { echo "haproxy not forwarding" >&2; exit 1; }
    fi
    local paths=""
    for _ in $(seq 1 8); do
      paths+="/v2/sessions/$(curl -sf -X POST --data-binary @"$WL/context.json" "$url/v2/sessions" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["id"])')/observations,"
    done
    local l0; l0=$(load)
    WRK_LABEL="service_${n}_replica" WRK_PATHS="$paths" WRK_BODIES="$T/batches" \
      wrk -t2 -c"$CONNS" -d"$SVC_DURATION" --timeout 30s -s "$ROOT/bench/service/wrk_post.lua" "$url" | grep '^{' > "$T/wrk.json"
    "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); d.update(replicas=int(sys.argv[2]), connections=int(sys.argv[3]), observations_per_request=1000, front=sys.argv[4], load_before=sys.argv[5], load_after=sys.argv[6]); print(json.dumps(d))' \
      "$T/wrk.json" "$n" "$CONNS" "$([[ $n -gt 1 ]] && echo haproxy || echo direct)" "$l0" "$(load)"
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  }
  row "$(svc_run 1)"
  row "$(svc_run 3)"
fi

# ---------------------------------------------------------------- sizing and the doc section
"$PY" "$ROOT/bench/fleet/report.py" "$OUT/fleet.jsonl" "$DOC" "$QUICK"
