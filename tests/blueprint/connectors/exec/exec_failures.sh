#!/usr/bin/env bash
# The exec connectors when the command misbehaves: a failure is reported, never fatal to the run.
#   - collector exits non-zero: run exits 3; the report is `error` with "exit 3" and the stderr;
#     the lines it printed before failing are still used; the verdict is produced and stored.
#   - collector hangs (and leaves a child): killed at timeout_s with its whole process group;
#     run exits 3 within seconds; the report says "timed out after 1 s".
#   - malformed lines: each is skipped and named by line number and field; valid lines are used.
#   - adapter prints a context then fails: the attempt is analysed, exec report attached, exit 3.
#   - adapter fails with nothing (LSF down, or hangs): exit 1, the error names the command, exit and
#     stderr (there is no attempt to attach a report to).
#
# usage: exec_failures.sh BLUEPRINT_BIN SOURCE_DIR
here=$(cd "$(dirname "$0")" && pwd)
source "$here/exec_lib.sh"

collector_run() {  # collector_run NAME COLLECTOR_YAML → $WORK/NAME.jsonl, sets RC
  printf 'collectors:\n%s\nstores: {sqlite: {path: %s}}\n' "$2" "$WORK/$1.sqlite" > "$WORK/$1.yaml"
  RC=0
  "$BP" run --config "$WORK/$1.yaml" --adapter static --bundle "$SAMPLE" -o json \
    > "$WORK/$1.json" 2> "$WORK/run.err" || RC=$?
}
report() { jq -c --arg c "$2" '.runs[0].verdict.connector_reports[] | select(.connector == $c)' "$WORK/$1.json"; }

# --- non-zero exit
collector_run exit3 "  - type: exec
    name: exec/flaky
    command: |
      echo '{\"kind\": \"syslog\", \"node\": \"gpu-c03\", \"observed_at\": \"2026-10-13T18:27:40Z\", \"text\": \"gpu-c03 kernel: site probe ran\"}'
      echo 'telemetry backend said: 503 Service Unavailable' >&2
      exit 3"
[[ $RC == 3 ]] || fail "collector exit 3: run exited $RC, expected 3"
r=$(report exit3 exec/flaky)
jq -e '.status == "error" and .observations == 1 and (.reason | contains("exit 3")) and (.reason | contains("stderr: telemetry backend said: 503 Service Unavailable"))' <<<"$r" >/dev/null \
  || fail "non-zero exit report: $r"
[[ $(jq -r .runs[0].outcome "$WORK/exit3.json") == gpu.fell_off_bus ]] || fail "verdict not produced on a failing collector"
[[ $(sqlite3 "$WORK/exit3.sqlite" "SELECT count(*) FROM runs") == 1 ]] || fail "verdict not stored on a failing collector"
pass "non-zero exit: run exit 3, report error with exit 3 and stderr, 1 observation kept, verdict stored"

# --- timeout: a child in the background holds stdout open; the whole group must die.
t0=$SECONDS
collector_run hang "  - type: exec
    name: exec/hang
    timeout_s: 1
    command: \"sleep 300 & echo \$! > $WORK/child.pid; echo 'waiting for the API' >&2; wait\""
took=$((SECONDS - t0))
[[ $RC == 3 ]] || fail "timeout: run exited $RC, expected 3"
r=$(report hang exec/hang)
jq -e '.status == "error" and (.reason | contains("timed out after 1 s")) and (.reason | contains("waiting for the API"))' <<<"$r" >/dev/null \
  || fail "timeout report: $r"
(( took < 30 )) || fail "timeout: run took ${took}s"
child=$(cat "$WORK/child.pid")
sleep 0.2
# Dead means gone, or a zombie not yet reaped by its new parent (kill -0 still succeeds on those).
state=$(ps -o stat= -p "$child" 2>/dev/null || true)
if [[ -n "$state" && "$state" != Z* ]]; then kill "$child"; fail "timeout: the command's child $child survived (state $state)"; fi
pass "timeout: group killed after 1 s (child gone), run exit 3 in ${took}s, report names the timeout and stderr"

