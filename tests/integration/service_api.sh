#!/usr/bin/env bash
# End-to-end API test of attribution-service with curl as the client:
#  - every sample bundle: create a session, stream its observations as NDJSON chunks, attribute,
#    and compare byte for byte with the one-shot POST /v2/attributions of the same observations;
#  - attribution-blueprint: `analyze BUNDLE` == `analyze BUNDLE --service-url` on every bundle;
#  - probes, metrics, OpenAPI document, and each error code with problem+json.
# usage: service_api.sh ATTRIBUTION_SERVICE_BINARY SOURCE_DIR ATTRIBUTION_BLUEPRINT_BINARY
set -euo pipefail
source "$(dirname "$0")/service_lib.sh"
BP=${3:?usage: service_api.sh ATTRIBUTION_SERVICE_BINARY SOURCE_DIR ATTRIBUTION_BLUEPRINT_BINARY}
svc_init "$@"
[[ -x "$BP" ]] || svc_fail "attribution-blueprint not built: $BP"

svc_start S "$SVC_TMP/data" --max-body-bytes 8388608
URL=$S_URL

[[ $(http GET "$URL/v2/healthz") == 200 ]] || svc_fail healthz
[[ $(http GET "$URL/v2/readyz") == 200 ]] || svc_fail readyz
grep -q '"rules":"ok"' "$SVC_TMP/body" || svc_fail "readyz body"
[[ $(http GET "$URL/v2/openapi.json") == 200 ]] || svc_fail openapi
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["openapi"].startswith("3."); assert "/v2/sessions/{id}/attribute" in d["paths"]' "$SVC_TMP/body" \
  || svc_fail "openapi.json is not the OpenAPI document"
svc_pass "probes and openapi.json"

# --- every sample bundle: session (streamed) == one-shot, byte for byte
n_bundles=0
for bundle in "$SVC_SRC"/samples/*/; do
  [[ -f "$bundle/workload.yaml" ]] || continue
  name=$(basename "$bundle")
  wl="$SVC_TMP/wl-$name"
  python3 "$MAKE_WORKLOAD" bundle "$bundle" "$wl"
  [[ $(http POST "$URL/v2/sessions" -H 'Content-Type: application/json' --data-binary @"$wl/context.json") == 201 ]] \
    || svc_fail "$name: create session: $(cat "$SVC_TMP/body")"
  id=$(grep -o '"id":"[0-9a-f]*"' "$SVC_TMP/body" | head -1 | cut -d'"' -f4)
  split -l 250 "$wl/obs.ndjson" "$wl/chunk-"
  total=0
  for chunk in "$wl"/chunk-*; do
    [[ $(http POST "$URL/v2/sessions/$id/observations" -H 'Content-Type: application/x-ndjson' --data-binary @"$chunk") == 200 ]] \
      || svc_fail "$name: ingest: $(cat "$SVC_TMP/body")"
    total=$((total + $(grep -o '"accepted":[0-9]*' "$SVC_TMP/body" | cut -d: -f2)))
  done
  [[ $total == $(wc -l < "$wl/obs.ndjson") ]] || svc_fail "$name: accepted $total of $(wc -l < "$wl/obs.ndjson")"
  [[ $(http POST "$URL/v2/sessions/$id/attribute") == 200 ]] || svc_fail "$name: attribute"
  cp "$SVC_TMP/body" "$wl/session.json"
  [[ $(http POST "$URL/v2/attributions" -H 'Content-Type: application/json' --data-binary @"$wl/oneshot.json") == 200 ]] \
    || svc_fail "$name: one-shot: $(cat "$SVC_TMP/body")"
  cmp -s "$SVC_TMP/body" "$wl/session.json" || svc_fail "$name: session verdict differs from one-shot verdict"
  [[ $(http GET "$URL/v2/sessions/$id/verdicts/latest") == 200 ]] && cmp -s "$SVC_TMP/body" "$wl/session.json" \
    || svc_fail "$name: latest verdict"
  grep -q '"schema":"attribution.verdict/v1"' "$wl/session.json" || svc_fail "$name: verdict schema"
  [[ $(http DELETE "$URL/v2/sessions/$id") == 204 ]] || svc_fail "$name: close"
  n_bundles=$((n_bundles + 1))
done
(( n_bundles > 0 )) || svc_fail "no sample bundles found"
svc_pass "$n_bundles bundles: streamed session verdict == one-shot verdict (bytes)"

# --- the blueprint, when it speaks to a service: analyze == analyze --service-url
n_cmp=0
for bundle in "$SVC_SRC"/samples/*/; do
  [[ -f "$bundle/workload.yaml" ]] || continue
  "$BP" analyze "$bundle" > "$SVC_TMP/embedded.json" 2>/dev/null || true
  "$BP" analyze "$bundle" --service-url "$URL" > "$SVC_TMP/remote.json" 2>"$SVC_TMP/remote.err" || true
  [[ -s "$SVC_TMP/embedded.json" ]] || svc_fail "blueprint analyze $(basename "$bundle") printed nothing"
  [[ -s "$SVC_TMP/remote.json" ]] || svc_fail "blueprint analyze $(basename "$bundle") --service-url printed nothing: $(cat "$SVC_TMP/remote.err")"
  cmp -s "$SVC_TMP/embedded.json" "$SVC_TMP/remote.json" \
    || svc_fail "blueprint: $(basename "$bundle"): --service-url verdict differs from the embedded engine"
  n_cmp=$((n_cmp + 1))
