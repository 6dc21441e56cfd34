#!/usr/bin/env bash
# Lints everything a site deploys from, against the real tools and the real binaries:
#  - Kubernetes (deploy/k8s): yamllint; k8s_validate.mjs checks every object reachable from the
#    kustomizations against the Kubernetes API schema (npm kubernetes-models + @kubernetes/client-node,
#    both generated from the Kubernetes OpenAPI spec; no API server is installable here, so a
#    server-side dry run cannot be had) plus the references between objects; then the built
#    attribution-service runs with the ConfigMap's service.yaml and every probe path of the manifests
#    must answer 200, the metrics the prometheus-adapter rules query must be on its /metrics (scraped
#    by a real Prometheus with prometheus/scrape-config.yaml, each adapter query answering per pod), the
#    environment the manifests set must be taken by the binaries (--print-config), and every container's
#    args must parse with the real CLI;
#  - systemd (deploy/systemd): systemd-analyze verify with ExecStart on the built binaries and the man
#    pages of docs/man on MANPATH, systemd-analyze security --offline (exposure <= 2.0 per service), each
#    ExecStart's command line parsed by the binary (--print-config) with the configuration the package
#    installs, systemd-sysusers creating the units' user in a scratch root;
#  - man pages (docs/man): groff -ww without warnings, and every option of each binary's --help is
#    documented;
#  - Dockerfile: debian:bookworm-slim runtime, non-root USER, every runtime package exists in apt.
# Every part runs or the test is skipped (exit 77, counted as a failure by scripts/run-tests.sh).
# usage: deploy_lint.sh SOURCE_DIR SERVICE_BIN BLUEPRINT_BIN NPM_DIR
set -euo pipefail
SRC=$(realpath "$1")
SERVICE_BIN=$(realpath "$2")
BLUEPRINT_BIN=$(realpath "$3")
NPM_DIR=${ATTRIBUTION_NPM_DIR:-$4}
HERE="$SRC/tests/deploy"
D="$SRC/deploy"
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
for tool in systemd-analyze systemd-sysusers yamllint groff node npm curl apt-cache prometheus promtool; do
  command -v "$tool" >/dev/null || skip "$tool not installed (scripts/install-deps.sh --test)"
