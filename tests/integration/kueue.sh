#!/usr/bin/env bash
# End to end: `attribution-blueprint run --adapter kueue` with the k8s_logs collector, both
# through tests/fakes/kubectl — a kubectl stand-in serving recorded, real-shaped JSON (no
# Kubernetes API server is installable here). Checks the verdicts of an OOMKilled pod and of a
# preempted Workload, and that kubectl being unreachable is a failed run with a clear error.
# Usage: kueue.sh BUILD_TEST_DIR BLUEPRINT_BINARY
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
bp="${2:-$here/build/blueprint/attribution-blueprint}"
command -v jq >/dev/null || { echo "SKIP: jq not installed (the kubectl shim needs it)"; exit 77; }
[ -x "$bp" ] || { echo "missing $bp"; exit 1; }
work="$(mktemp -d /tmp/attr-kueue-XXXXXX)"
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
shim="$here/tests/fakes/kubectl"
cp -r "$here/tests/fakes/kubectl-fixtures" "$work/fixtures"
mkdir -p "$work/fixtures/logs"
stamp() { sed -E "s/^/$1 /" "$2"; }
s="$here/samples"
stamp 2026-06-24T11:34:00.000000000Z "$s/kueue-pod-oomkilled/logs/sft-gemma-worker-0.log" > "$work/fixtures/logs/sft-gemma-worker-0_pytorch.log"
stamp 2026-06-24T11:34:00.000000000Z "$s/kueue-pod-oomkilled/logs/sft-gemma-worker-1.log" > "$work/fixtures/logs/sft-gemma-worker-1_pytorch.previous.log"
echo "2026-06-24T11:34:30.000000000Z [restart 1] loading checkpoint shard 1/8" > "$work/fixtures/logs/sft-gemma-worker-1_pytorch.log"
for w in eval-harness-worker-0 eval-harness-worker-1; do
  stamp 2026-07-30T09:55:00.000000000Z "$s/kueue-evicted-preempted/logs/$w.log" > "$work/fixtures/logs/${w}_pytorch.log"
done
cat > "$work/config.yaml" <<YAML
cluster: gke-a3
adapter: kueue
adapters:
  kueue:
    kubectl: $shim
    evidence_dir: $work/evidence
collectors:
  - type: k8s_logs
    name: k8s/pods
    kubectl: $shim
stores:
  sqlite:
    path: $work/verdicts.sqlite
YAML
export KUBECTL_FIXTURES="$work/fixtures" KUBECTL_SHIM_LOG="$work/calls.log"
passed=0; failed=0
pass() { echo "ok: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
check() {  # job expected_outcome: exactly one verdict for the job, and its own outcome is the expected one
  local out="$work/$1.jsonl"
  set +e
  timeout 60 "$bp" run --config "$work/config.yaml" --job "$1" --jsonl "$out" > "$work/$1.stdout" 2> "$work/$1.stderr"
  local rc=$?
  set -e
  local n got
  n="$(grep -c . "$out" 2>/dev/null || true)"
  got="$(jq -r '.outcome // empty' "$out" 2>/dev/null | head -1 || true)"
  if [ "$rc" -eq 0 ] && [ "${n:-0}" = 1 ] && [ "$got" = "$2" ]; then
    pass "$1 -> $2"
  else
    fail "$1: exit $rc, ${n:-0} verdict(s), expected outcome $2, got '${got}'"; tail -5 "$work/$1.stderr"
  fi
}
check sft-gemma application.memory_limit
check pytorchjob-eval-harness-0c9e1 scheduler.preempted
# The restarted worker's previous container log was asked for (the shim's call log) and read: the
# collector's report counts it.
if grep -q "logs -n llm-train sft-gemma-worker-1 -c pytorch --timestamps --previous" "$work/calls.log" \
   && jq -se 'length == 1 and ([.[0].verdict.connector_reports[] | select(.connector == "k8s/pods" and (.reason | test("[(]1 previous[)]")))] | length == 1)' \
        "$work/sft-gemma.jsonl" > /dev/null 2>&1; then
  pass "previous container log read"
else
  fail "--previous log not asked for or not read"
fi
# The collector's own report, with status ok and the observations it delivered.
if jq -se 'length == 1 and ([.[0].verdict.connector_reports[] | select(.connector == "k8s/pods" and .status == "ok" and .observations > 0)] | length == 1)' \
     "$work/sft-gemma.jsonl" > /dev/null 2>&1; then
  pass "k8s/pods connector report: ok"
else
  fail "no ok k8s/pods connector report"
fi
# kubectl cannot reach an API server: the run fails, names the kubectl command that failed, and
# writes no verdict (nothing is made up).
set +e
KUBECTL_SHIM_DOWN=1 timeout 60 "$bp" run --config "$work/config.yaml" --job sft-gemma --jsonl "$work/down.jsonl" > /dev/null 2> "$work/down.stderr"
rc=$?
set -e
if [ "$rc" -ne 0 ] && [ ! -s "$work/down.jsonl" ] && grep -q "kubectl get workloads.kueue.x-k8s.io -A: exit 1" "$work/down.stderr"; then
  pass "API server down -> exit $rc, the failed kubectl command named, no verdict"
else
  fail "API server down: exit $rc"; cat "$work/down.stderr"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -eq 5 ] || { echo "kueue integration failed"; exit 1; }
