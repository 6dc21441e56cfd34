#!/usr/bin/env bash
# The main job on its embedded defaults: every bundled sample analyzed by the embedded engine and
# written to a SQLite verdict store, then the command that opens the dashboard on it.
set -euo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/.."
BP="$BUILD/blueprint/attribution-blueprint"
DB="$BUILD/demo.sqlite"
export ATTRIBUTION_RULES_DIR="$PWD/rules"

"$BP" rules lint rules
echo
OUT="$BUILD/demo-verdicts"
mkdir -p "$OUT"
printf '%-36s %-26s %-12s %-13s %-17s %s\n' BUNDLE OUTCOME DOMAIN QUALITY CULPRIT JOB
rm -f "$DB" "$DB-wal" "$DB-shm"
bundles=()
for dir in samples/*/; do
  [[ -f "$dir/workload.yaml" ]] || continue
  name=$(basename "$dir")
  bundles+=(--bundle "${dir%/}")
  "$BP" analyze "${dir%/}" -o json > "$OUT/$name.json" || true
  python3 - "$name" "$OUT/$name.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[2]))
rc = v.get("root_cause") or {}
print(f"{sys.argv[1]:<36} {v['outcome']:<26} {v['domain']:<12} {v['quality']['level']:<13} {rc.get('node') or '-':<17} {v['workload']['id']}")
PY
done
echo
echo "Verdict JSON files: $OUT/<bundle>.json"
if "$BP" run --help >/dev/null 2>&1; then
  "$BP" run --adapter static "${bundles[@]}" --db "$DB" >/dev/null
  echo "Stored $(( ${#bundles[@]} / 2 )) verdicts in $DB"
  echo "Open the dashboard:  $BP web --db $DB --listen 127.0.0.1:8080   (then browse http://127.0.0.1:8080)"
fi
