#!/usr/bin/env bash
# Durability: kill -9 attribution-service while a client streams observations, restart it, and
# check that every acknowledged batch is there (batches are atomic: all of one or none), that the
# restored session's verdict equals a one-shot attribution of exactly the committed observations,
# and that an idle kill -9 + restart leaves the verdict byte-identical.
# usage: service_durability.sh ATTRIBUTION_SERVICE_BINARY SOURCE_DIR
set -euo pipefail
source "$(dirname "$0")/service_lib.sh"
svc_init "$@"

WL="$SVC_TMP/wl"
BATCH=250
python3 "$MAKE_WORKLOAD" synthetic "$WL" --ranks 16 --lines 1000 --batch $BATCH
nbatches=$(ls "$WL"/batch-*.ndjson | wc -l)
DATA="$SVC_TMP/data"

svc_start A "$DATA"
[[ $(http POST "$A_URL/v2/sessions" --data-binary @"$WL/context.json") == 201 ]] || svc_fail create
id=$(json_field "$SVC_TMP/body" id)

# Stream batches one after another; record each batch the service acknowledged with a 2xx.
ACKED="$SVC_TMP/acked"
: > "$ACKED"
(
  for f in "$WL"/batch-*.ndjson; do
    code=$(curl -sS -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/x-ndjson' \
             --data-binary @"$f" "$A_URL/v2/sessions/$id/observations" 2>/dev/null) || break
    [[ "$code" == 200 ]] || break
    basename "$f" >> "$ACKED"
  done
) &
streamer=$!
# Kill mid-ingest: as soon as 8 batches are acknowledged (of $nbatches; each is a curl process and a
# commit, so the stream is far from its end). Waits on that state, not on a time: a loaded machine
# only makes this slower (overall limit 300 s); a streamer that stops early fails the test.
deadline=$((SECONDS + 300))
until (( $(wc -l < "$ACKED") >= 8 )); do
  kill -0 "$streamer" 2>/dev/null || svc_fail "the stream stopped after $(wc -l < "$ACKED") batches: $(tail -3 "$SVC_TMP/service.log")"
  (( SECONDS < deadline )) || svc_fail "8 batches not acknowledged in 300 s"
  sleep 0.01
done
kill -9 "$A_PID"
wait "$streamer" || true
acked=$(wc -l < "$ACKED")
(( acked >= 8 && acked < nbatches )) || svc_fail "kill did not land mid-ingest (acked $acked of $nbatches)"
echo "killed -9 after $acked of $nbatches acknowledged batches"

svc_start B "$DATA"
[[ $(http GET "$B_URL/v2/sessions/$id") == 200 ]] || svc_fail "session lost after restart: $(cat "$SVC_TMP/body")"
have=$(json_field "$SVC_TMP/body" observations)
(( have % BATCH == 0 )) || svc_fail "a batch was partially stored ($have observations)"
committed=$((have / BATCH))
(( committed >= acked )) || svc_fail "lost acknowledged data: $committed batches stored, $acked acknowledged"
(( committed <= acked + 1 )) || svc_fail "more batches stored ($committed) than sent ($acked + 1 in flight)"
svc_pass "every acknowledged batch survived kill -9 ($acked acknowledged, $committed stored)"

# The restored session's verdict == one-shot over exactly the committed batches.
[[ $(http POST "$B_URL/v2/sessions/$id/attribute") == 200 ]] || svc_fail attribute
cp "$SVC_TMP/body" "$SVC_TMP/restored.json"
python3 - "$WL" "$committed" "$SVC_TMP/oneshot.json" <<'PY'
import json, sys, glob, os
wl, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ctx = json.load(open(os.path.join(wl, "context.json")))["context"]
obs = []
for f in sorted(glob.glob(os.path.join(wl, "batch-*.ndjson")))[:n]:
    obs += [json.loads(l) for l in open(f) if l.strip()]
json.dump({"context": ctx, "observations": obs}, open(out, "w"))
PY
[[ $(http POST "$B_URL/v2/attributions" --data-binary @"$SVC_TMP/oneshot.json") == 200 ]] || svc_fail "one-shot: $(cat "$SVC_TMP/body")"
cmp -s "$SVC_TMP/body" "$SVC_TMP/restored.json" || svc_fail "restored verdict differs from one-shot of the committed observations"
svc_pass "restored verdict == one-shot verdict of the committed observations"

# Finish the stream, attribute, kill -9 while idle, restart: the verdict is unchanged.
for f in $(ls "$WL"/batch-*.ndjson | tail -n +$((committed + 1))); do
  [[ $(http POST "$B_URL/v2/sessions/$id/observations" --data-binary @"$f") == 200 ]] || svc_fail "resume ingest"
done
[[ $(http POST "$B_URL/v2/sessions/$id/attribute") == 200 ]] || svc_fail attribute
cp "$SVC_TMP/body" "$SVC_TMP/before.json"
[[ $(http POST "$B_URL/v2/attributions" --data-binary @"$WL/oneshot.json") == 200 ]] || svc_fail "one-shot full"
cmp -s "$SVC_TMP/body" "$SVC_TMP/before.json" || svc_fail "full session verdict differs from one-shot"
kill -9 "$B_PID"
wait "$B_PID" 2>/dev/null || true
svc_start C "$DATA"
[[ $(http GET "$C_URL/v2/sessions/$id/verdicts/latest") == 200 ]] || svc_fail "latest verdict after restart"
cmp -s "$SVC_TMP/body" "$SVC_TMP/before.json" || svc_fail "stored verdict changed across restart"
[[ $(http POST "$C_URL/v2/sessions/$id/attribute") == 200 ]] || svc_fail attribute
cmp -s "$SVC_TMP/body" "$SVC_TMP/before.json" || svc_fail "verdict changed across kill -9 + restart"
svc_pass "verdict byte-identical across kill -9 + restart"
echo "PASS service_durability"
