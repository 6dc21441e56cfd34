#!/usr/bin/env bash
# End-to-end benchmark (issue #6): in ONE run, times `attribution-blueprint analyze` (1 and 2
# threads) and rg / grep -E / grep -P over the same files with the catalogue's patterns
# (`attribution-blueprint rules patterns rules/`), on generated bundles, page cache warm, medians
# of $REPS runs. Prints a table (size, files, wall, GB/s, peak RSS, analyze/rg) and writes
# $OUT/results.csv for scripts/plot_performance.py.
#
#   bench/run.sh                 # 100M, 1G, 10G at 64 ranks + rank scaling + 16,384-rank all-timeout
#                                #   + match density 0.1/1/10/30 % at 1 GB x 64 and x 1,024 ranks
#   SIZES="100M 1G" BIG= REPS=3 bench/run.sh      # skip 10 GB
#   SIZES= BIG= RANK_SCALE= DENSITIES="1 10" bench/run.sh   # only match-density rows
#
# Environment: BUILD (build dir, default build-bench), BIN, GEN, RULES (rules/), DATA (bench/data), OUT (bench/out),
# REPS (5), SIZES ("100M 1G"; empty = skip), BIG (10G; empty = skip), RANKS (64), RANK_SCALE ("16 256 1024 4096 16384",
# at RANK_SIZE=1G), GREP_MAX_MB (1100: grep -E/-P only on bundles up to this size), SEED (1),
# KEEP_DATA (0: delete the 10 GB bundle at the end), BIG_REPS (1: the 10 GB bundle is timed once,
# with 2 threads only, after a cat to warm the page cache), WARMUP (0: no untimed run before the
# REPS timed ones; the cat already warmed the page cache).
# Match density (issue #14): DENSITIES ("0.1 1 10 30": % of lines that match a rule, failure-storm
# lines; empty = skip), DENSITY_SHAPES ("1G:64 1G:1024": size:ranks, one file per rank), LAUNCHER
# (srun: `srun --label` prefixes on every line), GREP_TIMEOUT (120: grep -E/-P rows on density
# bundles are cut off after this many seconds and reported as not finished). Each density row says
# the measured density (rg's matching lines / all lines) and the bundle shape.
# Python rules (issue #11): PY_RULES_SIZE (1G; empty = skip): analyze with and without two Python
# rules, alternating, same run (the python-rules line).
# Needs: rg (ripgrep), GNU grep, /usr/bin/time (package `time`), /usr/bin/python3.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench}
BIN=${BIN:-$BUILD/blueprint/attribution-blueprint}
GEN=${GEN:-$BUILD/bench/bench-gen-bundle}
DATA=${DATA:-$ROOT/bench/data}
OUT=${OUT:-$ROOT/bench/out}
REPS=${REPS:-5}
SIZES=${SIZES-"100M 1G"}
BIG=${BIG-10G}
RANKS=${RANKS:-64}
RANK_SCALE=${RANK_SCALE-"16 256 1024 4096 16384"}
RANK_SIZE=${RANK_SIZE:-1G}
GREP_MAX_MB=${GREP_MAX_MB:-1100}
WARMUP=${WARMUP:-0}
SEED=${SEED:-1}
KEEP_DATA=${KEEP_DATA:-0}
DENSITIES=${DENSITIES-"0.1 1 10 30"}
DENSITY_SHAPES=${DENSITY_SHAPES-"1G:64 1G:1024"}
LAUNCHER=${LAUNCHER:-srun}
GREP_TIMEOUT=${GREP_TIMEOUT:-120}
RULES=${RULES:-$ROOT/rules}
PY=/usr/bin/python3

for tool in rg grep /usr/bin/time "$PY" "$BIN" "$GEN"; do
  command -v "$tool" >/dev/null || { echo "run.sh: missing $tool" >&2; exit 1; }
