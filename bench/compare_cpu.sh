#!/usr/bin/env bash
# CPU seconds (user+sys) and peak RSS of two analyze builds and rg -j1, back to back on the same
# bundles, with a byte comparison of the two verdicts. For engine changes measured on a shared
# machine, where wall time says little: CPU time and the ratio to rg in the same run are what count.
# Each build uses its own compiled-rules cache, warmed before timing.
#   bench/compare_cpu.sh BEFORE_BIN AFTER_BIN BUNDLE_DIR...
# Environment: RULES (rules/), THREADS (1: analyze -j).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RULES=${RULES:-$ROOT/rules}
THREADS=${THREADS:-1}
PY=/usr/bin/python3
[[ $# -ge 3 ]] || { echo "usage: $0 BEFORE_BIN AFTER_BIN BUNDLE_DIR..." >&2; exit 2; }
before=$1 after=$2
shift 2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$after" rules patterns "$RULES" > "$TMP/patterns.re2"
"$PY" "$ROOT/bench/patterns.py" "$TMP/patterns.re2" "$TMP" 2> /dev/null
# Each build keeps its own compiled-rules cache, compiled once before timing: two builds with
# different cache formats sharing one would rewrite it on every run and time the compile.
mkdir -p "$TMP/cache-before" "$TMP/cache-after"
for tool in before after; do
  bin=$before; [[ $tool == after ]] && bin=$after
  XDG_CACHE_HOME="$TMP/cache-$tool" "$bin" analyze -j "$THREADS" --rules "$RULES" -o json "$1" > /dev/null 2>&1 || true
done
printf '%-34s %-7s %7s %7s %7s\n' bundle tool cpu_s rss_MB cpu/rg
for dir in "$@"; do
  cat "$dir"/logs/* "$dir"/kernel/* > /dev/null 2>&1 || true   # warm the page cache
  declare -A cpu=() mb=()
  for tool in before after rg; do
    case $tool in
      before) cmd=("$before" analyze -j "$THREADS" --rules "$RULES" -o json "$dir") ;;
      after) cmd=("$after" analyze -j "$THREADS" --rules "$RULES" -o json "$dir") ;;
      rg) cmd=(rg --no-config -uu -a -c -j1 -f "$TMP/rg.txt" "$dir/logs" "$dir/kernel" "$dir/sacct.txt") ;;
    esac
    XDG_CACHE_HOME="$TMP/cache-$tool" /usr/bin/time -f '%U %S %M' -o "$TMP/time" "${cmd[@]}" > "$TMP/$tool.out" 2> /dev/null || true
    read -r user sys rss < "$TMP/time"
    cpu[$tool]=$(awk -v u="$user" -v s="$sys" 'BEGIN {printf "%.2f", u + s}')
    mb[$tool]=$(awk -v k="$rss" 'BEGIN {printf "%.0f", k / 1024}')
  done
  for tool in before after rg; do
    printf '%-34s %-7s %7s %7s %7s\n' "$(basename "$dir")" "$tool" "${cpu[$tool]}" "${mb[$tool]}" \
      "$(awk -v a="${cpu[$tool]}" -v r="${cpu[rg]}" 'BEGIN {printf "%.2f", (r > 0 ? a / r : 0)}')"
  done
  if cmp -s "$TMP/before.out" "$TMP/after.out"; then
    echo "  verdict identical ($(wc -c < "$TMP/after.out") bytes)"
  else
    echo "  VERDICT DIFFERS"
  fi
done
