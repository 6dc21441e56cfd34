#!/usr/bin/env bash
# `topology import|show|check` and `fleet fabric` end to end (docs/fabric.md), with the product's
# writer: bundles analysed by `run` into a SQLite store, a topology imported, the fleet analysis
# finds the flapping link, and a later job on that host gets the finding as a fabric candidate
# through the fleet_fabric collector.
#   fabric_cli.sh BLUEPRINT_BINARY SOURCE_DIR
set -euo pipefail
bin=$(realpath "${1:?usage: fabric_cli.sh BLUEPRINT_BINARY SOURCE_DIR}")
root=$(realpath "${2:?}")
data=$root/tests/blueprint/fabric/data
export ATTRIBUTION_RULES_DIR=$root/rules
T=$(mktemp -d /tmp/fabric-cli.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# --- topology check: good input, a port listed twice, a truncated file
"$bin" topology check "$data/small.ibnd" "$data/small.yaml" >"$T/check.txt" || fail "check of good files"
grep -q "^topology 0 valid from 2026-11-01T00:00:00.000Z (3 switches, 4 hosts, 6 links, 2 NVLink domains)" "$T/check.txt" \
  || fail "check summary: $(head -1 "$T/check.txt")"
awk 'NR==12 {print; print; next} {print}' "$data/small.ibnd" >"$T/twice.ibnd"
if "$bin" topology check "$T/twice.ibnd" 2>"$T/twice.err"; then fail "a port listed twice was accepted"; fi
grep -q "^error: $T/twice.ibnd:13: port 2 of 0x7cfe900300a10001 listed twice (first at line 12)" "$T/twice.err" \
  || fail "twice: $(cat "$T/twice.err")"
head -c 1500 "$data/small.ibnd" >"$T/cut.ibnd"
if "$bin" topology check "$T/cut.ibnd" 2>"$T/cut.err"; then fail "a truncated file was accepted"; fi
grep -Eq "^error: $T/cut.ibnd:[0-9]+: " "$T/cut.err" || fail "cut: $(cat "$T/cut.err")"

# --- bundles: background jobs on every pair of hosts, and failures with port errors on gpu-b02
/usr/bin/python3 - "$T/bundles" <<'PY'
import os, sys
out = sys.argv[1]
hosts = ["gpu-a01", "gpu-a02", "gpu-b01", "gpu-b02"]
pairs = [(a, b) for i, a in enumerate(hosts) for b in hosts[i + 1:]]
def bundle(n, nodes, state, lines):
    d = os.path.join(out, "job%04d" % n)
    os.makedirs(os.path.join(d, "logs"))
    h, m = divmod(n * 7, 60)
    with open(os.path.join(d, "workload.yaml"), "w") as f:
        f.write("workload:\n  id: \"%d\"\n  scheduler: slurm\n  cluster: c1\n  user: user%d\n  state: %s\n"
                "  exit_code: \"%s\"\n  start: 2026-11-02T%02d:%02d:00Z\n  end: 2026-11-02T%02d:%02d:30Z\n  nodes: [%s]\n"
                "sources:\n" % (1000 + n, n % 5, state, "0:0" if state == "COMPLETED" else "1:0", h % 24, m, h % 24, m,
                               ", ".join(nodes)))
        for node in nodes:
            f.write("  - {path: logs/%s.out, kind: applog, node: %s}\n" % (node, node))
    for node in nodes:
        with open(os.path.join(d, "logs", node + ".out"), "w") as f:
            f.write("".join(l + "\n" for l in lines.get(node, ["training step 100 loss 2.31"])))
for n in range(60):
    bundle(n, pairs[n % len(pairs)], "COMPLETED", {})
for i in range(6):
    other = ["gpu-a01", "gpu-a02", "gpu-b01"][i % 3]
    bundle(100 + i, sorted([other, "gpu-b02"]), "FAILED", {"gpu-b02": [
        "gpu-b02:4242:4300 [0] transport/net_ib.cc:101 NCCL WARN NET/IB : mlx5_0:1 Got async event : port error",
        "gpu-b02:4242:4300 [0] transport/net_ib.cc:839 NCCL WARN NET/IB : Got completion from peer 10.0.1.1<41234> with error 12, opcode 1, len 0, vendor err 129"]})
PY
args=()
for d in "$T"/bundles/job0*; do args+=(--bundle "$d"); done
"$bin" run --adapter static "${args[@]}" --db "$T/store.sqlite" -j 1 --progress never >"$T/run.log" 2>&1 || fail "run: $(tail -5 "$T/run.log")"

# --- fleet fabric before a topology: a clear error
if "$bin" fleet fabric --db "$T/store.sqlite" 2>"$T/notopo.err"; then fail "fleet fabric without a topology succeeded"; fi
grep -q "no topology stored" "$T/notopo.err" || fail "no-topology error: $(cat "$T/notopo.err")"

"$bin" topology import "$data/small.ibnd" "$data/small.yaml" --db "$T/store.sqlite" >"$T/import.txt" || fail "import"
grep -q "^topology 1 stored in sqlite:" "$T/import.txt" || fail "import: $(cat "$T/import.txt")"
"$bin" topology show --db "$T/store.sqlite" -o json >"$T/show.json" || fail "show"
[[ $(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(len(d["links"]), d["id"])' "$T/show.json") == "6 1" ]] \
  || fail "show: $(head -c 300 "$T/show.json")"

"$bin" fleet fabric --db "$T/store.sqlite" --since 7d -o json >"$T/findings.json" || fail "fleet fabric"
/usr/bin/python3 - "$T/findings.json" <<'PY' || fail "findings: $(head -c 2000 "$T/findings.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["fleet"]["runs"] == 66, d["fleet"]
assert d["fleet"]["fabric_failed"] == 6, d["fleet"]
f = d["findings"][0]
assert f["component"] == "link:gpu-b02/mlx5_0/1~leaf-02/2", f["component"]
assert f["failed_runs"] == 6 and f["switch_port"] == "leaf-02/2", f
assert f["status"] == "open" and f["id"].startswith("fab-"), f
assert any(e["symptom"] == "ib.port_error" for e in f["evidence"]), f["evidence"]
open(sys.argv[1] + ".id", "w").write(f["id"])
PY
id=$(cat "$T/findings.json.id")
"$bin" fleet fabric --db "$T/store.sqlite" >"$T/findings.txt" || fail "fleet fabric text"
grep -q "^$id link link:gpu-b02/mlx5_0/1~leaf-02/2: 6 failed of" "$T/findings.txt" || fail "text: $(cat "$T/findings.txt")"

# --- a new failing job on gpu-b02: the verdict names the open finding as a fabric candidate
/usr/bin/python3 - "$T/bundles" <<'PY'
import os, sys
d = os.path.join(sys.argv[1], "later")
os.makedirs(os.path.join(d, "logs"))
open(os.path.join(d, "workload.yaml"), "w").write(
    "workload:\n  id: \"9999\"\n  scheduler: slurm\n  cluster: c1\n  user: user9\n  state: FAILED\n  exit_code: \"1:0\"\n"
    "  start: 2026-11-03T01:00:00Z\n  end: 2026-11-03T01:00:30Z\n  nodes: [gpu-a01, gpu-b02]\nsources:\n"
    "  - {path: logs/gpu-b02.out, kind: applog, node: gpu-b02}\n")
open(os.path.join(d, "logs", "gpu-b02.out"), "w").write(
    "gpu-b02:4242:4300 [0] transport/net_ib.cc:839 NCCL WARN NET/IB : Got completion from peer 10.0.1.1<41234> with error 12, opcode 1, len 0, vendor err 129\n")
PY
cat >"$T/config.yaml" <<YAML
collectors:
  - {type: fleet_fabric, db: $T/store.sqlite}
YAML
"$bin" run -c "$T/config.yaml" --adapter static --bundle "$T/bundles/later" --jsonl "$T/later.jsonl" -j 1 --progress never \
  >"$T/later.log" 2>&1 || fail "run with fleet context: $(tail -5 "$T/later.log")"
/usr/bin/python3 - "$T/later.jsonl" "$id" <<'PY' || fail "fleet context: $(head -c 3000 "$T/later.jsonl")"
import json, sys
v = json.loads(open(sys.argv[1]).readline())
v = v.get("verdict", v)
assert v["domain"] == "network", v["domain"]
c = v["fabric"]["candidates"]
assert c == [{"finding": sys.argv[2], "component": "link:gpu-b02/mlx5_0/1~leaf-02/2", "node": "gpu-b02",
              "confidence": c[0]["confidence"]}], c
assert v["quality"]["level"] != "definitive" or v["root_cause"]["symptom"] != "fabric.fleet_finding"
assert any(r["connector"] == "fleet_fabric" and r["status"] == "ok" for r in v["connector_reports"]), v["connector_reports"]
PY
echo "fabric cli: ok (finding $id)"
