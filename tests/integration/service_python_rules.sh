#!/usr/bin/env bash
# Python rules in the service and the blueprint (issue #11 §1):
#   1. A rules directory = the catalogue + the shipped Python rules (examples/rules/): every bundle
#      of samples/python-rules/ gives its expected.yaml verdict through `analyze`, and the service
#      (POSTed by `analyze --service-url`) returns byte-identical verdicts; both report the same
#      rules digest, which covers the .py and data files.
#   2. A rules directory = the catalogue + three hostile rules (one raises, one loops forever, one
#      allocates without bound): the service still answers every request with a verdict whose
#      rule_reports name each rule, file:line and status (error, timeout, memory), stays up
#      (/v2/readyz) and gives the embedded engine's bytes.
#
# usage: service_python_rules.sh SERVICE_BIN SOURCE_DIR BLUEPRINT_BIN
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/service_lib.sh"
svc_init "$1" "$2"
BP=$(realpath "$3")
PY=/usr/bin/python3
export ATTRIBUTION_CACHE_DIR="$SVC_TMP/cache"

# ---------------------------------------------------------------- 1. shipped rules
mkdir -p "$SVC_TMP/site"
cp -r "$SVC_SRC/rules" "$SVC_TMP/site/rules"
cp "$SVC_SRC"/examples/rules/*.py "$SVC_SRC"/examples/rules/*.csv "$SVC_SRC"/examples/rules/*.data.yaml \
  "$SVC_TMP/site/rules/"
RULES="$SVC_TMP/site/rules"
"$BP" rules lint "$RULES" > "$SVC_TMP/lint.txt" 2>&1 || svc_fail "rules lint: $(cat "$SVC_TMP/lint.txt")"
"$BP" rules test "$RULES" > "$SVC_TMP/test.txt" 2>&1 || svc_fail "rules test: $(cat "$SVC_TMP/test.txt")"
svc_pass "rules lint and rules test pass with the Python rules: $(tail -1 "$SVC_TMP/test.txt")"

SVC_RULES=$RULES svc_start A "$SVC_TMP/data-a"
for bundle in "$SVC_SRC"/samples/python-rules/*/; do
  name=$(basename "$bundle")
  "$BP" analyze --rules "$RULES" "$bundle" > "$SVC_TMP/$name.embedded.json" || true
  "$BP" analyze --rules "$RULES" "$bundle" --service-url "$A_URL" > "$SVC_TMP/$name.remote.json" || true
  cmp -s "$SVC_TMP/$name.embedded.json" "$SVC_TMP/$name.remote.json" \
    || svc_fail "$name: service verdict differs from the blueprint's: $(diff "$SVC_TMP/$name.embedded.json" "$SVC_TMP/$name.remote.json" | head -5)"
  "$PY" - "$SVC_TMP/$name.remote.json" "$bundle/expected.yaml" <<'PY' || svc_fail "$name: verdict does not match expected.yaml"
import json, sys, yaml
v = json.load(open(sys.argv[1]))
want = yaml.safe_load(open(sys.argv[2]))
problems = []
for key, got in (("outcome", v["outcome"]), ("domain", v["domain"]), ("quality", v["quality"]["level"])):
    if got != want[key]:
        problems.append("%s: %s, expected %s" % (key, got, want[key]))
if "root_symptom" in want and (v.get("root_cause") or {}).get("symptom") != want["root_symptom"]:
    problems.append("root_symptom: %s" % (v.get("root_cause") or {}).get("symptom"))
if "affected_nodes" in want and sorted(v["affected_nodes"]) != sorted(want["affected_nodes"]):
    problems.append("affected_nodes: %s" % v["affected_nodes"])
explained = {e["id"] for e in v.get("explained", [])}
for e in want.get("explained_includes", []):
    if e not in explained:
        problems.append("%s not explained (%s)" % (e, sorted(explained)))
text = json.dumps(v, sort_keys=True)
for s in want.get("verdict_includes", []):
    if s not in text:
        problems.append("verdict lacks %r" % s)
if "rule_reports" in v:
    problems.append("rule reports: %s" % v["rule_reports"])
if problems:
    print("\n".join(problems), file=sys.stderr)
    sys.exit(1)
PY
  svc_pass "$name: expected verdict, byte-identical from the service"
done

# ---------------------------------------------------------------- 2. hostile rules
mkdir -p "$SVC_TMP/hostile"
cp -r "$SVC_SRC/rules" "$SVC_TMP/hostile/rules"
cat > "$SVC_TMP/hostile/rules/hostile.py" <<'PY'
import attribution

LINE = "syslog gpu-a: NVRM: Xid (PCI:0000:09:00): 79, pid=0, GPU has fallen off the bus."


@attribution.refiner(phase="DEFAULT", fixtures=[{"lines": [LINE], "expect": {}}])
def raises(view):
    return {}["no such key"]


@attribution.refiner(phase="LATE", fixtures=[{"lines": [LINE], "expect": {}}])
def loops(view):
    n = 0
    while n >= 0:
        n += 1


@attribution.refiner(phase="FINAL", fixtures=[{"lines": [LINE], "expect": {}}])
def hoards(view):
    hoard = []
    while True:
        hoard.append(bytes(1 << 20))
PY
SVC_RULES=$SVC_TMP/hostile/rules svc_start B "$SVC_TMP/data-b"
bundle="$SVC_SRC/samples/xid79-nccl-watchdog-cascade"
for i in 1 2 3; do
  "$BP" analyze --rules "$SVC_TMP/hostile/rules" "$bundle" --service-url "$B_URL" > "$SVC_TMP/hostile.remote.$i.json" \
    || svc_fail "request $i: no verdict from the service with hostile rules"
  status=$(http GET "$B_URL/v2/readyz")
  [[ "$status" == 200 ]] || svc_fail "service not ready after request $i: HTTP $status"
done
kill -0 "$B_PID" 2>/dev/null || svc_fail "the service died"
"$BP" analyze --rules "$SVC_TMP/hostile/rules" "$bundle" > "$SVC_TMP/hostile.embedded.json" || true
cmp -s "$SVC_TMP/hostile.embedded.json" "$SVC_TMP/hostile.remote.3.json" \
  || svc_fail "hostile rules: service verdict differs from the blueprint's"
cmp -s "$SVC_TMP/hostile.remote.1.json" "$SVC_TMP/hostile.remote.3.json" \
  || svc_fail "hostile rules: the same request gave different verdict bytes"
"$PY" - "$SVC_TMP/hostile.remote.3.json" <<'PY' || svc_fail "hostile rules: rule reports wrong"
import json, sys
v = json.load(open(sys.argv[1]))
assert v["outcome"] == "gpu.fell_off_bus", v["outcome"]
reports = {r["rule"]: r for r in v["rule_reports"]}
# the line of the raise; of the loop (where the step budget ran out); of the allocation that failed
want = {"py.hostile.raises": ("error", {8}), "py.hostile.loops": ("timeout", {14, 15}), "py.hostile.hoards": ("memory", {22})}
for rule, (status, lines) in want.items():
    r = reports[rule]
    assert r["status"] == status and r["file"] == "rules/hostile.py" and r["line"] in lines, r
assert v["quality"]["level"] == "probable", v["quality"]
PY
svc_pass "hostile rules: three requests answered, rule_reports name raises (error), loops (timeout), hoards (memory) at file:line, service up, bytes equal the blueprint's"
