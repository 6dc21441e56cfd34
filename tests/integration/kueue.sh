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
trap 'rm -rf "$work"' EXIT
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
fail=0
check() {  # job expected_outcome
  local out="$work/$1.jsonl"
  set +e
  timeout 60 "$bp" run --config "$work/config.yaml" --job "$1" --jsonl "$out" > "$work/$1.stdout" 2> "$work/$1.stderr"
  local rc=$?
  set -e
  local got
  got="$(jq -r '.outcome // empty' "$out" 2>/dev/null | head -1 || true)"
  if [ "$rc" -eq 0 ] && grep -q "\"$2\"" "$out" 2>/dev/null; then
    echo "ok: $1 -> $2"
  else
    echo "FAIL: $1: exit $rc, expected $2, got '${got}'"; cat "$work/$1.stderr" | tail -5; fail=1
  fi
}
check sft-gemma application.memory_limit
check pytorchjob-eval-harness-0c9e1 scheduler.preempted
grep -q "logs -n llm-train sft-gemma-worker-1 -c pytorch --timestamps --previous" "$work/calls.log" \
  && echo "ok: previous container log read" || { echo "FAIL: --previous not used"; fail=1; }
grep -q '"k8s/pods"' "$work/sft-gemma.jsonl" && echo "ok: connector report present" || { echo "FAIL: no k8s/pods report"; fail=1; }
# kubectl cannot reach an API server: the run fails with kubectl's message, nothing is made up.
set +e
KUBECTL_SHIM_DOWN=1 timeout 60 "$bp" run --config "$work/config.yaml" --job sft-gemma --jsonl "$work/down.jsonl" > /dev/null 2> "$work/down.stderr"
rc=$?
set -e
if [ "$rc" -ne 0 ] && grep -q "connection to the server" "$work/down.stderr"; then
  echo "ok: API server down -> exit $rc with kubectl's error"
else
  echo "FAIL: API server down: exit $rc"; cat "$work/down.stderr"; fail=1
fi
[ "$fail" -eq 0 ] && echo "4 passed, 0 failed" || echo "kueue integration failed"
exit "$fail"
