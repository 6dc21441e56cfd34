#!/usr/bin/env bash
# Builds the libFuzzer targets with clang-16 (ASan + UBSan) against the core sources and runs each
# for FUZZ_SECONDS (default 30). Exit non-zero on any crash. Usage: fuzz/run.sh [WORKDIR]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${1:-$ROOT/build/fuzz}
SECONDS_PER_TARGET=${FUZZ_SECONDS:-30}
CXX=${FUZZ_CXX:-clang++-16}
if ! command -v "$CXX" >/dev/null; then
  echo "fuzz: $CXX not found (apt-get install clang-16 libclang-rt-16-dev)" >&2
  exit 1
fi
mkdir -p "$WORK"
FLAGS=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
  -I"$ROOT/core/include" -I"$ROOT/core/src" -DATTRIBUTION_VERSION=\"fuzz\")
LIBS=($(pkg-config --cflags --libs libhs re2 libpcre2-8) -lyaml-cpp -lfmt -lcrypto)
CORE=("$ROOT"/core/src/*.cc)
# Compile the core once into objects shared by both targets.
objs=()
for src in "${CORE[@]}"; do
  obj="$WORK/$(basename "${src%.cc}").o"
  if [[ ! -f "$obj" || "$src" -nt "$obj" ]]; then
    "$CXX" "${FLAGS[@]/-fsanitize=fuzzer,address,undefined/-fsanitize=fuzzer-no-link,address,undefined}" \
      $(pkg-config --cflags libhs re2 libpcre2-8) -c "$src" -o "$obj"
  fi
  objs+=("$obj")
done
export ATTRIBUTION_RULES_DIR="$ROOT/rules"
status=0
# The fabric topology parser (blueprint/src/fabric, engine-free but for the codec's times).
FABRIC=("$ROOT"/blueprint/src/fabric/topology.cc "$ROOT"/blueprint/src/fabric/resolve.cc)
for target in scanner_fuzz parsers_fuzz fabric_fuzz; do
  extra=()
  [[ $target == fabric_fuzz ]] && extra=(-I"$ROOT/blueprint/src" "${FABRIC[@]}")
  "$CXX" "${FLAGS[@]}" "$ROOT/fuzz/$target.cc" "${extra[@]}" "${objs[@]}" "${LIBS[@]}" -o "$WORK/$target"
  mkdir -p "$WORK/corpus-$target"
  # Inputs that once crashed a target run first, as regressions.
  if [[ -d "$ROOT/fuzz/regressions/$target" ]]; then
    if ! "$WORK/$target" "$ROOT"/fuzz/regressions/$target/* > "$WORK/$target-regressions.log" 2>&1; then
      echo "fuzz: $target fails on a regression input; see $WORK/$target-regressions.log" >&2
      tail -20 "$WORK/$target-regressions.log" >&2
      status=1
      continue
    fi
  fi
  # Seed with sample logs / manifests so the fuzzer starts from real shapes.
  if [[ $target == fabric_fuzz ]]; then
    for f in "$ROOT"/tests/blueprint/fabric/data/*; do printf '\001' | cat - "$f" > "$WORK/corpus-$target/$(basename "$f")"; done
  elif [[ $target == scanner_fuzz ]]; then
    find "$ROOT/samples" -name '*.log' -size -64k | head -20 | xargs -I{} cp {} "$WORK/corpus-$target/" 2>/dev/null || true
  else
    for f in "$ROOT"/samples/*/workload.yaml; do printf '\001' | cat - "$f" > "$WORK/corpus-$target/$(basename "$(dirname "$f")").yaml"; done
  fi
  echo "fuzz: running $target for ${SECONDS_PER_TARGET}s"
  if ! "$WORK/$target" -seed=1 -max_total_time="$SECONDS_PER_TARGET" -max_len=65536 -timeout=10 -rss_limit_mb=4096 \
      -artifact_prefix="$WORK/$target-" "$WORK/corpus-$target" > "$WORK/$target.log" 2>&1; then
    echo "fuzz: $target FAILED; see $WORK/$target.log" >&2
    tail -40 "$WORK/$target.log" >&2
    status=1
  else
    grep -E "^#[0-9]+.*(DONE|pulse)" "$WORK/$target.log" | tail -1
  fi
done
exit $status
