#!/usr/bin/env bash
# Lints api/openapi.yaml with the npm OpenAPI linter @redocly/cli (recommended ruleset, warnings
# are failures). node_modules lives outside the repository (default /tmp/attribution-npm, override
# with ATTRIBUTION_NPM_DIR). Exits 77 (skipped) only when npm or the registry is unavailable.
# usage: service_openapi_lint.sh SOURCE_DIR
set -euo pipefail
SRC=$(realpath "$1")
NPM_DIR=${ATTRIBUTION_NPM_DIR:-/tmp/attribution-npm}
REDOCLY_VERSION=${REDOCLY_VERSION:-2.77.0}
command -v npm >/dev/null || { echo "npm missing: skipped"; exit 77; }
if [[ ! -x "$NPM_DIR/node_modules/.bin/redocly" ]]; then
  mkdir -p "$NPM_DIR"
  if ! npm install --prefix "$NPM_DIR" --no-audit --no-fund --loglevel=error "@redocly/cli@$REDOCLY_VERSION" > "$NPM_DIR/install.log" 2>&1; then
    tail -20 "$NPM_DIR/install.log"
    echo "npm install @redocly/cli failed: skipped"
    exit 77
  fi
fi
cd "$SRC"
"$NPM_DIR/node_modules/.bin/redocly" lint --format=stylish --max-problems=200 \
  --extends=recommended-strict api/openapi.yaml
echo "PASS service_openapi_lint"
