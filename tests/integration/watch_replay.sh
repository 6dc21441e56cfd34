#!/bin/bash
# watch over the replay adapter through a maintenance-window burst, with a backlog bound smaller
# than the burst (issue #13 §3). Three sample bundles are the templates; the schedule is 60 steady
# jobs plus 600 ending within 10 simulated minutes, at 600x (the burst is released in one wall
# second, far faster than it can be attributed, so the backlog bound is what holds memory).
#   1. watch is stopped with SIGTERM in the middle of the burst, then started again: together the
#      two processes print and store every scheduled job exactly once (nothing lost, nothing twice);
#   2. the backlog never exceeded the bound (metrics file and final log line), "backlog full" was
#      logged and the backlog drained; the RSS sampled from /proc stayed under a generous bound;
#   3. each replayed job's verdict is its template's (outcome and root node as `analyze` gives them);
#   4. a third run over the finished schedule attributes nothing.
# Usage: watch_replay.sh BLUEPRINT_BINARY SOURCE_DIR
set -euo pipefail
BIN=$(realpath "$1"); SRC=$(realpath "$2")
PY=/usr/bin/python3
T=$(mktemp -d /tmp/watch-replay.XXXXXX)
trap 'kill "${WPID:-}" "${SPID:-}" 2>/dev/null || true; rm -rf "$T"' EXIT
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
check() { if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else fail "$1: got '$2', expected '$3'"; fi; }
BOUND=48
RSS_LIMIT_MB=400
TEMPLATES=(cuinit-999-one-node roce-err12-at-job-start job-failed-silently)
cat > "$T/replay.yaml" <<EOF
adapter: replay
rules: $SRC/rules
adapters:
  replay:
    bundles: [$(printf '%s,' "${TEMPLATES[@]/#/$SRC/samples/}" | sed 's/,$//')]
    speed: 600
    jobs_per_hour: 360
    duration: 10m
    bursts: [{at: 2m, jobs: 600, within: 10m}]
EOF
W=("$BIN" watch -c "$T/replay.yaml" --db "$T/w.sqlite" --concurrency 2 --backlog "$BOUND" --interval 200ms
   --report-every 1s --metrics-file "$T/metrics.prom" --progress never -o json)
q() { sqlite3 "$T/w.sqlite" "$1"; }
metric() { awk -v m="$1" '$1 == m {print $2}' "$T/metrics.prom"; }

# RSS sampler: the largest VmRSS of a pid, in kB, sampled every 100 ms while it lives.
sample_rss() {
  local pid=$1 out=$2 max=0 v
  while kill -0 "$pid" 2>/dev/null; do
    v=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
    [ -n "$v" ] && [ "$v" -gt "$max" ] && max=$v
    echo "$max" > "$out"
    sleep 0.1
  done
}

# 1a. the first watcher, stopped in the middle of the burst
: > "$T/run1.jsonl"
"${W[@]}" > "$T/run1.jsonl" 2> "$T/run1.err" &
WPID=$!
sample_rss "$WPID" "$T/rss1" & SPID=$!
for _ in $(seq 1 600); do
  [ "$(wc -l < "$T/run1.jsonl")" -ge 150 ] && break
  kill -0 "$WPID" 2>/dev/null || break
  sleep 0.1
done
kill -TERM "$WPID" 2>/dev/null || true
rc1=0; wait "$WPID" || rc1=$?
WPID=
check "first watcher exits cleanly on SIGTERM" "$rc1" 0
grep -q "backlog full ($BOUND attempts taken" "$T/run1.err" || fail "no 'backlog full' log line: $(tail -5 "$T/run1.err")"
n1=$(wc -l < "$T/run1.jsonl")
echo "first watcher: $n1 attempts before SIGTERM"
[ "$n1" -ge 1 ] && [ "$n1" -lt 660 ] || fail "the first watcher should stop mid-schedule (printed $n1 of 660)"

# 1b. a second watcher takes over from the cursor and runs until the schedule is over
"${W[@]}" > "$T/run2.jsonl" 2> "$T/run2.err" &
WPID=$!
sample_rss "$WPID" "$T/rss2" & SPID=$!
rc2=0; wait "$WPID" || rc2=$?
WPID=
wait "$SPID" 2>/dev/null || true
check "second watcher exit code" "$rc2" 0
grep -q "schedule is over" "$T/run2.err" || fail "the second watcher did not end with the schedule: $(tail -5 "$T/run2.err")"
grep -q "backlog drained" "$T/run2.err" || fail "no 'backlog drained' line in the second run"

