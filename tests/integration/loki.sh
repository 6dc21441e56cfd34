#!/usr/bin/env bash
# End to end: `attribution-blueprint run` (static adapter: the xid79 cascade sample's manifest,
# app logs and sacct, WITHOUT its kernel logs) plus the Loki collector reading the kernel logs
# from tests/fakes/fake-loki — a loopback stand-in implementing Loki's documented query_range API
# (Grafana Loki is not installable from Debian 12). The Xid 79 is only in Loki, so the verdict
# gpu.fell_off_bus on gpu-a03 proves the collector delivered it. Runs with line-filter pushdown
# on and off and prints the bytes fetched by each.
# Usage: loki.sh BUILD_TEST_DIR BLUEPRINT_BINARY
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
bin_dir="${1:-$here/build/tests/blueprint/connectors/suite}"
bp="${2:-$here/build/blueprint/attribution-blueprint}"
fake="$bin_dir/fake-loki"
command -v jq >/dev/null || { echo "SKIP: jq not installed"; exit 77; }
[ -x "$bp" ] && [ -x "$fake" ] || { echo "missing $bp or $fake"; exit 1; }
work="$(mktemp -d /tmp/attr-loki-XXXXXX)"
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
sample="$here/samples/xid79-nccl-watchdog-cascade"

# Bundle without kernel logs.
mkdir -p "$work/bundle"
cp -r "$sample/logs" "$sample/sacct.txt" "$sample/slurm-418207.out" "$work/bundle/"
awk '/^  - path: kernel\// { skip = 1; next } /^  - path: / { skip = 0 } !skip' "$sample/workload.yaml" > "$work/bundle/workload.yaml"
grep -q kernel "$work/bundle/workload.yaml" && { echo "bundle still lists kernel logs"; exit 1; }

# Loki streams: each node's dmesg at boot_time + seconds, plus 3000 lines of syslog noise.
start_s="$(date -u -d 2026-03-14T08:02:11Z +%s)"
for node in gpu-a01 gpu-a02 gpu-a03 gpu-a04; do
  boot="$(awk -v n="kernel/dmesg-$node.txt" '$0 ~ "path: "n { f = 1 } f && /boot_time:/ { print $2; exit }' "$sample/workload.yaml")"
  boot_s="$(date -u -d "$boot" +%s)"
  awk -v node="$node" -v boot="$boot_s" -v start="$start_s" '
    function js(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); return s }
    match($0, /^\[ *[0-9]+\.[0-9]+\]/) {
      t = substr($0, RSTART + 1, RLENGTH - 2); gsub(/ /, "", t); split(t, p, ".");
      frac = substr(p[2] "000000", 1, 6);
      v = v sep sprintf("[\"%d%s000\",\"%s\"]", boot + p[1], frac, js($0)); sep = ","
    }
    END {
      for (i = 0; i < 3000; i++)
        v = v sep sprintf("[\"%d000000000\",\"systemd[1]: Started Session %d of User root.\"]", start + i, i);
      printf "{\"stream\":{\"job\":\"varlogs\",\"host\":\"%s\"},\"values\":[%s]}\n", node, v
    }' "$sample/kernel/dmesg-$node.txt" >> "$work/streams.jsonl"
done

"$fake" --data "$work/streams.jsonl" --tenant ops --port-file "$work/port" --max-entries-limit 5000 > /dev/null 2> "$work/fake.log" &
pid=$!
for _ in $(seq 1 100); do [ -s "$work/port" ] && break; sleep 0.1; done
port="$(cat "$work/port")"

passed=0; failed=0
pass() { echo "ok: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
run_with() {  # pushdown mode
  cat > "$work/config-$1.yaml" <<YAML
collectors:
  - type: loki
    name: loki/kernel
    url: http://127.0.0.1:$port
    tenant: ops
    kind: syslog
    query: '{job="varlogs", host="{node}"}'
    limit: 500
    pushdown: $1
    rules: $here/rules
stores:
  sqlite:
    path: $work/verdicts-$1.sqlite
YAML
  set +e
  timeout 100 "$bp" run --config "$work/config-$1.yaml" --adapter static --bundle "$work/bundle" \
    --jsonl "$work/out-$1.jsonl" > "$work/run-$1.stdout" 2> "$work/run-$1.stderr"
  local rc=$?
  set -e
  local v="$work/out-$1.jsonl"
  local outcome root bytes
  outcome="$(jq -r '.outcome' "$v" 2>/dev/null | head -1 || true)"
  root="$(jq -r '.verdict.root_cause.node // empty' "$v" 2>/dev/null | head -1 || true)"
  bytes="$(jq -r '(.verdict.connector_reports // .connector_reports)[] | select(.connector == "loki/kernel") | .bytes' "$v" 2>/dev/null | head -1 || true)"
  echo "pushdown=$1: exit $rc, outcome $outcome, root node ${root:-none}, bytes fetched from Loki: ${bytes:-?}"
  # One verdict; the Xid 79 that only Loki holds decides it: outcome and the computed root node.
  if [ "$rc" -eq 0 ] && [ "$(grep -c . "$v" 2>/dev/null || true)" = 1 ] && [ "$outcome" = gpu.fell_off_bus ] && [ "$root" = gpu-a03 ]; then
    pass "pushdown=$1: gpu.fell_off_bus on gpu-a03"
  else
    fail "pushdown=$1: expected gpu.fell_off_bus on gpu-a03, got '$outcome' on '${root:-none}'"; tail -5 "$work/run-$1.stderr"
  fi
  eval "bytes_$1=${bytes:-0}"
}
# Without Loki the kernel evidence is missing: the verdict must not already be the GPU loss.
printf 'stores:\n  sqlite:\n    path: %s\n' "$work/base.sqlite" > "$work/config-base.yaml"
timeout 100 "$bp" run --config "$work/config-base.yaml" --adapter static --bundle "$work/bundle" \
  --jsonl "$work/out-base.jsonl" > /dev/null 2>&1 || true
base="$(jq -r '.outcome' "$work/out-base.jsonl" 2>/dev/null | head -1 || true)"
echo "without Loki: outcome $base"
if [ -n "$base" ] && [ "$base" != gpu.fell_off_bus ]; then pass "without Loki: not the GPU loss"; else fail "baseline outcome '$base'"; fi
run_with literals
run_with off
if [ "${bytes_literals:-0}" -gt 0 ] && [ "$((bytes_literals * 5))" -lt "${bytes_off:-0}" ]; then
  pass "pushdown fetched $bytes_literals bytes instead of $bytes_off"
else
  fail "pushdown did not cut the bytes ($bytes_literals vs $bytes_off)"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -eq 4 ] || { echo "loki integration failed"; exit 1; }