done
mkdir -p "$DATA" "$OUT"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# ---------------------------------------------------------------- patterns
"$BIN" rules patterns "$RULES" > "$OUT/patterns.re2"
"$PY" "$ROOT/bench/patterns.py" "$OUT/patterns.re2" "$OUT" 2> "$OUT/patterns.log"
NPAT=$(wc -l < "$OUT/patterns.re2")

# ---------------------------------------------------------------- helpers
gen() {  # gen SIZE RANKS SCENARIO [DENSITY LAUNCHER] -> prints the bundle dir
  local dir="$DATA/s$1-r$2-$3${4:+-d$4-$5}-seed$SEED"
  if [[ ! -f "$dir/.done" ]]; then
    rm -rf "$dir"
    "$GEN" --out "$dir" --size "$1" --ranks "$2" --scenario "$3" --seed "$SEED" --jobs 2 \
      ${4:+--density "$4" --launcher "$5"} >&2
    touch "$dir/.done"
  fi
  echo "$dir"
}

warm() { find "$1" -type f \( -name '*.log' -o -name '*.txt' \) -print0 | xargs -0 cat > /dev/null; }

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.3f\n", (a[NR/2]+a[NR/2+1])/2}'; }

# measure NAME CMD... : runs REPS times (after one untimed run if WARMUP=1; the files were cat'ed), sets WALL (median s), CPU (median
# user+sys s: less sensitive than wall time to other load on a shared machine) and RSS (max KB). stdout of the command goes to $TMP/out.NAME.
measure() {
  local name=$1; shift
  : > "$TMP/walls"; : > "$TMP/rss"; : > "$TMP/cpu"
  [[ $WARMUP == 1 ]] && { "$@" > "$TMP/out.$name" 2> "$TMP/err.$name" || true; }
  for ((i = 0; i < REPS; i++)); do
    /usr/bin/time -f '%e %M %U %S' -o "$TMP/time" "$@" > "$TMP/out.$name" 2> "$TMP/err.$name" || true
    tail -1 "$TMP/time" | awk '{print $1}' >> "$TMP/walls"
    tail -1 "$TMP/time" | awk '{print $2}' >> "$TMP/rss"
    tail -1 "$TMP/time" | awk '{print $3 + $4}' >> "$TMP/cpu"
  done
  WALL=$(median < "$TMP/walls")
  RSS=$(sort -g "$TMP/rss" | tail -1)
  CPU=$(median < "$TMP/cpu")
}

printf '%-30s %5s %6s %-11s %7s %6s %7s %9s %7s %6s %7s\n' "bundle" "size" "files" "tool" "wall_s" "GB/s" "cpu_s" "GB/cpu-s" "rss_MB" "vs_rg" "cpu/rg" | tee "$OUT/table.txt"
echo "bundle,bytes,files,ranks,tool,threads,wall_s,gbps,cpu_s,gb_per_cpu_s,rss_kb,verdict_bytes,outcome,root_node" > "$OUT/results.csv"

# tool_failed NAME: true when the last measured run of NAME exited with grep's error status (2) or
# another failure (not 0 = matches, 1 = none); TOOL_ERROR holds its first stderr line (e.g. grep -P's
# "regular expression is too large" on the whole catalogue), so the table says so instead of a 0 s row.
tool_failed() {
  local status
  status=$(sed -n 's/.*exited with non-zero status \([0-9]*\).*/\1/p' "$TMP/time" | tail -1)
  [[ -z "$status" || "$status" == 1 || "$status" == 124 ]] && return 1
  TOOL_ERROR=$(head -1 "$TMP/err.$1" 2> /dev/null)
  TOOL_ERROR=${TOOL_ERROR:-exit status $status}
  return 0
}