# --- malformed lines: each named by line and field; the valid ones are used.
cat > "$WORK/lines.jsonl" <<'JSONL'
{"kind": "syslog", "node": "gpu-c03", "observed_at": "2026-10-13T18:27:40Z", "text": "probe ok"}

{"kind": "syslog", "node": "gpu-c03" "text": "missing comma"}
{"kind": "syslog", "node": "gpu-c03", "observed_at": "yesterday", "text": "bad time"}
{"type": "text", "source": {"name": "probe.log", "kind": "applog", "node": "gpu-c01"}, "text": "line one\nline two\n"}
{"type": "text", "source": {"name": "probe.log", "kind": "weblog"}, "text": "x"}
{"kind": "node_metrics", "node": "gpu-c03", "metric": {"name": "DCGM_FI_DEV_XID_ERRORS", "value": "79"}}
{"kind": "syslog", "node": "gpu-c03", "text": "ok", "hostname": "gpu-c03"}
[1, 2]
JSONL
collector_run malformed "  - type: exec
    name: exec/lines
    max_errors: 10
    command: [cat, $WORK/lines.jsonl]"
[[ $RC == 3 ]] || fail "malformed lines: run exited $RC, expected 3"
r=$(report malformed exec/lines)
for want in "line 3: malformed JSON" "line 4: observed_at:" "line 6: source.kind: unknown observation kind 'weblog'" \
            "line 7: metric.value: must be a number" "line 8: hostname: unknown field" "line 9: must be a JSON object" \
            "6 invalid line(s)" "1 observation(s), 1 text block(s) (2 line(s))"; do
  jq -e --arg w "$want" '.reason | contains($w)' <<<"$r" >/dev/null || fail "malformed lines: report lacks \"$want\": $r"
done
jq -e '.status == "error" and .observations == 3' <<<"$r" >/dev/null || fail "malformed lines: $r"
pass "malformed lines: each named (line 3 JSON, 4 observed_at, 6 source.kind, 7 metric.value, 8 unknown field, 9 not an object); 3 valid lines used"

# --- adapter prints one context and then fails
make_site
cat > "$WORK/adapter.sh" <<SH
#!/bin/sh
echo '{"id": "768520", "scheduler": "lsf", "nodes": ["gpu-c01","gpu-c02","gpu-c03","gpu-c04"], "start": "2026-10-13T16:00:00Z", "end": "2026-10-13T18:37:53Z", "state": "EXIT", "exit_code": "1"}'
echo '{"id": "768521", "end": "not a time"}'
echo "bjobs: partial answer, mbatchd busy" >&2
exit 2
SH
chmod +x "$WORK/adapter.sh"
{ printf 'adapter: exec\nadapters:\n  exec:\n    name: exec/site\n    command: [%s]\ncollectors:\n' "$WORK/adapter.sh"; files_collector_yaml; } > "$WORK/adapter.yaml"
RC=0
"$BP" run --config "$WORK/adapter.yaml" --job 768520 -o json > "$WORK/adapter.json" 2> "$WORK/run.err" || RC=$?
[[ $RC == 3 ]] || fail "adapter partial failure: run exited $RC, expected 3"
r=$(report adapter exec/site)
jq -e '.status == "error" and (.reason | contains("exit 2")) and (.reason | contains("line 2: end: ")) and (.reason | contains("stderr: bjobs: partial answer, mbatchd busy"))' <<<"$r" >/dev/null \
  || fail "adapter partial failure report: $r"
[[ -n $(jq -r .runs[0].outcome "$WORK/adapter.json") && $(jq -r .runs[0].context.scheduler "$WORK/adapter.json") == lsf ]] || fail "adapter partial failure: no verdict"
pass "adapter exits 2 after one context: attempt analysed, report error (exit 2, line 2: end, stderr), run exit 3"

