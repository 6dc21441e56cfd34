#!/usr/bin/env bash
# Security and configuration of attribution-service:
#  - refuses a non-loopback bind without a bearer token; with one, /v2 requires it (probes do not);
#  - HTTPS with --tls-cert/--tls-key (self-signed certificate made here with openssl; exit 77 when
#    openssl is missing: scripts/install-deps.sh --test installs it);
#  - configuration precedence: flags > ATTRIBUTION_* environment > config file.
# usage: service_security.sh ATTRIBUTION_SERVICE_BINARY SOURCE_DIR
set -euo pipefail
source "$(dirname "$0")/service_lib.sh"
svc_init "$@"
command -v openssl >/dev/null || { echo "SKIP: openssl not installed (apt-get install openssl); TLS cannot be tested"; exit 77; }

# Non-loopback without a token: refuse to start, with a clear message.
if "$SVC_BIN" --listen 0.0.0.0:0 --data-dir "$SVC_TMP/d0" --rules "$SVC_SRC/rules" > "$SVC_TMP/out0" 2>&1; then
  svc_fail "started on 0.0.0.0 without a token"
fi
grep -q 'without a bearer token' "$SVC_TMP/out0" || svc_fail "unclear refusal: $(cat "$SVC_TMP/out0")"
svc_pass "non-loopback bind without a token is refused"

# Non-loopback with a token file.
echo "s3cret-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')" > "$SVC_TMP/token"
TOKEN=$(cat "$SVC_TMP/token")
portfile="$SVC_TMP/d1.port"
"$SVC_BIN" --listen 0.0.0.0:0 --data-dir "$SVC_TMP/d1" --rules "$SVC_SRC/rules" --auth-token-file "$SVC_TMP/token" \
  --port-file "$portfile" > "$SVC_TMP/service1.log" 2>&1 &
SVC_PIDS+=($!)
svc_wait_port "$!" "$portfile"
URL="http://127.0.0.1:$(cat "$portfile")"
[[ $(http GET "$URL/v2/healthz") == 200 ]] || svc_fail "healthz must not need the token"
[[ $(http GET "$URL/v2/readyz") == 200 ]] || svc_fail "readyz must not need the token"
expect_problem "$(http GET "$URL/v2/sessions")" 401 unauthorized
grep -qi '^www-authenticate: Bearer' "$SVC_TMP/headers" || svc_fail "no WWW-Authenticate"
expect_problem "$(http POST "$URL/v2/sessions" -H "Authorization: Bearer wrong" --data-binary '{"context":{"id":"1"}}')" 401 unauthorized
expect_problem "$(http GET "$URL/metrics" -H "Authorization: Basic $TOKEN")" 401 unauthorized
[[ $(http POST "$URL/v2/sessions" -H "Authorization: Bearer $TOKEN" --data-binary '{"context":{"id":"1"}}') == 201 ]] \
  || svc_fail "token rejected: $(cat "$SVC_TMP/body")"
grep -q "$TOKEN" "$SVC_TMP/service1.log" && svc_fail "the token appears in the logs"
svc_pass "bearer token required on /v2 when configured"

# TLS.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=localhost" \
  -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
  -keyout "$SVC_TMP/key.pem" -out "$SVC_TMP/cert.pem" > /dev/null 2>&1
svc_start T "$SVC_TMP/d2" --tls-cert "$SVC_TMP/cert.pem" --tls-key "$SVC_TMP/key.pem"
code=$(curl -sS --cacert "$SVC_TMP/cert.pem" -o "$SVC_TMP/body" -w '%{http_code}' "https://127.0.0.1:$T_PORT/v2/readyz")
[[ $code == 200 ]] || svc_fail "https readyz: $code"
code=$(curl -sS --cacert "$SVC_TMP/cert.pem" -o "$SVC_TMP/body" -w '%{http_code}' -X POST \
         --data-binary '{"context":{"id":"tls"}}' "https://127.0.0.1:$T_PORT/v2/sessions")
[[ $code == 201 ]] || svc_fail "https create session: $code"
if curl -sS -m 5 -o /dev/null "http://127.0.0.1:$T_PORT/v2/healthz" 2>/dev/null; then
  code=$(curl -sS -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$T_PORT/v2/healthz" 2>/dev/null || true)
  [[ $code == 200 ]] && svc_fail "plain HTTP answered on the TLS port"
fi
svc_pass "TLS (cpp-httplib SSLServer)"
# Mismatched TLS options are refused.
if "$SVC_BIN" --listen 127.0.0.1:0 --data-dir "$SVC_TMP/d3" --rules "$SVC_SRC/rules" --tls-cert "$SVC_TMP/cert.pem" \
     > "$SVC_TMP/out3" 2>&1; then svc_fail "started with a certificate and no key"; fi

# Configuration precedence: file < environment < flags.
cat > "$SVC_TMP/config.yaml" <<YAML
listen: 127.0.0.1:9101
max_sessions: 11
max-body-bytes: 1000
session_ttl_s: \${SVC_TEST_TTL}
YAML
SVC_TEST_TTL=77 ATTRIBUTION_MAX_SESSIONS=12 ATTRIBUTION_MAX_BODY_BYTES=2000 \
  "$SVC_BIN" --config "$SVC_TMP/config.yaml" --max-body-bytes 3000 --auth-token hidden --print-config > "$SVC_TMP/effective"
grep -q '^listen: "127.0.0.1:9101"' "$SVC_TMP/effective" || svc_fail "config file not applied: $(cat "$SVC_TMP/effective")"
grep -q '^max_sessions: "12"' "$SVC_TMP/effective" || svc_fail "environment does not override the file"
grep -q '^max_body_bytes: "3000"' "$SVC_TMP/effective" || svc_fail "flag does not override the environment"
grep -q '^session_ttl_s: "77"' "$SVC_TMP/effective" || svc_fail '${VAR} not expanded in the config file'
grep -q 'hidden' "$SVC_TMP/effective" && svc_fail "secret printed by --print-config"
if "$SVC_BIN" --max-sessions lots --print-config > "$SVC_TMP/bad" 2>&1; then svc_fail "bad flag value accepted"; fi
grep -q 'max_sessions' "$SVC_TMP/bad" || svc_fail "bad flag error unclear: $(cat "$SVC_TMP/bad")"
svc_pass "configuration precedence: flags > ATTRIBUTION_* > file"
echo "PASS service_security"
