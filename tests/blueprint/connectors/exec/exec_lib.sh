# Shared set-up for the exec connector tests (sourced). Sets: BP (attribution-blueprint), SRC (the
# checkout), WORK (a temporary directory removed on exit), SAMPLE, and helpers.
set -euo pipefail
BP=$(realpath "$1"); SRC=$(realpath "$2")
WORK=$(mktemp -d /tmp/attribution-exec-XXXXXX)
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]:-}"; do [[ -n "$p" ]] && kill "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
PY=/usr/bin/python3
command -v jq >/dev/null || { echo "jq missing"; exit 77; }
[[ -x $PY ]] || { echo "$PY missing"; exit 77; }
SAMPLE="$SRC/samples/dcgm-metrics-only-xid79"
export ATTRIBUTION_CACHE_DIR="$WORK/cache"
unset ATTRIBUTION_CONFIG ATTRIBUTION_RULES_DIR

fail() { echo "FAIL: $*" >&2; [[ -f "$WORK/run.err" ]] && { echo "--- run stderr:" >&2; cat "$WORK/run.err" >&2; }; exit 1; }
pass() { echo "ok: $*"; }

# A site's job spool as the LSF shim describes it: job 768520 ran on gpu-c01..c04; its -o file
# (the first host's torchrun output) is $WORK/spool/768520.out; the other hosts' training logs and
# every host's syslog are under $WORK/nodes/<host>/ (gpu-c03 has no syslog: it fell off the bus).
make_site() {
  mkdir -p "$WORK/spool"
  cp "$SAMPLE/logs/gpu-c01.log" "$WORK/spool/768520.out"
  for n in gpu-c02 gpu-c03 gpu-c04; do mkdir -p "$WORK/nodes/$n"; cp "$SAMPLE/logs/$n.log" "$WORK/nodes/$n/train.log"; done
  for n in gpu-c01 gpu-c02 gpu-c04; do mkdir -p "$WORK/nodes/$n"; cp "$SAMPLE/kernel/syslog-$n.log" "$WORK/nodes/$n/syslog"; done
}

# start_metrics_api: the loopback metrics API (tests/fakes/fake_metrics_api.py) over the sample's
# DCGM series; sets METRICS_URL.
start_metrics_api() {
  "$PY" "$SRC/tests/fakes/fake_metrics_api.py" "$SAMPLE/metrics/dcgm.prom" "$WORK/metrics.port" test-api-key &
  PIDS+=($!)
  local deadline=$((SECONDS + 30))
  until [[ -s "$WORK/metrics.port" ]]; do
    (( SECONDS < deadline )) || fail "fake metrics API did not start"
    sleep 0.05
  done
  METRICS_URL="http://127.0.0.1:$(cat "$WORK/metrics.port")"
}

# The adapter block for the LSF example through the bjobs shim.
lsf_adapter_yaml() {
  cat <<YAML
adapter: exec
adapters:
  exec:
    name: exec/lsf
    command: [$PY, $SRC/examples/connectors/lsf/bjobs_adapter.py]
    env:
      PATH: $SRC/tests/fakes/lsf:/usr/bin:/bin
      LSF_SHIM_SPOOL: $WORK/spool
      LSF_CLUSTER_NAME: c3
    timeout_s: ${LSF_TIMEOUT_S:-60}
YAML
}

files_collector_yaml() {
  cat <<YAML
  - type: files
    name: files/nodes
    sources:
      - {path: "$WORK/nodes/{node}/train.log", kind: applog}
      - {path: "$WORK/nodes/{node}/syslog", kind: syslog}
YAML
}