# --- adapter fails with nothing: LSF down, and LSF hanging past timeout_s.
{ lsf_adapter_yaml; echo "collectors:"; files_collector_yaml; } > "$WORK/down.yaml"
sed -i "s|      LSF_CLUSTER_NAME: c3|      LSF_CLUSTER_NAME: c3\n      LSF_SHIM_FAIL: down|" "$WORK/down.yaml"
RC=0
"$BP" run --config "$WORK/down.yaml" --job 768520 > "$WORK/run.out" 2> "$WORK/run.err" || RC=$?
[[ $RC == 1 ]] || fail "LSF down: run exited $RC, expected 1"
grep -q "exec/lsf: .*bjobs_adapter.py.*exit 1.*LSF is down" "$WORK/run.err" || fail "LSF down: error does not name the command, exit and stderr"
pass "adapter with nothing to give (LSF down): exit 1, error names the command, its exit and stderr"
sed -i "s|LSF_SHIM_FAIL: down|LSF_SHIM_FAIL: hang|; s|timeout_s: 60|timeout_s: 2|" "$WORK/down.yaml"
t0=$SECONDS; RC=0
"$BP" run --config "$WORK/down.yaml" --job 768520 > "$WORK/run.out" 2> "$WORK/run.err" || RC=$?
took=$((SECONDS - t0))
[[ $RC == 1 ]] && grep -q "timed out after 2 s" "$WORK/run.err" && (( took < 30 )) \
  || fail "LSF hanging: exit $RC after ${took}s: $(cat "$WORK/run.err")"
pass "adapter hanging: killed after 2 s (run took ${took}s), exit 1 naming the timeout"

# --- once per node: {node} in the arguments runs the command for each node of the job, with
#     ATTRIBUTION_NODE set; format: text makes each run's stdout that node's source; one node's
#     failure is named in the report, the other nodes' output is used.
cat > "$WORK/pernode.sh" <<'SH'
#!/bin/sh
echo "$1 $ATTRIBUTION_NODE" >> "$PERNODE_SEEN"
case "$1" in
  gpu-c03) echo "2026-10-13T18:27:39Z gpu-c03 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus." ;;
  gpu-c02) echo "journal not reachable on gpu-c02" >&2; exit 4 ;;
esac
exit 0
SH
chmod +x "$WORK/pernode.sh"
collector_run pernode "  - type: exec
    name: exec/journal
    format: text
    source: {kind: syslog}
    env: {PERNODE_SEEN: $WORK/pernode.seen}
    command: [$WORK/pernode.sh, \"{node}\"]"
[[ $RC == 3 ]] || fail "per node: run exited $RC, expected 3 (one node's command failed)"
[[ $(sort "$WORK/pernode.seen" | tr '\n' ' ') == "gpu-c01 gpu-c01 gpu-c02 gpu-c02 gpu-c03 gpu-c03 gpu-c04 gpu-c04 " ]] \
  || fail "per node: runs seen $(tr '\n' ' ' < "$WORK/pernode.seen") (argument and ATTRIBUTION_NODE for each of the 4 nodes)"
r=$(report pernode exec/journal)
jq -e '.status == "error" and (.reason | contains("once per node: 4 run(s), 1 ok, 2 empty, 1 failed"))
       and (.reason | contains("[gpu-c02]")) and (.reason | contains("exit 4")) and (.reason | contains("journal not reachable on gpu-c02"))
       and .observations == 1' <<<"$r" >/dev/null || fail "per node report: $r"
grep -q '"source":"exec/journal:gpu-c03"' <(jq -c . "$WORK/pernode.json") || fail "per node: gpu-c03's stdout is not evidence as source exec/journal:gpu-c03"
pass "once per node: 4 runs with {node} and ATTRIBUTION_NODE, gpu-c03's line used as source exec/journal:gpu-c03, gpu-c02's exit 4 named, run exit 3"
