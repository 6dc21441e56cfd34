#!/usr/bin/env bash
# Prometheus collector against a real Prometheus (Debian 12: apt-get install prometheus, 2.42):
# the dcgm-metrics-only-xid79 sample's DCGM series are backfilled with
#   promtool tsdb create-blocks-from openmetrics FILE DIR
# and served by prometheus on 127.0.0.1:<free port> (no scraping). Then prometheus_live_test runs,
# then `attribution-blueprint run` end to end with the prometheus collector.
# Usage: prometheus.sh BUILD_TEST_DIR BLUEPRINT_BINARY   (BUILD_TEST_DIR holds prometheus_live_test)
# Exit 77 (skipped) when prometheus/promtool are not installed; both parts always run otherwise.
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
bin_dir="${1:?usage: prometheus.sh BUILD_TEST_DIR BLUEPRINT_BINARY}"
bp="${2:?usage: prometheus.sh BUILD_TEST_DIR BLUEPRINT_BINARY}"
command -v prometheus >/dev/null && command -v promtool >/dev/null || {
  echo "SKIP: prometheus/promtool not installed (apt-get install prometheus)"; exit 77; }
command -v jq >/dev/null || { echo "SKIP: jq not installed (apt-get install jq)"; exit 77; }
test_bin="$bin_dir/prometheus_live_test"
[ -x "$test_bin" ] || { echo "missing $test_bin"; exit 1; }
[ -x "$bp" ] || { echo "missing $bp"; exit 1; }

work="$(mktemp -d /tmp/attr-prom-XXXXXX)"
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

# Text exposition with millisecond timestamps → OpenMetrics (seconds, # EOF).
awk '/^#/ { if ($2 == "TYPE" || $2 == "HELP") print; next }
     NF >= 3 { ts = $NF; $NF = sprintf("%.3f", ts / 1000); print; next }
     { print }
     END { print "# EOF" }' "$here/samples/dcgm-metrics-only-xid79/metrics/dcgm.prom" > "$work/dcgm.om"
mkdir -p "$work/data"
promtool tsdb create-blocks-from openmetrics "$work/dcgm.om" "$work/data" > "$work/promtool.log" 2>&1 || {
  cat "$work/promtool.log"; exit 1; }
printf 'global:\n  scrape_interval: 1h\nscrape_configs: []\n' > "$work/prometheus.yml"
port="$(free_port)"
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
  --storage.tsdb.retention.time=100y --web.listen-address="127.0.0.1:$port" \
  > "$work/prometheus.log" 2>&1 &
pid=$!
for _ in $(seq 1 150); do
  curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/prometheus.log"; exit 1; }
  sleep 0.2
done
curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null || { echo "prometheus not ready"; tail -20 "$work/prometheus.log"; exit 1; }
down_port="$(free_port)"
PROM_URL="http://127.0.0.1:$port" PROM_DOWN_URL="http://127.0.0.1:$down_port" timeout 100 "$test_bin"

# End to end through `attribution-blueprint run` (static adapter: the sample without its metrics
# file) with the prometheus collector from a config file.
sample="$here/samples/dcgm-metrics-only-xid79"
mkdir -p "$work/bundle"
cp -r "$sample/logs" "$sample/kernel" "$sample/sacct.txt" "$work/bundle/"
awk '/^  - path: metrics\// { skip = 1; next } /^  - path: / { skip = 0 } !skip' "$sample/workload.yaml" > "$work/bundle/workload.yaml"
cat > "$work/config.yaml" <<YAML
collectors:
  - type: prometheus
    name: prometheus/dcgm
    url: http://127.0.0.1:$port
    node_label: Hostname
stores:
  sqlite:
    path: $work/verdicts.sqlite
YAML
timeout 100 "$bp" run --config "$work/config.yaml" --adapter static --bundle "$work/bundle" --jsonl "$work/out.jsonl" > /dev/null 2> "$work/run.stderr" || true
got="$(jq -r '.outcome' "$work/out.jsonl" 2>/dev/null | head -1 || true)"
prom_ok="$(jq -r '[.verdict.connector_reports[] | select(.connector == "prometheus/dcgm" and .status == "ok")] | length' "$work/out.jsonl" 2>/dev/null || true)"
if [ "$got" = gpu.fell_off_bus ] && [ "$prom_ok" = 1 ]; then
  echo "ok: run with the prometheus collector -> gpu.fell_off_bus"
else
  echo "FAIL: run with the prometheus collector: $got"; tail -5 "$work/run.stderr"; exit 1
fi
