#!/usr/bin/env bash
# Load benchmark of attribution-service with wrk (numbers recorded in docs/service.md).
#   bench/service/run.sh [SERVICE_BINARY] [SOURCE_DIR]
# Environment: RANKS (64), LINES (5000), BATCH (1000 observations per request), DURATION (15s),
# CONNS (4), OUT (bench/out/service). Prints JSON lines; a summary goes to $OUT/results.jsonl.
#  1. stream: one client streams a full RANKS x LINES session (sequential curl), then attributes;
#  2. ingest: wrk, CONNS connections POSTing BATCH-line NDJSON bodies into 8 sessions;
#  3. attribute: wrk POST /attribute on the full RANKS x LINES session;
#  4. overload: small limits, 256 connections POSTing batches: count 429s, sample RSS, check alive.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=${2:-$(cd "$HERE/../.." && pwd)}
BIN=${1:-$SRC/build/service/attribution-service}
RANKS=${RANKS:-64} LINES=${LINES:-5000} BATCH=${BATCH:-1000} DURATION=${DURATION:-15s} CONNS=${CONNS:-4}
OUT=${OUT:-$SRC/bench/out/service}
mkdir -p "$OUT"
TMP=$(mktemp -d /tmp/attribution-svc-bench-XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do [[ -n "$p" ]] && { kill "$p" 2>/dev/null || true; }; done; wait 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
command -v wrk >/dev/null || { echo "wrk is required (apt-get install wrk)"; exit 1; }

start() {  # start NAME [flags...]  → URL, PID
  local name=$1; shift
  rm -f "$TMP/$name.port"
  "$BIN" --listen 127.0.0.1:0 --data-dir "$TMP/$name" --rules "$SRC/rules" --port-file "$TMP/$name.port" \
    --log-level warn "$@" > "$TMP/$name.log" 2>&1 &
  PID=$!
  PIDS+=("$PID")
  for _ in $(seq 1 600); do [[ -s "$TMP/$name.port" ]] && break; sleep 0.05; done
  URL="http://127.0.0.1:$(cat "$TMP/$name.port")"
}
create() { curl -sf -X POST --data-binary @"$WL/context.json" "$URL/v2/sessions" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
rss_mb() { awk '/VmRSS/{printf "%.0f", $2/1024}' "/proc/$1/status"; }

WL="$TMP/wl"
echo "generating ${RANKS} ranks x ${LINES} lines ..." >&2
python3 "$HERE/make_workload.py" synthetic "$WL" --ranks "$RANKS" --lines "$LINES" --batch "$BATCH"
nobs=$(wc -l < "$WL/obs.ndjson")
ls "$WL"/batch-*.ndjson > "$TMP/all-batches"
head -32 "$TMP/all-batches" > "$TMP/batches"
bytes=$(stat -c %s "$WL/obs.ndjson")
echo "{\"workload\":{\"ranks\":$RANKS,\"lines_per_rank\":$LINES,\"observations\":$nobs,\"ndjson_bytes\":$bytes,\"batch\":$BATCH},\"cpus\":$(nproc)}" | tee "$OUT/results.jsonl"

# 1. stream a full session with one client, then attribute.
start main --max-observations-per-session 100000000
sid=$(create)
# One keep-alive connection, batches sent back to back (python http.client, so no per-request
# process start-up is measured).
python3 - "$URL" "$sid" "$TMP/all-batches" "$nobs" "$bytes" "$TMP/verdict.json" <<'PY' > "$TMP/stream.json"
import http.client, json, sys, time, urllib.parse
url, sid, listing, n, b, out = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
u = urllib.parse.urlparse(url)
conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
bodies = [open(f.strip(), "rb").read() for f in open(listing) if f.strip()]
lat = []
t0 = time.perf_counter()
for body in bodies:
    s = time.perf_counter()
    conn.request("POST", f"/v2/sessions/{sid}/observations", body, {"Content-Type": "application/x-ndjson"})
    r = conn.getresponse(); r.read()
    assert r.status == 200, r.status
    lat.append(time.perf_counter() - s)
t1 = time.perf_counter()
conn.request("POST", f"/v2/sessions/{sid}/attribute")
r = conn.getresponse(); verdict = r.read()
t2 = time.perf_counter()
open(out, "wb").write(verdict)
lat.sort()
print(json.dumps({"label": "stream_full_session_1_client", "requests": len(bodies), "seconds": round(t1 - t0, 2),
                  "observations_per_s": round(n / (t1 - t0)), "MB_per_s": round(b / (t1 - t0) / 1e6, 1),
                  "p50_ms": round(lat[len(lat) // 2] * 1000, 1), "p99_ms": round(lat[int(len(lat) * 0.99)] * 1000, 1),
                  "attribute_ms": round((t2 - t1) * 1000, 1), "outcome": json.loads(verdict)["outcome"]}))
PY
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["rss_mb"]=int(sys.argv[2]); print(json.dumps(d))' \
  "$TMP/stream.json" "$(rss_mb "$PID")" | tee -a "$OUT/results.jsonl"

# 2. ingest throughput with wrk into 8 fresh sessions.
paths=""
for _ in $(seq 1 8); do paths+="/v2/sessions/$(create)/observations,"; done
WRK_LABEL="ingest_${BATCH}_obs_per_request" WRK_PATHS="$paths" WRK_BODIES="$TMP/batches" \
  wrk -t2 -c"$CONNS" -d"$DURATION" --timeout 30s -s "$HERE/wrk_post.lua" "$URL" | grep '^{' | tee -a "$OUT/results.jsonl"
echo "{\"label\":\"after_ingest\",\"rss_mb\":$(rss_mb "$PID")}" | tee -a "$OUT/results.jsonl"

# 3. attribute on the full session.
WRK_LABEL="attribute_${nobs}_obs_session" WRK_PATHS="/v2/sessions/$sid/attribute" WRK_BODIES="" \
  wrk -t2 -c2 -d"$DURATION" --timeout 30s -s "$HERE/wrk_post.lua" "$URL" | grep '^{' | tee -a "$OUT/results.jsonl"
kill "$PID"; wait "$PID" 2>/dev/null || true

# 4. overload: small queues, many connections.
start overload --threads 8 --connection-queue 8 --work-concurrency 2 --work-queue 4 \
  --max-observations-per-session 1000000000
paths="/v2/sessions/$(create)/observations"
( peak=0; while kill -0 "$PID" 2>/dev/null; do r=$(rss_mb "$PID" 2>/dev/null || echo 0); (( r > peak )) && peak=$r; echo "$peak" > "$TMP/peak"; sleep 0.2; done ) &
sampler=$!
WRK_LABEL="overload_256_connections" WRK_PATHS="$paths" WRK_BODIES="$TMP/batches" \
  wrk -t2 -c256 -d"$DURATION" --timeout 30s -s "$HERE/wrk_post.lua" "$URL" | grep '^{' | tee -a "$OUT/results.jsonl"
alive=$(curl -s -o /dev/null -w '%{http_code}' "$URL/v2/healthz" || true)
kill "$sampler" 2>/dev/null || true
rejections=$(curl -s "$URL/metrics" | awk '/^attribution_overload_rejections_total/{s=s $0 "; "} END{print s}')
echo "{\"label\":\"overload_after\",\"healthz\":\"$alive\",\"peak_rss_mb\":$(cat "$TMP/peak"),\"rejections\":\"$rejections\"}" | tee -a "$OUT/results.jsonl"
[[ "$alive" == 200 ]] || { echo "service did not survive overload"; exit 1; }