done
apt-cache show bash >/dev/null 2>&1 || skip "apt has no package lists (apt-get update); Dockerfile packages cannot be checked"
TMP=$(mktemp -d /tmp/attribution-deploy-lint-XXXXXX)
SERVICE_PID=""
PROM_PID=""
cleanup() {
  [[ -n "$SERVICE_PID" ]] && kill "$SERVICE_PID" 2>/dev/null
  [[ -n "$PROM_PID" ]] && kill "$PROM_PID" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT

# ---------------------------------------------------------------- Kubernetes
yamllint -d '{extends: default, rules: {line-length: {max: 120}, document-start: disable, comments: {min-spaces-from-content: 1}}}' \
  "$D/k8s" "$D/config" "$SRC/config" || fail "yamllint"
echo "ok: yamllint"

mkdir -p "$NPM_DIR"
if ! cmp -s "$HERE/package-lock.json" "$NPM_DIR/package-lock.json" || [[ ! -d "$NPM_DIR/node_modules/kubernetes-models" ]]; then
  cp "$HERE/package.json" "$HERE/package-lock.json" "$NPM_DIR/"
  (cd "$NPM_DIR" && npm ci --no-audit --no-fund --loglevel=error > "$NPM_DIR/install.log" 2>&1) \
    || { cat "$NPM_DIR/install.log"; skip "npm ci of the Kubernetes schema packages failed (registry unreachable?)"; }
fi
# The validator resolves its imports from its own location: run it from the npm directory.
cp "$HERE/k8s_validate.mjs" "$NPM_DIR/"
node "$NPM_DIR/k8s_validate.mjs" "$D/k8s" "$TMP/k8s" || fail "Kubernetes manifests"

# The service as the manifests configure it (listen/token/paths overridden for this machine).
openssl_token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s' "$openssl_token" > "$TMP/token"
CM_SERVICE="$TMP/k8s/configmap-attribution-service-config-service.yaml"
CM_BLUEPRINT="$TMP/k8s/configmap-attribution-blueprint-config-blueprint.yaml"
[[ -s "$CM_SERVICE" && -s "$CM_BLUEPRINT" ]] || fail "ConfigMaps attribution-service-config/service.yaml or attribution-blueprint-config/blueprint.yaml missing"
# Every environment variable the manifests give the service must be a configuration key it takes:
# an ignored ATTRIBUTION_STORE would leave each replica on its own SQLite file.
"$SERVICE_BIN" --config "$CM_SERVICE" --print-config > "$TMP/service-config.txt" 2>&1 \
  || { cat "$TMP/service-config.txt"; fail "attribution-service rejects the ConfigMap's service.yaml"; }
for var in $(grep -ho 'name: ATTRIBUTION_[A-Z_]*' "$D"/k8s/service/*.yaml | awk '{print $2}' | sort -u); do
  key=$(echo "${var#ATTRIBUTION_}" | tr 'A-Z' 'a-z')
  grep -q "^$key: " "$TMP/service-config.txt" \
    || fail "deploy/k8s/service sets $var but attribution-service has no configuration key $key"
  env "$var=postgresql://attribution:pw@db.invalid:5432/attribution" "$SERVICE_BIN" --config "$CM_SERVICE" --print-config \
    > "$TMP/service-config-env.txt" 2>&1 || { cat "$TMP/service-config-env.txt"; fail "attribution-service rejects $var"; }
  grep -q "^$key: \"\(<redacted>\|.*db.invalid.*\)\"" "$TMP/service-config-env.txt" \
    || { cat "$TMP/service-config-env.txt"; fail "$var does not set $key"; }
done
echo "ok: the service's ConfigMap and environment are taken by attribution-service"

mkdir -p "$TMP/state"
"$SERVICE_BIN" --config "$CM_SERVICE" --listen 127.0.0.1:0 --port-file "$TMP/port" --data-dir "$TMP/state" \
  --rules "$SRC/rules" --auth-token-file "$TMP/token" > "$TMP/service.log" 2>&1 &
SERVICE_PID=$!
for _ in $(seq 1 600); do
  [[ -s "$TMP/port" ]] && break
  kill -0 "$SERVICE_PID" 2>/dev/null || { cat "$TMP/service.log"; fail "attribution-service exited at start"; }
  sleep 0.1
done
[[ -s "$TMP/port" ]] || fail "attribution-service did not listen within 60 s"
URL="http://127.0.0.1:$(cat "$TMP/port")"
while IFS=$'\t' read -r workload kind probe_path; do
  [[ -n "$workload" ]] || continue
  code=$(curl -s -o "$TMP/probe.out" -w '%{http_code}' "$URL$probe_path")
  [[ "$code" == 200 ]] || { cat "$TMP/probe.out"; fail "$workload $kind $probe_path answered $code, not 200"; }
done < "$TMP/k8s/probes.tsv"
grep -q 'readinessProbe	/v2/readyz' "$TMP/k8s/probes.tsv" || fail "the service's readiness probe is not /v2/readyz (the check of rules and store)"
curl -s -o /dev/null -H "Authorization: Bearer $openssl_token" "$URL/v2/sessions"
# /metrics takes the bearer token as Prometheus sends it (prometheus/scrape-config.yaml); without: 401.
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/metrics")
[[ "$code" == 401 ]] || fail "GET /metrics without the token answered $code: update deploy/k8s/prometheus/scrape-config.yaml and docs/deploy.md"
curl -sf -H "Authorization: Bearer $openssl_token" "$URL/metrics" > "$TMP/metrics.txt" || fail "GET /metrics with the token"
while read -r series; do
  [[ -n "$series" ]] || continue
  grep -q "^# TYPE $series " "$TMP/metrics.txt" || fail "prometheus-adapter rule queries $series, which attribution-service does not export"
done < "$TMP/k8s/series.txt"
# The request-rate rule leaves probes and scrapes out by their route label: those labels must exist.
for route in /v2/readyz /v2/livez; do
  grep -q "^attribution_http_requests_total{route=\"$route\"" "$TMP/metrics.txt" \
    || fail "no attribution_http_requests_total{route=\"$route\"} after probing: the adapter rule's route filter is stale"
done
grep -Eq '^attribution_http_requests_total\{route="/v2/sessions",code="200"\} [1-9]' "$TMP/metrics.txt" \
  || fail "a /v2/sessions request is not counted in attribution_http_requests_total"
echo "ok: probes answer 200 on the real service; the HPA's series are exported ($(tr '\n' ' ' < "$TMP/k8s/series.txt"))"

# The scrape job and the adapter queries, run by a real Prometheus against the running service.
# Debian's Prometheus is built without Kubernetes discovery, so the job's kubernetes_sd_configs is
# replaced by one static target carrying the __meta_kubernetes_* labels Kubernetes discovery would
# give a service pod; everything else (bearer token file, relabelling to namespace/pod) is the file's.
PROM_PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
/usr/bin/python3 - "$D/k8s/prometheus/scrape-config.yaml" "$TMP/prometheus.yml" "127.0.0.1:$(cat "$TMP/port")" "$TMP/token" <<'PY'
import sys, yaml
src, out, target, token = sys.argv[1:]
cfg = yaml.safe_load(open(src))
job = cfg["scrape_configs"][0]
assert "kubernetes_sd_configs" in job, "the scrape job must discover pods with kubernetes_sd_configs"
del job["kubernetes_sd_configs"]
job["static_configs"] = [{"targets": [target], "labels": {
    "__meta_kubernetes_pod_label_app_kubernetes_io_name": "attribution-service",
    "__meta_kubernetes_pod_container_port_name": "http",
    "__meta_kubernetes_namespace": "attribution",
    "__meta_kubernetes_pod_name": "attribution-service-7d9f-abcde"}}]
job["authorization"]["credentials_file"] = token
cfg["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
yaml.safe_dump(cfg, open(out, "w"), sort_keys=False)
PY
promtool check config "$TMP/prometheus.yml" > "$TMP/promtool.log" 2>&1 || { cat "$TMP/promtool.log"; fail "promtool check config (scrape-config.yaml)"; }
prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/prom-data" \
  --web.listen-address="127.0.0.1:$PROM_PORT" > "$TMP/prometheus.log" 2>&1 &
PROM_PID=$!
PROM="http://127.0.0.1:$PROM_PORT"
promql() { curl -sf --get --data-urlencode "query=$1" "$PROM/api/v1/query"; }
up=""
for _ in $(seq 1 300); do
  curl -s -o /dev/null -H "Authorization: Bearer $openssl_token" "$URL/v2/sessions" || true
  up=$(promql 'up{job="attribution-service",namespace="attribution",pod="attribution-service-7d9f-abcde"}' 2>/dev/null \
       | /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")' 2>/dev/null || true)
  [[ "$up" == 1 ]] && break
  sleep 0.2
done
[[ "$up" == 1 ]] || { tail -5 "$TMP/prometheus.log"; fail "Prometheus could not scrape the service with scrape-config.yaml (up=$up)"; }
# Requests keep coming while the rate window fills (at least three scrapes).
for _ in $(seq 1 25); do curl -s -o /dev/null -H "Authorization: Bearer $openssl_token" "$URL/v2/sessions"; sleep 0.2; done
/usr/bin/python3 - "$D/k8s/prometheus/adapter-rules.yaml" > "$TMP/adapter-queries.tsv" <<'PY'
import re, sys, yaml
for rule in yaml.safe_load(open(sys.argv[1]))["rules"]:
    series = re.match(r"\s*([a-zA-Z_:][a-zA-Z0-9_:]*)", rule["seriesQuery"]).group(1)
    q = rule["metricsQuery"].replace("<<.Series>>", series) \
        .replace("<<.LabelMatchers>>", 'namespace="attribution",pod=~"attribution-service-7d9f-abcde"') \
        .replace("<<.GroupBy>>", "pod")
    print(f"{series}\t{' '.join(q.split())}")
PY
while IFS=$'\t' read -r series query; do
  result=$(promql "$query") || fail "Prometheus rejected the adapter query for $series: $query"
  value=$(echo "$result" | /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["metric"].get("pod",""), r[0]["value"][1]) if r else print("")')
  [[ "$value" == attribution-service-7d9f-abcde\ * ]] || fail "adapter query for $series returned no per-pod value: $query -> $result"
  if [[ "$series" == attribution_http_requests_total ]]; then
    awk -v v="${value#* }" 'BEGIN { exit !(v > 0) }' || fail "request rate is ${value#* } while requests were sent: $query"
  fi
  echo "ok: adapter query for $series on a real Prometheus: ${value#* } for pod ${value%% *}"
done < "$TMP/adapter-queries.tsv"
kill "$PROM_PID"; wait "$PROM_PID" 2>/dev/null || true; PROM_PID=""
kill "$SERVICE_PID"; wait "$SERVICE_PID" 2>/dev/null || true; SERVICE_PID=""

# The blueprint's ConfigMap + Secret environment + each container's args, through the real CLI.
while IFS=$'\t' read -r workload image args; do
  [[ -n "$workload" ]] || continue
  case "$image" in
    attribution-service:*) bin=$SERVICE_BIN; cfg=$CM_SERVICE ;;
    attribution-blueprint:*) bin=$BLUEPRINT_BIN; cfg=$CM_BLUEPRINT ;;
    *) fail "$workload: unknown image $image" ;;
  esac
  # shellcheck disable=SC2086
  set -- ${args//\/etc\/attribution\/service.yaml/$cfg}
  set -- "${@//\/etc\/attribution\/blueprint.yaml/$cfg}"
  ATTRIBUTION_STORES__POSTGRES__DSN="postgresql://attribution:pw@db.invalid:5432/attribution" \
    "$bin" "$@" --print-config > "$TMP/args.out" 2>&1 \
    || { cat "$TMP/args.out"; fail "$workload: '$image $args' does not parse with the real binary"; }
  if [[ "$image" == attribution-blueprint:* ]]; then
    grep -q 'dsn: .*<redacted>' "$TMP/args.out" \
      || { cat "$TMP/args.out"; fail "$workload: ATTRIBUTION_STORES__POSTGRES__DSN from the Secret does not reach stores.postgres.dsn"; }
  fi
done < "$TMP/k8s/commands.tsv"
echo "ok: every container's args and configuration parse with the real binaries"

# ---------------------------------------------------------------- man pages
mkdir -p "$TMP/man/man1" "$TMP/man/man8"
for page in "$SRC"/docs/man/*.[18]; do
  warnings=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
  [[ -z "$warnings" ]] || { echo "$warnings"; fail "groff warnings in $page"; }
  cp "$page" "$TMP/man/man${page##*.}/"
done
check_options() {  # check_options MAN_PAGE HELP_TEXT_FILE
  local opt
  for opt in $(grep -Eo -- '(^|[ ,])--[a-z][a-z0-9-]*' "$2" | tr -d ' ,' | sort -u); do
    [[ "$opt" == --help ]] && continue
    grep -qF -- "$(echo "$opt" | sed 's/-/\\-/g')" "$1" || fail "$(basename "$1") does not document $opt (in --help)"
  done
}
"$SERVICE_BIN" --help > "$TMP/service-help.txt"
check_options "$SRC/docs/man/attribution-service.8" "$TMP/service-help.txt"
: > "$TMP/blueprint-help.txt"
# Every subcommand, found by walking the "Subcommands:" lists of --help.
collect_help() {
  local help sub
  help=$("$BLUEPRINT_BIN" "$@" --help) || fail "attribution-blueprint $* --help failed"
  printf '%s\n' "$help" >> "$TMP/blueprint-help.txt"
  for sub in $(printf '%s\n' "$help" | awk '/^Subcommands:/ { f = 1; next } f && /^  [a-z]/ { print $1 } f && /^$/ { f = 0 }'); do
    grep -qw -- "$sub" "$SRC/docs/man/attribution-blueprint.1" || fail "attribution-blueprint.1 does not document the command '$* $sub'"
    collect_help "$@" "$sub"
  done
}
collect_help
check_options "$SRC/docs/man/attribution-blueprint.1" "$TMP/blueprint-help.txt"
echo "ok: man pages format cleanly and document every option of --help"

# ---------------------------------------------------------------- systemd
units=("$D"/systemd/*.service "$D"/systemd/*.timer)
for u in "${units[@]}"; do
  sed -e "s#^ExecStart=/usr/bin/attribution-service#ExecStart=$SERVICE_BIN#" \
      -e "s#^ExecStart=/usr/bin/attribution-blueprint#ExecStart=$BLUEPRINT_BIN#" "$u" > "$TMP/$(basename "$u")"
done
(cd "$TMP" && MANPATH="$TMP/man" systemd-analyze verify "${units[@]##*/}") > "$TMP/verify.log" 2>&1 || true
# verify also reports unrelated units of the host; keep the lines about ours.
if grep -qi 'attribution' "$TMP/verify.log"; then
  cat "$TMP/verify.log"; fail "systemd-analyze verify reported problems"
fi
for u in "$D"/systemd/*.service; do
  score=$(cd "$TMP" && systemd-analyze security --offline=yes --no-pager "$(basename "$u")" 2>&1 \
          | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
  [[ -n "$score" ]] || fail "systemd-analyze security gave no score for $(basename "$u")"
  awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }' || fail "$(basename "$u"): exposure $score > 2.0"
  echo "ok: $(basename "$u") exposure $score"
  for k in NoNewPrivileges=yes ProtectSystem=strict PrivateTmp=yes CapabilityBoundingSet= SystemCallFilter=@system-service; do
    grep -q "^$k" "$u" || fail "$(basename "$u") lacks $k"
  done
  grep -Eq '^(DynamicUser=yes|User=[a-z])' "$u" || fail "$(basename "$u") runs as root"
  grep -Eq '^StateDirectory=' "$u" || fail "$(basename "$u") has no StateDirectory="
done
# The command lines, parsed by the binaries with the configuration files the package installs.
mkdir -p "$TMP/etc"
cp "$D/config/service.example.yaml" "$TMP/etc/service.yaml"
cp "$SRC/config/blueprint.example.yaml" "$TMP/etc/blueprint.yaml"
for u in "$D"/systemd/*.service; do
  line=$(sed -n 's/^ExecStart=//p' "$u")
  line=${line//\/usr\/bin\/attribution-service/$SERVICE_BIN}
  line=${line//\/usr\/bin\/attribution-blueprint/$BLUEPRINT_BIN}
  line=${line//\/etc\/attribution/$TMP/etc}
  # shellcheck disable=SC2086
  STATE_DIRECTORY="$TMP/state" $line --print-config > "$TMP/exec.out" 2>&1 \
    || { cat "$TMP/exec.out"; fail "$(basename "$u"): ExecStart does not parse: $line"; }
done
# The units' user comes from the sysusers.d file the package installs.
mkdir -p "$TMP/root/etc"
systemd-sysusers --root="$TMP/root" "$D/systemd/attribution.sysusers" > "$TMP/sysusers.log" 2>&1 \
  || { cat "$TMP/sysusers.log"; fail "systemd-sysusers rejects attribution.sysusers"; }
for user in $(sed -n 's/^User=//p' "$D"/systemd/*.service | sort -u); do
  grep -q "^$user:" "$TMP/root/etc/passwd" || fail "User=$user of the units is not created by attribution.sysusers"
done
echo "ok: systemd units (verify, security, command lines, user)"

# ---------------------------------------------------------------- Dockerfile
# No container engine runs here, so the image is not built; what can be checked without one:
DF="$D/docker/Dockerfile"
grep -q '^FROM debian:bookworm AS build' "$DF" || fail "build stage must be debian:bookworm"
grep -q 'scripts/install-deps.sh' "$DF" || fail "build stage must install the build dependencies with scripts/install-deps.sh"
grep -q 'cpack -G DEB' "$DF" || fail "build stage must make the Debian package"
grep -q '^FROM debian:bookworm-slim AS runtime' "$DF" || fail "runtime stage must be debian:bookworm-slim"
grep -q 'apt-get install .*/tmp/attribution_\*.deb' "$DF" || fail "runtime must install the package built by cpack"
for target in service blueprint; do
  grep -q "^FROM runtime AS $target\$" "$DF" || fail "no target $target (deploy/k8s runs attribution-$target)"
  grep -q "image: attribution-$target:" -r "$D/k8s" || fail "deploy/k8s does not run attribution-$target"
done
[[ $(grep -c '^USER 10001:10001' "$DF") == 2 ]] || fail "both targets must run as UID 10001 (the pods' runAsUser)"
grep -q 'HEALTHCHECK .*/v2/livez' "$DF" || fail "service target has no HEALTHCHECK on /v2/livez"
pkgs=$(sed -n '/^FROM debian:bookworm-slim/,$p' "$DF" | grep -o -- '--no-install-recommends [^&]*' \
       | sed 's/--no-install-recommends//' | tr ' \\' '\n\n' | grep -v '^$' | grep -v '/' | sort -u)
[[ -n "$pkgs" ]] || fail "could not read the runtime package list"
for p in $pkgs; do
  apt-cache show "$p" > /dev/null 2>&1 || fail "Dockerfile runtime package not in apt: $p"
done
echo "ok: Dockerfile (runtime packages exist: $(echo $pkgs))"
echo "PASS deploy_lint"
