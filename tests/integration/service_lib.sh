# Shared helpers for the tests/integration/service_*.sh scripts (sourced, not run).
# Every test binds loopback port 0 and reads the real port from --port-file.

svc_fail() { echo "FAIL: $*" >&2; exit 1; }
svc_pass() { echo "ok: $*"; }

# svc_wait_port PID PORTFILE: waits for the service to write its port (it does once it listens),
# failing at once if it exits; the 120 s limit only bounds a hang, a slow machine just waits.
svc_wait_port() {
  local pid=$1 portfile=$2 deadline=$((SECONDS + 120))
  until [[ -s "$portfile" ]]; do
    kill -0 "$pid" 2>/dev/null || { cat "$SVC_TMP"/service*.log >&2; svc_fail "service exited at start"; }
    (( SECONDS < deadline )) || svc_fail "service did not write its port in 120 s"
    sleep 0.05
  done
}

# svc_start VAR_PREFIX DATA_DIR [extra flags...]  → sets ${P}_PID, ${P}_PORT, ${P}_URL
svc_start() {
  local prefix=$1 data=$2; shift 2
  local portfile="$data.port"
  rm -f "$portfile"
  "$SVC_BIN" --listen 127.0.0.1:0 --data-dir "$data" --rules "${SVC_RULES:-$SVC_SRC/rules}" \
      --port-file "$portfile" --log-level warn "$@" >>"$SVC_TMP/service.log" 2>&1 &
  local pid=$!
  svc_wait_port "$pid" "$portfile"
  local port; port=$(cat "$portfile")
  printf -v "${prefix}_PID" '%s' "$pid"
  printf -v "${prefix}_PORT" '%s' "$port"
  printf -v "${prefix}_URL" '%s' "http://127.0.0.1:$port"
  SVC_PIDS+=("$pid")
}

svc_cleanup() {
  local p
  for p in "${SVC_PIDS[@]:-}"; do
    if [[ -n "$p" ]]; then kill "$p" 2>/dev/null || true; fi
  done
  wait 2>/dev/null || true
  [[ -n "${SVC_TMP:-}" && -d "$SVC_TMP" ]] && rm -rf "$SVC_TMP"
}

svc_init() {
  SVC_BIN=$(realpath "$1"); SVC_SRC=$(realpath "$2")
  SVC_TMP=$(mktemp -d /tmp/attribution-svc-it-XXXXXX)
  SVC_PIDS=()
  trap svc_cleanup EXIT
  command -v curl >/dev/null || { echo "curl missing"; exit 77; }
  command -v python3 >/dev/null || { echo "python3 missing"; exit 77; }
  MAKE_WORKLOAD="$SVC_SRC/bench/service/make_workload.py"
}

# http METHOD URL [curl args...] → prints "STATUS" and leaves the body in $SVC_TMP/body
http() {
  local method=$1 url=$2; shift 2
  curl -sS -o "$SVC_TMP/body" -D "$SVC_TMP/headers" -w '%{http_code}' -X "$method" "$url" "$@"
}

# expect_problem STATUS CODE  (checks the last response)
expect_problem() {
  local got=$1 want=$2 code=$3
  [[ "$got" == "$want" ]] || svc_fail "expected HTTP $want, got $got: $(cat "$SVC_TMP/body")"
  grep -qi '^content-type: application/problem+json' "$SVC_TMP/headers" || svc_fail "not problem+json: $(cat "$SVC_TMP/headers")"
  grep -q "\"code\":\"$code\"" "$SVC_TMP/body" || svc_fail "expected code $code: $(cat "$SVC_TMP/body")"
}

json_field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