row() {  # row BUNDLE BYTES FILES RANKS TOOL THREADS WALL RSS CPU RGWALL RGCPU VBYTES OUTCOME ROOT
  local gbps gbc ratio="" cratio="" mb
  gbps=$(awk -v b="$2" -v w="$7" 'BEGIN {printf "%.2f", (w > 0 ? b / w / 1e9 : 0)}')
  gbc=$(awk -v b="$2" -v w="$9" 'BEGIN {printf "%.2f", (w > 0 ? b / w / 1e9 : 0)}')
  mb=$(awk -v k="$8" 'BEGIN {printf "%.0f", k / 1024}')
  [[ -n "${10}" ]] && ratio=$(awk -v a="$7" -v r="${10}" 'BEGIN {printf "%.2f", (r > 0 ? a / r : 0)}')
  [[ -n "${11}" ]] && cratio=$(awk -v a="$9" -v r="${11}" 'BEGIN {printf "%.2f", (r > 0 ? a / r : 0)}')
  printf '%-30s %5s %6s %-11s %7s %6s %7s %9s %7s %6s %7s\n' "$(basename "$1" | sed 's/-seed[0-9]*$//')" "$(numfmt --to=iec "$2")" "$3" "$5" "$7" "$gbps" "$9" "$gbc" "$mb" "$ratio" "$cratio" | tee -a "$OUT/table.txt"
  echo "$(basename "$1"),$2,$3,$4,$5,$6,$7,$gbps,$9,$gbc,$8,${12},${13},${14}" >> "$OUT/results.csv"
}

verdict_field() {  # verdict_field FILE KEY
  "$PY" -c 'import json,sys; v=json.load(open(sys.argv[1])); k=sys.argv[2].split(".")
for p in k: v = v.get(p) if isinstance(v, dict) else None
print(v if v is not None else "-")' "$1" "$2" 2>/dev/null || echo "?"
}

