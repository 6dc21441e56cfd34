#!/usr/bin/env bash
# Proof of the fleet fabric analysis on a simulated fleet (issue #12 §5, docs/fabric.md "Simulation").
#
#   bench/fabric/run.sh                 # a week on 1,152 hosts (64 GB200 NVL72 racks, 36 leaves, 16 spines)
#   QUICK=1 bench/fabric/run.sh         # 288 hosts, 9 leaves, 4 days: a few minutes, the same four faults
#   PROFILE=ctest bench/fabric/run.sh   # 144 hosts, 5 leaves, 2 days (the ctest fabric_bench_quick)
#
# Env: BIN (attribution-blueprint; default: build/blueprint/attribution-blueprint, then PATH),
#      OUT (work directory, default /tmp/attribution-fabric-bench-<profile>), SEED (default 1),
#      PAR (parallel `run` processes, default 2), RULES (default: the source tree's rules/),
#      REUSE=1 (keep an already generated fleet of the same profile in OUT).
# Steps: gen_fleet.py writes the topology (ibnetdiscover + YAML), one bundle per job and truth.json;
# `topology import` stores the topology; `run --adapter static` analyses every bundle into the SQLite
# store; `fleet fabric -o json` analyses the store; score.py compares the components it names with
# the injected ones. The last line is `precision P recall R`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
profile=${PROFILE:-full}
[[ ${QUICK:-0} == 1 && -z ${PROFILE:-} ]] && profile=quick
BIN=${BIN:-}
if [[ -z $BIN ]]; then
  for c in "$root/build/blueprint/attribution-blueprint" "$(command -v attribution-blueprint || true)"; do
    [[ -n $c && -x $c ]] && { BIN=$c; break; }
  done
fi
[[ -n $BIN && -x $BIN ]] || { echo "error: no attribution-blueprint binary (set BIN=)" >&2; exit 2; }
out=${OUT:-/tmp/attribution-fabric-bench-$profile}
par=${PAR:-2}
export ATTRIBUTION_RULES_DIR=${RULES:-$root/rules}
py=/usr/bin/python3
[[ -x $py ]] || py=python3

t0=$(date +%s%N)
if [[ ${REUSE:-0} == 1 && -f $out/truth.json ]] && grep -q "\"profile\": \"$profile\"" "$out/truth.json"; then
  echo "reusing the fleet in $out (REUSE=1)" >&2
else
  $py "$here/gen_fleet.py" --out "$out" --profile "$profile" --seed "${SEED:-1}"
fi
t1=$(date +%s%N)
db="$out/fleet.sqlite"
rm -f "$db" "$db-wal" "$db-shm"
"$BIN" topology import "$out/topology/ibnetdiscover.txt" "$out/topology/fabric.yaml" --db "$db" >"$out/topology-import.log" 2>&1 \
  || { cat "$out/topology-import.log"; echo "error: topology import failed" >&2; exit 1; }

# Every job bundle through `run --adapter static` into the store, in PAR processes of 100 bundles.
find "$out/jobs" -mindepth 1 -maxdepth 1 -type d | sort >"$out/bundles.txt"
nb=$(wc -l <"$out/bundles.txt")
rm -f "$out"/run-*.log
export FABRIC_BENCH_BIN=$BIN FABRIC_BENCH_DB=$db FABRIC_BENCH_OUT=$out
# shellcheck disable=SC2016
xargs -a "$out/bundles.txt" -n 100 -P "$par" sh -c '
  set --  $(for b in "$@"; do printf -- "--bundle %s " "$b"; done)
  "$FABRIC_BENCH_BIN" run --adapter static "$@" --db "$FABRIC_BENCH_DB" --progress never >>"$FABRIC_BENCH_OUT/run-$$.log" 2>&1
  rc=$?; [ $rc -eq 0 ] || [ $rc -eq 3 ] || echo "run exited $rc" >>"$FABRIC_BENCH_OUT/run-$$.log"' sh || true
t2=$(date +%s%N)
stored=$(sqlite3 "$db" 'SELECT count(*) FROM runs' 2>/dev/null || echo 0)
echo "bundles $nb, runs stored $stored (generate $(( (t1 - t0) / 1000000000 )) s, topology import + run $(( (t2 - t1) / 1000000000 )) s)" >&2
if [[ $stored -ne $nb ]]; then
  echo "error: $((nb - stored)) bundles were not stored; see $out/run-*.log" >&2
  tail -5 "$out"/run-*.log 2>/dev/null | head -40 >&2
  exit 1
fi

days=$($py -c "import json,sys; d=json.load(open(sys.argv[1])); import datetime as dt; \
a=dt.datetime.fromisoformat(d['start'].replace('Z','+00:00')); b=dt.datetime.fromisoformat(d['end'].replace('Z','+00:00')); print((b-a).days+1)" "$out/truth.json")
/usr/bin/time -f '%e %M' -o "$out/fleet.time" "$BIN" fleet fabric --db "$db" --since "${days}d" -o json >"$out/findings.json" 2>"$out/fleet.err" \
  || { cat "$out/fleet.err"; echo "error: fleet fabric failed" >&2; exit 1; }
read -r secs kb <"$out/fleet.time"
echo "fleet fabric over $stored runs: $secs s, peak RSS $((kb / 1024)) MB" >&2
$py "$here/score.py" "$out/truth.json" "$out/findings.json"
