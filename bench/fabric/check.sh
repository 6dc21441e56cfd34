#!/usr/bin/env bash
# ctest fabric_bench_quick: the simulated fleet's smallest profile (144 hosts, 5 leaves, 2 days, the same
# four injected faults) through bench/fabric/run.sh; fails unless precision >= MIN_P and recall >= MIN_R
# (default 0.9 each).   check.sh BLUEPRINT_BINARY OUT_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BIN=${1:?usage: check.sh BLUEPRINT_BINARY OUT_DIR}
OUT=${2:?usage: check.sh BLUEPRINT_BINARY OUT_DIR}
log="$OUT.log"
mkdir -p "$(dirname "$OUT")"
BIN=$BIN OUT=$OUT PROFILE=${PROFILE:-ctest} bash "$here/run.sh" 2>&1 | tee "$log"
last=$(tail -1 "$log")
read -r w1 p w2 r <<<"$last"
[[ $w1 == precision && $w2 == recall ]] || { echo "FAIL: last line is not 'precision P recall R': $last"; exit 1; }
ok=$(/usr/bin/python3 -c "import sys; print(int(float(sys.argv[1]) >= float(sys.argv[3]) and float(sys.argv[2]) >= float(sys.argv[4])))" \
     "$p" "$r" "${MIN_P:-0.9}" "${MIN_R:-0.9}")
[[ $ok == 1 ]] || { echo "FAIL: precision $p recall $r below ${MIN_P:-0.9}/${MIN_R:-0.9}"; exit 1; }
echo "PASS: precision $p recall $r"
