#!/usr/bin/env bash
# The README's service command, as written, from a fresh build tree:
#
#   attribution-service --listen 127.0.0.1:8000 --data-dir DIR
#
# run as build/service/attribution-service with no --rules, no ATTRIBUTION_RULES_DIR and no config
# file, from a working directory outside the checkout. It must find the checkout's rules (the
# shared default search, attribution/edge/rules_dir.h), report the same rules digest as the
# blueprint, cache its compiled rules, and give the embedded engine's verdict bytes.
# The only change to the command: port 0 and --port-file instead of 8000, so parallel tests never
# collide on a fixed port.
#
# usage: service_readme.sh SERVICE_BIN SOURCE_DIR BLUEPRINT_BIN
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/service_lib.sh"
svc_init "$1" "$2"
BP=$(realpath "$3")
unset ATTRIBUTION_RULES_DIR ATTRIBUTION_CONFIG ATTRIBUTION_RULES
export ATTRIBUTION_CACHE_DIR="$SVC_TMP/cache"

cd "$SVC_TMP"
"$SVC_BIN" --listen 127.0.0.1:0 --data-dir "$SVC_TMP/data" --port-file "$SVC_TMP/port" \
    >"$SVC_TMP/service.log" 2>&1 &
pid=$!
SVC_PIDS+=("$pid")
svc_wait_port "$pid" "$SVC_TMP/port"
URL="http://127.0.0.1:$(cat "$SVC_TMP/port")"

status=$(http GET "$URL/v2/version")
[[ "$status" == 200 ]] || svc_fail "/v2/version: HTTP $status: $(cat "$SVC_TMP/body")"
service_digest=$(json_field "$SVC_TMP/body" rules_digest)
[[ "$service_digest" == sha256:* && ${#service_digest} -gt 20 ]] \
  || svc_fail "service started without --rules reports rules digest \"$service_digest\""
grep -q '"rules loaded"' "$SVC_TMP/service.log" || svc_fail "no 'rules loaded' log line: $(cat "$SVC_TMP/service.log")"
grep -q "\"rules_dir\":\"$SVC_SRC/rules\"" "$SVC_TMP/service.log" \
  || svc_fail "rules not taken from the checkout ($SVC_SRC/rules): $(grep rules "$SVC_TMP/service.log")"
svc_pass "service from the build tree without --rules loaded $SVC_SRC/rules ($service_digest)"

ls "$ATTRIBUTION_CACHE_DIR"/*.hsdb >/dev/null 2>&1 || svc_fail "service wrote no compiled-rules cache in $ATTRIBUTION_CACHE_DIR"
svc_pass "compiled rules cached in \$ATTRIBUTION_CACHE_DIR (shared with the blueprint)"

bundle="$SVC_SRC/samples/xid79-nccl-watchdog-cascade"
"$BP" analyze "$bundle" > "$SVC_TMP/embedded.json"
"$BP" analyze "$bundle" --service-url "$URL" > "$SVC_TMP/remote.json"
cmp -s "$SVC_TMP/embedded.json" "$SVC_TMP/remote.json" \
  || svc_fail "service verdict differs from the embedded engine: $(diff "$SVC_TMP/embedded.json" "$SVC_TMP/remote.json" | head -5)"
python3 - "$SVC_TMP/remote.json" "$service_digest" <<'PY' || svc_fail "verdict check failed"
import json, sys
v = json.load(open(sys.argv[1]))
assert v["outcome"] == "gpu.fell_off_bus", v["outcome"]
assert v["engine"]["rules_digest"] == sys.argv[2], (v["engine"]["rules_digest"], sys.argv[2])
assert "gpu-a03" in v["affected_nodes"], v["affected_nodes"]
PY
svc_pass "README command: verdict gpu.fell_off_bus on gpu-a03, byte-identical to the embedded engine, same rules digest"
