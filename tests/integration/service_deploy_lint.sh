#!/usr/bin/env bash
# Lints the deployment files (no container registry, no cluster needed):
#  - systemd unit: systemd-analyze verify (ExecStart pointed at /bin/true) + security settings;
#  - Kubernetes manifests and the example config: yamllint + structural checks (probes wired to
#    /v2/healthz and /v2/readyz, non-root, read-only root filesystem, token from a Secret);
#  - Dockerfile: debian:bookworm-slim runtime, non-root USER, every runtime package exists in apt.
# Every part runs, or the test is skipped (exit 77, which scripts/run-tests.sh counts as a
# failure): systemd-analyze (systemd), yamllint and apt-cache with package lists are installed by
# scripts/install-deps.sh --test.
# usage: service_deploy_lint.sh SOURCE_DIR
set -euo pipefail
SRC=$(realpath "$1")
skip() { echo "SKIP: $*"; exit 77; }
command -v systemd-analyze >/dev/null || skip "systemd-analyze not installed (apt-get install systemd)"
command -v yamllint >/dev/null || skip "yamllint not installed (apt-get install yamllint)"
command -v apt-cache >/dev/null || skip "apt-cache not installed"
apt-cache show bash >/dev/null 2>&1 || skip "apt has no package lists (apt-get update); Dockerfile packages cannot be checked"
D="$SRC/deploy"
TMP=$(mktemp -d /tmp/attribution-deploy-lint-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# systemd
sed 's#^ExecStart=/usr/bin/attribution-service#ExecStart=/bin/true#' "$D/systemd/attribution-service.service" \
  > "$TMP/attribution-service.service"
systemd-analyze verify "$TMP/attribution-service.service" > "$TMP/verify.log" 2>&1 || true
# verify also reports unrelated units of the host; keep only lines about our unit.
if grep -i 'attribution-service' "$TMP/verify.log" | grep -vi 'documentation' | grep -q .; then
  cat "$TMP/verify.log"; fail "systemd-analyze verify reported problems"
fi
for k in DynamicUser=yes StateDirectory=attribution-service ProtectSystem=strict NoNewPrivileges=yes \
         Restart=on-failure 'ExecStart=/usr/bin/attribution-service --listen 127.0.0.1:8000'; do
  grep -q "^$k" "$D/systemd/attribution-service.service" || fail "systemd unit lacks $k"
done
echo "ok: systemd unit"

# YAML
yamllint -d '{extends: default, rules: {line-length: {max: 120}, document-start: disable, comments: {min-spaces-from-content: 1}}}' \
  "$D/k8s" "$D/config" || fail "yamllint"
echo "ok: yamllint"
python3 - "$D/k8s/attribution-service.yaml" <<'PY' || fail "kubernetes manifest checks"
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
kinds = {d["kind"]: d for d in docs}
for k in ("ConfigMap", "StatefulSet", "Service"):
    assert k in kinds, f"missing {k}"
for d in docs:
    assert d.get("apiVersion") and d.get("metadata", {}).get("name"), d
sts = kinds["StatefulSet"]
pod = sts["spec"]["template"]["spec"]
c = pod["containers"][0]
assert c["livenessProbe"]["httpGet"]["path"] == "/v2/healthz"
assert c["readinessProbe"]["httpGet"]["path"] == "/v2/readyz"
assert pod["securityContext"]["runAsNonRoot"] is True
assert c["securityContext"]["readOnlyRootFilesystem"] is True
assert c["securityContext"]["allowPrivilegeEscalation"] is False
assert sts["spec"]["selector"]["matchLabels"].items() <= sts["spec"]["template"]["metadata"]["labels"].items()
mounts = {m["name"] for m in c["volumeMounts"]}
vols = {v["name"] for v in pod["volumes"]} | {t["metadata"]["name"] for t in sts["spec"].get("volumeClaimTemplates", [])}
assert mounts <= vols, (mounts, vols)
assert any("secret" in v for v in pod["volumes"]), "token must come from a Secret"
cfg = yaml.safe_load(kinds["ConfigMap"]["data"]["service.yaml"])
assert cfg["auth_token_file"], "non-loopback listen needs a token"
svc = kinds["Service"]
assert svc["spec"]["selector"].items() <= sts["spec"]["template"]["metadata"]["labels"].items()
print("ok: kubernetes manifests")
PY

# Dockerfile
DF="$D/docker/Dockerfile"
grep -q '^FROM debian:bookworm-slim' "$DF" || fail "runtime stage must be debian:bookworm-slim"
grep -Eq '^USER [1-9][0-9]*' "$DF" || fail "runtime must not run as root"
grep -q 'HEALTHCHECK' "$DF" || fail "no HEALTHCHECK"
pkgs=$(python3 - "$DF" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
runtime = text[text.index("FROM debian:bookworm-slim"):]
m = re.search(r"--no-install-recommends(.*?)&&", runtime, re.S)
print(" ".join(w for w in m.group(1).replace("\\", " ").split()))
PY
)
[[ -n "$pkgs" ]] || fail "could not read the runtime package list"
for p in $pkgs; do
  apt-cache show "$p" > /dev/null 2>&1 || fail "Dockerfile runtime package not in apt: $p"
done
echo "ok: Dockerfile runtime packages exist: $(echo $pkgs)"
echo "PASS service_deploy_lint"
