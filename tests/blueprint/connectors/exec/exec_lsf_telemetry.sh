#!/usr/bin/env bash
# The two worked examples of examples/connectors/, end to end through `attribution-blueprint run`:
#
#   LSF:       the exec adapter runs examples/connectors/lsf/bjobs_adapter.py, which runs `bjobs`.
#              IBM Spectrum LSF is not installable here, so `bjobs` is tests/fakes/lsf/bjobs, a
#              shim printing LSF 10.1's -json customised output for recorded jobs (not real LSF).
#   telemetry: the exec collector runs examples/connectors/telemetry/query_metrics.py against
#              tests/fakes/fake_metrics_api.py, a loopback server answering in the shape of
#              Datadog's v1 query API (no hosted metrics API is reachable here).
#
# The job is the dcgm-metrics-only-xid79 sample's (as LSF job 768520): gpu-c03 fell off the bus,
# which only its DCGM Xid gauge shows. Without the metrics (and without the rank map LSF does not
# give) the verdict is unknown.collective_hang, insufficient, naming the missing GPU metrics;
# with the telemetry collector it is gpu.fell_off_bus on gpu-c03 (probable) — the stored row too.
#
# usage: exec_lsf_telemetry.sh BLUEPRINT_BIN SOURCE_DIR
here=$(cd "$(dirname "$0")" && pwd)
source "$here/exec_lib.sh"
make_site
start_metrics_api

# 1. LSF adapter + files collector (no metrics).
{ lsf_adapter_yaml; echo "collectors:"; files_collector_yaml; echo "stores: {sqlite: {path: $WORK/lsf-only.sqlite}}"; } > "$WORK/lsf.yaml"
rc=0
"$BP" run --config "$WORK/lsf.yaml" --job 768520 -o json > "$WORK/lsf.json" 2> "$WORK/run.err" || rc=$?
[[ $rc == 0 ]] || fail "run with the LSF adapter exited $rc"
jq -e '.runs[0].context | .scheduler == "lsf" and .id == "768520" and .cluster == "c3"
       and .nodes == ["gpu-c01","gpu-c02","gpu-c03","gpu-c04"]
       and .start == "2026-10-13T16:00:00.000Z" and .end == "2026-10-13T18:37:53.000Z"
       and .state == "EXIT" and .exit_code == "1" and .user == "sbrown" and .queue == "gpu"' \
  "$WORK/lsf.json" >/dev/null || fail "context from bjobs: $(jq -c .runs[0].context "$WORK/lsf.json")"
jq -e '[.runs[0].verdict.connector_reports[] | select(.connector == "exec/lsf" and .status == "ok" and .observations == 1)] | length == 1' \
  "$WORK/lsf.json" >/dev/null || fail "exec/lsf report: $(jq -c .runs[0].verdict.connector_reports "$WORK/lsf.json")"
out=$(jq -r '.runs[0] | "\(.outcome) \(.quality)"' "$WORK/lsf.json")
[[ "$out" == "unknown.collective_hang insufficient" ]] || fail "LSF without metrics: expected unknown.collective_hang insufficient, got $out"
jq -e '.runs[0].verdict.quality.missing | index("GPU metrics (DCGM exporter: DCGM_FI_DEV_XID_ERRORS, ECC counters)") != null' "$WORK/lsf.json" >/dev/null \
  || fail "LSF without metrics: the verdict should name the missing GPU metrics"
grep -q "768520.out" "$WORK/lsf.json" || fail "the LSF output file (evidence_files) was not read"
pass "LSF (bjobs shim) adapter: context from bjobs -json, output file read, verdict $out"