done
(( n_cmp == n_bundles )) || svc_fail "compared $n_cmp of $n_bundles bundles"
svc_pass "blueprint analyze --service-url is byte-identical to the embedded engine ($n_cmp bundles)"

# --- compatibility ingest
[[ $(http POST "$URL/v2/sessions" --data-binary '{"context":{"id":"77","nodes":["gpu-a03"]}}') == 201 ]] || svc_fail create
id=$(json_field "$SVC_TMP/body" id)
loki='{"streams":[{"stream":{"job":"varlogs/syslog","host":"gpu-a03"},"values":[["1773476000000000000","NVRM: Xid (PCI:0000:9b:00): 79, pid=0, GPU has fallen off the bus."]]}]}'
[[ $(http POST "$URL/v2/sessions/$id/loki/api/v1/push" -H 'Content-Type: application/json' --data-binary "$loki") == 200 ]] \
  || svc_fail "loki push: $(cat "$SVC_TMP/body")"
prom='{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"DCGM_FI_DEV_XID_ERRORS","Hostname":"gpu-a03","gpu":"0"},"values":[[1773476000,"79"]]}]}}'
[[ $(http POST "$URL/v2/sessions/$id/prometheus_metrics" --data-binary "$prom") == 200 ]] || svc_fail "prometheus: $(cat "$SVC_TMP/body")"
[[ $(json_field "$SVC_TMP/body" session_observations) == 2 ]] || svc_fail "compat count"
[[ $(http POST "$URL/v2/sessions/$id/connector_reports" --data-binary '[{"connector":"loki/syslog","status":"ok","observations":1,"bytes":80}]') == 200 ]] \
  || svc_fail "connector reports"
[[ $(http POST "$URL/v2/sessions/$id/attribute") == 200 ]] || svc_fail "attribute compat"
grep -q '"loki/syslog"' "$SVC_TMP/body" || svc_fail "connector report missing from verdict"
svc_pass "Loki push, prometheus_metrics and connector_reports ingest"

# --- error codes (problem+json with a stable code)
expect_problem "$(http POST "$URL/v2/sessions/$id/observations" --data-binary '[{"kind":')" 400 malformed_json
printf '[{"kind":"applog","text":"\xc3\x28"}]' > "$SVC_TMP/bad-utf8"
expect_problem "$(http POST "$URL/v2/sessions/$id/observations" --data-binary @"$SVC_TMP/bad-utf8")" 400 invalid_utf8
expect_problem "$(http POST "$URL/v2/sessions/$id/observations" --data-binary '{"kind":5,"text":"x"}')" 422 invalid_observations
grep -q '"index":0' "$SVC_TMP/body" || svc_fail "rejection index"
[[ $(http POST "$URL/v2/sessions/$id/observations" --data-binary $'{"kind":"applog","text":"fine"}\n{"kind":"applog","text":["wrong type"]}') == 200 ]] \
  || svc_fail "partial acceptance"
grep -q '"rejected":\[{"index":1,"reason":"text: not a string"}\]' "$SVC_TMP/body" || svc_fail "partial body: $(cat "$SVC_TMP/body")"
head -c 9000000 /dev/zero | tr '\0' ' ' > "$SVC_TMP/big"
expect_problem "$(http POST "$URL/v2/sessions/$id/observations" --data-binary @"$SVC_TMP/big")" 413 body_too_large
expect_problem "$(http GET "$URL/v2/sessions/ffffffffffffffffffffffffffffffff")" 404 session_not_found
expect_problem "$(http POST "$URL/v2/sessions/ffffffffffffffffffffffffffffffff/attribute")" 404 session_not_found
expect_problem "$(http POST "$URL/v2/sessions" --data-binary '{"context":{"id":"1","end":"not a time"}}')" 422 invalid_context
expect_problem "$(http POST "$URL/v2/attributions" --data-binary '{"context":{"id":"1"},"observations":[{"kind":"nope","text":"x"}]}')" 422 invalid_observations
expect_problem "$(http GET "$URL/v2/no/such/route")" 404 not_found
[[ $(http DELETE "$URL/v2/sessions/$id") == 204 ]] || svc_fail "close"
expect_problem "$(http DELETE "$URL/v2/sessions/$id")" 410 session_closed
expect_problem "$(http POST "$URL/v2/sessions/$id/observations" --data-binary '[]')" 410 session_closed
svc_pass "error codes"

# --- metrics reflect the traffic
[[ $(http GET "$URL/metrics") == 200 ]] || svc_fail metrics
for m in 'attribution_http_requests_total{route="/v2/sessions/{id}/observations",code="200"}' \
         'attribution_http_request_duration_seconds_bucket{route="/v2/attributions",le="+Inf"}' \
         'attribution_observations_ingested_total{kind="syslog"}' \
         'attribution_observations_discarded_total{reason="invalid"}' \
         'attribution_analyses_total{outcome="' 'attribution_rules_info{sha256="sha256:' 'attribution_sessions '; do
  grep -qF "$m" "$SVC_TMP/body" || svc_fail "metric missing: $m"
done
svc_pass "metrics"
echo "PASS service_api"
