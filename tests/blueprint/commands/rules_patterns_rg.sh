#!/usr/bin/env bash
# `attribution-blueprint rules patterns` prints what `rg -f` takes (its help says so): every
# extractor's pattern, named groups made non-capturing. rg joins -f patterns into one regex and
# rejects repeated group names, which the catalogue has (rank, node, ...).
#
#   rules_patterns_rg.sh BLUEPRINT_BIN RULES_DIR
# Checks: one line per extractor (rules lint's count), no named group left, rg accepts the file
# (exit 1 on /dev/null: no match, no error; 2 would be a parse error), and rg with it matches real
# lines of FORMATS.md shape (a Xid, a watchdog timeout, an NCCL communicator init) and not a plain
# line. Exits 77 (skip) when rg is not installed (scripts/install-deps.sh --test installs ripgrep).
set -euo pipefail
BIN=$1
RULES=$2
command -v rg > /dev/null || { echo "rg not installed: skip"; exit 77; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$BIN" rules patterns "$RULES" > "$TMP/patterns"
n=$(wc -l < "$TMP/patterns")
extractors=$("$BIN" rules lint "$RULES" -o json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["summary"]["extractors"])')
[[ $n -eq $extractors ]] || fail "$n patterns for $extractors extractors"
left=$(grep -c '(?P<' "$TMP/patterns" || true)
[[ $left -eq 0 ]] || fail "$left patterns still have named groups"

set +e
rg --no-config -c -f "$TMP/patterns" /dev/null > "$TMP/rg.out" 2> "$TMP/rg.err"
rc=$?
set -e
[[ $rc -eq 1 ]] || fail "rg -f rejected the patterns (exit $rc): $(head -c 400 "$TMP/rg.err")"

cat > "$TMP/lines" <<'LINES'
[1084456.074562] NVRM: Xid (PCI:0000:09:00): 79, pid=0, GPU has fallen off the bus.
[rank1]:[E1002 18:16:40.662329700 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2521, OpType=ALLREDUCE, NumelIn=160672064, NumelOut=160672064, Timeout(ms)=600000) ran for 600000 milliseconds before timing out.
 12: gpu-a0002:100034:100214 [4] NCCL INFO comm 0x55c6d68d7b20 rank 12 nranks 16 cudaDev 4 nvmlDev 4 busId 9a000 commId 0xbe1e - Init COMPLETE
 [2026-03-02 08:21:42] iteration        1/  100000 | consumed samples:         1024 | lm loss: 2.498501E+00 |
LINES
matched=$(rg --no-config -c -f "$TMP/patterns" "$TMP/lines")
[[ $matched -eq 3 ]] || fail "rg matched $matched of the 3 failure lines (and not the iteration line): $(rg --no-config -f "$TMP/patterns" "$TMP/lines")"
echo "ok: $n patterns, rg accepts them and matches the 3 failure lines"