# 2. LSF adapter + files + telemetry collector.
{ lsf_adapter_yaml; echo "collectors:"; files_collector_yaml; cat <<YAML
  - type: exec
    name: exec/telemetry
    command: [$PY, $SRC/examples/connectors/telemetry/query_metrics.py]
    env: {METRICS_API_URL: "$METRICS_URL", METRICS_API_KEY: test-api-key, METRICS_APP_KEY: test-app-key}
    timeout_s: 60
stores: {sqlite: {path: $WORK/verdicts.sqlite}}
YAML
} > "$WORK/full.yaml"
rc=0
"$BP" run --config "$WORK/full.yaml" --job 768520 -o json > "$WORK/full.json" 2> "$WORK/run.err" || rc=$?
[[ $rc == 0 ]] || fail "run with LSF + telemetry exited $rc"
read -r outcome quality node < <(jq -r '.runs[0] | [.outcome, .quality, .root_node] | @tsv' "$WORK/full.json")
[[ "$outcome" == gpu.fell_off_bus && "$quality" == probable && "$node" == gpu-c03 ]] \
  || fail "LSF + telemetry: expected gpu.fell_off_bus probable on gpu-c03, got $outcome $quality $node"
jq -e '[.runs[0].verdict.connector_reports[] | select(.connector == "exec/telemetry" and .status == "ok" and .observations == 5)] | length == 1' \
  "$WORK/full.json" >/dev/null || fail "exec/telemetry report: $(jq -c .runs[0].verdict.connector_reports "$WORK/full.json")"
stored=$(sqlite3 "$WORK/verdicts.sqlite" "SELECT scheduler, job_id, outcome, quality, root_node FROM runs")
[[ "$stored" == "lsf|768520|gpu.fell_off_bus|probable|gpu-c03" ]] || fail "stored run: $stored"
sqlite3 "$WORK/verdicts.sqlite" "SELECT verdict_json FROM runs" | jq -e '.connector_reports | map(.connector) | index("exec/telemetry") != null' >/dev/null \
  || fail "stored verdict lacks the exec/telemetry report"
pass "LSF + telemetry (metrics API): gpu.fell_off_bus probable on gpu-c03, stored as lsf/768520"

# 3. Range query: the adapter filters by end time; the running job is left out.
rc=0
"$BP" run --config "$WORK/lsf.yaml" --from 2026-10-13T17:00:00Z --to 2026-10-13T19:00:00Z -o json \
  > "$WORK/range.json" 2> "$WORK/run.err" || rc=$?
[[ $rc == 0 ]] || fail "range run exited $rc"
ids=$(jq -r '.runs[].context.id' "$WORK/range.json" | sort | tr '\n' ' ')
[[ "$ids" == "768520 768541[3] " ]] || fail "range run found: $ids"
pass "range query: ended jobs 768520 and array element 768541[3]; the running job is not taken"

# 4. The documented schema accepts what both examples print (python3-jsonschema, when installed).
if "$PY" -c 'import jsonschema' 2>/dev/null; then
  ( export PATH="$SRC/tests/fakes/lsf:$PATH" LSF_SHIM_SPOOL="$WORK/spool" ATTRIBUTION_QUERY=job ATTRIBUTION_QUERY_JOB=768520
    "$PY" "$SRC/examples/connectors/lsf/bjobs_adapter.py" > "$WORK/adapter.jsonl" )
  ( export METRICS_API_URL="$METRICS_URL" METRICS_API_KEY=test-api-key METRICS_APP_KEY=x ATTRIBUTION_JOB_NODES=gpu-c03 \
      ATTRIBUTION_JOB_WINDOW_START_S=1791900000 ATTRIBUTION_JOB_WINDOW_END_S=1792000000
    "$PY" "$SRC/examples/connectors/telemetry/query_metrics.py" > "$WORK/collector.jsonl" )
  "$PY" - "$SRC/api/exec-connector.schema.json" "$WORK/adapter.jsonl" "$WORK/collector.jsonl" <<'PY' || fail "schema check"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
for path, ref in ((sys.argv[2], "adapter_line"), (sys.argv[3], "collector_line")):
    sub = dict(schema, **{"$ref": f"#/$defs/{ref}"}); sub.pop("anyOf")
    v = jsonschema.Draft202012Validator(sub)
    n = 0
    for line in open(path):
        v.validate(json.loads(line)); n += 1
    assert n > 0, path
PY
  pass "api/exec-connector.schema.json validates both examples' output"
else
  echo "note: python3-jsonschema not installed; schema cross-check not run"
fi