"$PY" - "$T/run1.jsonl" "$T/run2.jsonl" > "$T/ids.txt" <<'PY'
import json, sys
ids = []
for f in sys.argv[1:]:
    for line in open(f):
        if line.strip():
            ids.append(json.loads(line)["job_id"])
expected = {f"replay-{k:07d}" for k in range(1, 61)} | {f"replay-b1-{j:06d}" for j in range(1, 601)}
dups = len(ids) - len(set(ids))
print(len(ids), len(set(ids)), dups, len(expected - set(ids)), len(set(ids) - expected))
PY
read -r printed distinct dups missing extra < "$T/ids.txt"
check "attempts printed by the two watchers" "$printed" 660
check "printed twice" "$dups" 0
check "scheduled jobs never printed" "$missing" 0
check "printed jobs not in the schedule" "$extra" 0
check "rows stored" "$(q 'SELECT count(*) || "/" || count(DISTINCT job_id) FROM runs')" "660/660"

# 2. bounded backlog and memory
peak=$(metric attribution_watch_backlog_peak)
check "metrics: backlog bound" "$(metric attribution_watch_backlog_limit)" "$BOUND"
[ -n "$peak" ] && [ "$peak" -ge 1 ] && [ "$peak" -le "$BOUND" ] && echo "ok: backlog peak $peak <= $BOUND" \
  || fail "backlog peak '$peak' not within 1..$BOUND"
[ "$(metric attribution_watch_backlog_full_total)" -ge 1 ] && echo "ok: backlog full counted" || fail "backlog_full_total is 0"
for r in 1 2; do
  grep -q "backlog peak [0-9]*/$BOUND" "$T/run$r.err" || fail "run $r: no final line with the backlog peak"
  p=$(sed -n "s/.*backlog peak \([0-9]*\)\/$BOUND.*/\1/p" "$T/run$r.err" | tail -1)
  [ -n "$p" ] && [ "$p" -le "$BOUND" ] && echo "ok: run $r backlog peak $p <= $BOUND" || fail "run $r: backlog peak '$p' > $BOUND"
done
rss_kb=$(cat "$T/rss1" "$T/rss2" | sort -n | tail -1)
echo "peak RSS sampled from /proc: $((rss_kb / 1024)) MB"
[ "$rss_kb" -gt 0 ] && [ "$rss_kb" -lt $((RSS_LIMIT_MB * 1024)) ] && echo "ok: RSS < $RSS_LIMIT_MB MB" \
  || fail "peak RSS ${rss_kb} kB not within (0, $RSS_LIMIT_MB MB)"

# 3. every replayed verdict is its template's
for i in 0 1 2; do
  "$BIN" analyze --rules "$SRC/rules" -o json "$SRC/samples/${TEMPLATES[$i]}" > "$T/tpl$i.json" || true
done
"$PY" - "$T" <<'PY' > "$T/verdicts.txt"
import json, sys
t = sys.argv[1]
tpl = [json.load(open(f"{t}/tpl{i}.json")) for i in range(3)]
def key(v):
    return (v.get("outcome"), (v.get("root_cause") or {}).get("node"))
bad = 0
for f in ("run1.jsonl", "run2.jsonl"):
    for line in open(f"{t}/{f}"):
        if not line.strip():
            continue
        r = json.loads(line)
        jid = r["job_id"]
        if jid.startswith("replay-b1-"):
            i = (int(jid.split("-")[2]) - 1 + 0) % 3  # burst 1 (index 0): template (j - 1 + 0) % 3
        else:
            i = (int(jid.split("-")[1]) - 1) % 3
        if key(r["verdict"]) != key(tpl[i]):
            bad += 1
print(bad, key(tpl[0]), key(tpl[1]), key(tpl[2]))
PY
read -r bad_verdicts _ < "$T/verdicts.txt"
check "replayed verdicts that differ from their template's" "$bad_verdicts" 0
echo "template verdicts: $(cut -d' ' -f2- "$T/verdicts.txt")"

# 4. the finished schedule: a new watcher finds everything stored
"${W[@]}" > "$T/run3.jsonl" 2> "$T/run3.err" || fail "third watcher: $(tail -3 "$T/run3.err")"
check "third watcher attributes nothing" "$(wc -l < "$T/run3.jsonl")" 0
check "rows after the third watcher" "$(q 'SELECT count(*) FROM runs')" 660

if [ $FAILS -gt 0 ]; then
  echo "--- run1.err"; tail -20 "$T/run1.err"; echo "--- run2.err"; tail -20 "$T/run2.err"
  echo "FAILED: $FAILS check(s)"; exit 1
fi
echo "PASS: watch over a replayed burst: every job once, backlog <= $BOUND, RSS $((rss_kb / 1024)) MB"
