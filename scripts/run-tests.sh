#!/usr/bin/env bash
# Runs every test: unit, samples, rules fixtures, fuzzing smoke, and the integration scripts that
# start real services (Slurm, PostgreSQL, Prometheus, Chromium) on loopback.
set -uo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/.."
export ATTRIBUTION_RULES_DIR="$PWD/rules"
ctest --test-dir "$BUILD" --output-on-failure --timeout 1200