# bench_bundle DIR [grep]: every tool over one bundle.
bench_bundle() {
  local dir=$1 with_grep=${2:-grep}
  local bytes files ranks
  bytes=$(find "$dir" -type f \( -name '*.log' -o -name '*.txt' \) ! -name expected.txt -printf '%s\n' | awk '{s+=$1} END {print s}')
  files=$(find "$dir" -type f \( -name '*.log' -o -name '*.txt' \) ! -name expected.txt | wc -l)
  ranks=$(sed -n 's/^ranks=//p' "$dir/expected.txt")
  warm "$dir"
  local rg1="" rg2 rg1rss="" rg1cpu="" threads=${THREADS:-1 2}
  AN1=""
  AN2=""
  AN1CPU=""
  if [[ " $threads " == *" 1 "* ]]; then
    measure rg1 rg --no-config -uu -a -c -j1 -f "$OUT/rg.txt" "$dir/logs" "$dir/kernel" "$dir/sacct.txt"
    rg1=$WALL; rg1rss=$RSS; rg1cpu=$CPU
  fi
  measure rg2 rg --no-config -uu -a -c -j2 -f "$OUT/rg.txt" "$dir/logs" "$dir/kernel" "$dir/sacct.txt"
  rg2=$WALL; local rg2rss=$RSS rg2cpu=$CPU
  for t in $threads; do
    measure "an$t" "$BIN" analyze -j "$t" --rules "$RULES" -o json "$dir"
    local vb outcome root ref refc
    vb=$(wc -c < "$TMP/out.an$t")
    cp "$TMP/out.an$t" "$OUT/verdict-$(basename "$dir").json"
    outcome=$(verdict_field "$TMP/out.an$t" outcome)
    root=$(verdict_field "$TMP/out.an$t" root_cause.node)
    if [[ $t == 1 ]]; then ref=$rg1; refc=$rg1cpu; else ref=$rg2; refc=$rg2cpu; fi
    row "$dir" "$bytes" "$files" "$ranks" "analyze-j$t" "$t" "$WALL" "$RSS" "$CPU" "$ref" "$refc" "$vb" "$outcome" "$root"
    if [[ $t == 1 ]]; then AN1=$WALL; AN1CPU=$CPU; else AN2=$WALL; fi
    AN_RSS=$RSS
  done
  if [[ -n "$AN1CPU" && -n "$FIXED_CPU" ]]; then
    echo "  extraction per core: $(awk -v b="$bytes" -v c="$AN1CPU" -v f="$FIXED_CPU" 'BEGIN {printf "%.2f", (c > f ? b / (c - f) / 1e9 : 0)}') GB/s (analyze -j1 CPU $AN1CPU s minus the fixed cost $FIXED_CPU s: rules, bundle, attribution, measured on a 10 MB bundle of the same shape)" | tee -a "$OUT/table.txt"
  fi
  [[ -n "$rg1" ]] && row "$dir" "$bytes" "$files" "$ranks" "rg-j1" 1 "$rg1" "$rg1rss" "$rg1cpu" "" "" "" "" ""
  row "$dir" "$bytes" "$files" "$ranks" "rg-j2" 2 "$rg2" "$rg2rss" "$rg2cpu" "" "" "" "" ""
  if [[ $with_grep == cutoff ]]; then
    # Density rows: grep where it finishes. One run each, cut off after GREP_TIMEOUT seconds.
    local g
    for g in E P; do
      local pf="$OUT/ere.txt"
      [[ $g == P ]] && pf="$OUT/pcre.txt"
      REPS=1 measure "grep$g" timeout "$GREP_TIMEOUT" grep -r -a -c "-$g" -f "$pf" "$dir/logs" "$dir/kernel" "$dir/sacct.txt"
      if grep -q 'status 124' "$TMP/time"; then
        printf '%-30s %5s %6s %-11s %s\n' "$(basename "$dir" | sed 's/-seed[0-9]*$//')" "$(numfmt --to=iec "$bytes")" "$files" "grep-$g" "did not finish in $GREP_TIMEOUT s" | tee -a "$OUT/table.txt"
      elif tool_failed "grep$g"; then
        printf '%-30s %5s %6s %-11s %s\n' "$(basename "$dir" | sed 's/-seed[0-9]*$//')" "$(numfmt --to=iec "$bytes")" "$files" "grep-$g" "failed: $TOOL_ERROR" | tee -a "$OUT/table.txt"
      else
        row "$dir" "$bytes" "$files" "$ranks" "grep-$g" 1 "$WALL" "$RSS" "$CPU" "" "" "" "" ""
      fi
    done
  fi
  if [[ $with_grep == grep ]] && (( bytes <= GREP_MAX_MB * 1024 * 1024 )); then
    local g
    for g in E P; do
      local pf="$OUT/ere.txt"
      [[ $g == P ]] && pf="$OUT/pcre.txt"
      measure "grep$g" grep -r -a -c "-$g" -f "$pf" "$dir/logs" "$dir/kernel" "$dir/sacct.txt"
      if tool_failed "grep$g"; then
        printf '%-30s %5s %6s %-11s %s\n' "$(basename "$dir" | sed 's/-seed[0-9]*$//')" "$(numfmt --to=iec "$bytes")" "$files" "grep-$g" "failed: $TOOL_ERROR" | tee -a "$OUT/table.txt"
      else
        row "$dir" "$bytes" "$files" "$ranks" "grep-$g" 1 "$WALL" "$RSS" "$CPU" "" "" "" "" ""
      fi
    done
    # Matching-line totals: every tool should find the same lines.
    local m_rg m_e m_p
    m_rg=$(awk -F: '{s+=$NF} END {print s}' "$TMP/out.rg2")
    m_e=$(awk -F: '{s+=$NF} END {print s}' "$TMP/out.grepE")
    m_p=$(awk -F: '{s+=$NF} END {print s}' "$TMP/out.grepP"); tool_failed grepP && m_p="(failed)"
    echo "  matching lines: rg $m_rg, grep -E $m_e, grep -P $m_p" | tee -a "$OUT/table.txt"
  fi
  if [[ -n "$(sed -n 's/^density_pct=//p' "$dir/expected.txt")" ]]; then
    # The density a row is about, measured: rg's matching lines over all lines, and the shape.
    local m_lines all_lines
    m_lines=$(awk -F: '{s+=$NF} END {print s}' "$TMP/out.rg2")
    all_lines=$(cat "$dir"/logs/* "$dir"/kernel/* "$dir/sacct.txt" | wc -l)
    echo "  match density: $(awk -v m="$m_lines" -v a="$all_lines" 'BEGIN {printf "%.2f", 100 * m / a}') % of lines ($m_lines of $all_lines match, rg; generated at $(sed -n 's/^density_pct=//p' "$dir/expected.txt") %), shape $ranks ranks x $(numfmt --to=iec $((bytes / files))) per file, $(sed -n 's/^launcher=//p' "$dir/expected.txt") prefixes" | tee -a "$OUT/table.txt"
  fi
  echo "  verdict: $(verdict_field "$OUT/verdict-$(basename "$dir").json" outcome) root node $(verdict_field "$OUT/verdict-$(basename "$dir").json" root_cause.node) (expected: $(sed -n 's/^root_node=//p' "$dir/expected.txt" | head -1)), $(wc -c < "$OUT/verdict-$(basename "$dir").json") bytes; 1->2 threads x$(awk -v a="$AN1" -v b="$AN2" 'BEGIN {printf "%.2f", (a > 0 && b > 0 ? a / b : 0)}')" | tee -a "$OUT/table.txt"
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $NPAT patterns, REPS=$REPS" | tee -a "$OUT/table.txt"

# ---------------------------------------------------------------- fixed cost
# What a run costs besides reading bytes (rule cache load, bundle parse, attribution, verdict):
# analyze -j1 on a 10 MB bundle of the same shape. Extraction per core = bytes / (CPU - this).
AN1CPU=""
FIXED_CPU=""
if [[ -n "$SIZES$DENSITIES" ]]; then
  fixed_dir=$(gen 10M "$RANKS" xid79)
  warm "$fixed_dir"
  measure fixed "$BIN" analyze -j 1 --rules "$RULES" -o json "$fixed_dir"
  FIXED_CPU=$CPU
  echo "# fixed cost (10 MB bundle, analyze -j1): wall $WALL s, cpu $CPU s" | tee -a "$OUT/table.txt"
fi

# ---------------------------------------------------------------- log size
for s in $SIZES; do bench_bundle "$(gen "$s" "$RANKS" xid79)"; done
if [[ -n "$BIG" ]]; then
  avail=$(df -BG --output=avail "$DATA" | tail -1 | tr -dc 0-9)
  if (( avail < 25 )); then
    echo "skipping $BIG: only ${avail}G free" | tee -a "$OUT/table.txt"
  else
    big=$(gen "$BIG" "$RANKS" xid79)
    THREADS=2 REPS=${BIG_REPS:-1} bench_bundle "$big" nogrep
    echo "  $BIG peak RSS analyze -j2: $(awk -v k="$AN_RSS" 'BEGIN {printf "%.0f MB", k / 1024}')" | tee -a "$OUT/table.txt"
    [[ $KEEP_DATA == 1 ]] || rm -rf "$big"
  fi
fi

# ---------------------------------------------------------------- rank count
for r in $RANK_SCALE; do bench_bundle "$(gen "$RANK_SIZE" "$r" xid79)" nogrep; done
if [[ -n "$RANK_SCALE" ]]; then
  d=$(gen 100M 16384 all-timeout)
  bench_bundle "$d" nogrep
fi

# ---------------------------------------------------------------- match density (issue #14)
# Failure storms: DENSITIES % of lines match a rule, each DENSITY_SHAPES size:ranks, LAUNCHER prefixes.
for shape in ${DENSITIES:+$DENSITY_SHAPES}; do
  for d in $DENSITIES; do
    bench_bundle "$(gen "${shape%%:*}" "${shape##*:}" xid79 "$d" "$LAUNCHER")" cutoff
  done
done

# ---------------------------------------------------------------- a fleet's week (issue #13 §3)
# watch over the replay adapter (typical 64-rank 100 MB job per core-hour, 10,000-job burst drain)
# and the service with 1 and 3 replicas; writes the "A fleet's week" section of docs/performance.md.
# FLEET=0 skips it; QUICK=1 makes it short.
if [[ ${FLEET:-1} == 1 ]]; then
  BUILD=$BUILD BIN=$BIN GEN=$GEN DATA=$DATA OUT=$OUT/fleet "$ROOT/bench/fleet/run.sh" | tee -a "$OUT/table.txt"
fi
# ---------------------------------------------------------------- Python rules (issue #11)
# analyze -j2 of the PY_RULES_SIZE (1G; empty = skip) bundle with the catalogue alone and with two
# Python rules added (examples/rules: the NVLink-domain refiner and the GPU-inventory field hook,
# with their site data), alternating the two REPS times in the same run. Python runs on the
# aggregated symptoms only, so the target is within 5 %.
PY_RULES_SIZE=${PY_RULES_SIZE-1G}
if [[ -n "$PY_RULES_SIZE" ]]; then
  pydir=$(gen "$PY_RULES_SIZE" "$RANKS" xid79)
  mkdir -p "$TMP/py-off" "$TMP/py-on"
  cp -r "$RULES" "$TMP/py-off/rules" && cp -r "$RULES" "$TMP/py-on/rules"
  cp "$ROOT"/examples/rules/{nvlink_domain.py,nvlink_domains.csv,gpu_inventory.py,gpu_inventory.csv} "$TMP/py-on/rules/"
  warm "$pydir"
  "$BIN" analyze -j 2 --rules "$TMP/py-on/rules" -o json "$pydir" > "$TMP/py-on.json" 2>/dev/null || true  # fills the rules cache
  "$BIN" analyze -j 2 --rules "$TMP/py-off/rules" -o json "$pydir" > "$TMP/py-off.json" 2>/dev/null || true
  : > "$TMP/py-off.t"; : > "$TMP/py-on.t"
  for ((i = 0; i < REPS; i++)); do
    for v in off on; do
      /usr/bin/time -f '%e %U %S' -o "$TMP/time" "$BIN" analyze -j 2 --rules "$TMP/py-$v/rules" -o json "$pydir" \
        > "$TMP/py-$v.json" 2> /dev/null || true
      tail -1 "$TMP/time" >> "$TMP/py-$v.t"
    done
  done
  for v in off on; do
    read -r PYW PYC < <(awk '{print $1, $2 + $3}' "$TMP/py-$v.t" | sort -g | awk '{w[NR]=$1; c[NR]=$2} END {print w[int((NR+1)/2)], c[int((NR+1)/2)]}')
    printf -v "PYW_$v" '%s' "$PYW"; printf -v "PYC_$v" '%s' "$PYC"
  done
  echo "python-rules $(basename "$pydir" | sed 's/-seed[0-9]*$//') analyze-j2 (median of $REPS, alternating): without wall $PYW_off s cpu $PYC_off s; with 2 Python rules wall $PYW_on s cpu $PYC_on s; with/without wall $(awk -v a="$PYW_on" -v b="$PYW_off" 'BEGIN {printf "%.3f", a / b}') cpu $(awk -v a="$PYC_on" -v b="$PYC_off" 'BEGIN {printf "%.3f", a / b}') (target <= 1.05); outcome $(verdict_field "$TMP/py-off.json" outcome) / $(verdict_field "$TMP/py-on.json" outcome)" | tee -a "$OUT/table.txt"
fi
echo "results: $OUT/table.txt $OUT/results.csv"
