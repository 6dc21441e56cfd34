#!/usr/bin/env bash
# Cost of `attribution-blueprint fleet fabric` on a store of RUNS (default 1,000,000) runs, SQLite and
# PostgreSQL (issue #12 §5). The rows are synthesised straight into the store's tables by
# cost_rows.py (see its header: shape of the simulated fleet, 25 % failed, ~1.5 % fabric failures,
# three faulty components); the store's schema and the topology (the full 1,152-host fleet) come from
# the product (`topology import`). Then the analysis is timed with /usr/bin/time (wall seconds, peak
# RSS) over a 7-day window and over the whole store (30 days: every row), REPEAT times each.
#
#   BIN=build/blueprint/attribution-blueprint bench/fabric/cost.sh
#   RUNS=200000 STORES=sqlite bench/fabric/cost.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
BIN=${BIN:-$root/build/blueprint/attribution-blueprint}
[[ -x $BIN ]] || { echo "error: BIN=$BIN is not executable" >&2; exit 2; }
runs=${RUNS:-1000000}
stores=${STORES:-sqlite postgres}
repeat=${REPEAT:-3}
out=${OUT:-/tmp/attribution-fabric-cost}
py=/usr/bin/python3
mkdir -p "$out"
$py "$here/gen_fleet.py" --out "$out/fleet" --profile full --topology-only

measure() {  # measure LABEL ARGS...
  local label=$1; shift
  for w in 7d 30d; do
    for i in $(seq "$repeat"); do
      /usr/bin/time -f '%e %M' -o "$out/time" "$BIN" fleet fabric "$@" --since "$w" --until 2026-12-01T00:00:00Z --no-store -o json >"$out/findings-$label-$w.json" 2>"$out/err" \
        || { cat "$out/err"; echo "error: fleet fabric failed" >&2; exit 1; }
      read -r secs kb <"$out/time"
      $py - "$out/findings-$label-$w.json" "$label" "$w" "$secs" "$kb" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
f = d.get("fleet", {})
print("%-9s window %-4s runs %8s  fabric failures %6s  findings %3d  %6.2f s  peak RSS %5d MB"
      % (sys.argv[2], sys.argv[3], f.get("runs"), f.get("fabric_failed"), len(d.get("findings", [])), float(sys.argv[4]), int(sys.argv[5]) // 1024))
EOF
    done
  done
}

if [[ " $stores " == *" sqlite "* ]]; then
  db="$out/cost.sqlite"
  rm -f "$db" "$db-wal" "$db-shm"
  "$BIN" topology import "$out/fleet/topology/ibnetdiscover.txt" "$out/fleet/topology/fabric.yaml" --valid-from 2026-10-01T00:00:00Z --db "$db" >/dev/null
  t0=$(date +%s)
  $py "$here/cost_rows.py" --runs "$runs" --sqlite "$db"
  echo "sqlite: $runs runs synthesised in $(( $(date +%s) - t0 )) s, store $(du -m "$db" | cut -f1) MB" >&2
  measure sqlite --db "$db"
fi

if [[ " $stores " == *" postgres "* ]]; then
  PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  [[ -x $PGBIN/initdb ]] || { echo "error: PostgreSQL not installed (apt-get install postgresql)" >&2; exit 2; }
  T=$(mktemp -d /tmp/fabric-cost-pg.XXXXXX); chmod 755 "$T"
  RUNAS=()
  if [ "$(id -u)" = 0 ]; then chown postgres "$T"; RUNAS=(runuser -u postgres --); fi
  trap '"${RUNAS[@]}" "$PGBIN/pg_ctl" -D "$T/data" -m fast stop >/dev/null 2>&1 || true; rm -rf "$T"' EXIT
  "${RUNAS[@]}" "$PGBIN/initdb" -D "$T/data" -U postgres --auth=trust >"$out/initdb.log" 2>&1
  "${RUNAS[@]}" "$PGBIN/pg_ctl" -D "$T/data" -l "$T/pg.log" -w -o "-k $T -c listen_addresses='' -c shared_buffers=256MB" start >/dev/null
  psql -h "$T" -U postgres -qc "CREATE DATABASE attribution" postgres
  DSN="host=$T user=postgres dbname=attribution"
  "$BIN" topology import "$out/fleet/topology/ibnetdiscover.txt" "$out/fleet/topology/fabric.yaml" --valid-from 2026-10-01T00:00:00Z --postgres "$DSN" >/dev/null
  t0=$(date +%s)
  $py "$here/cost_rows.py" --runs "$runs" --tsv "$out/tsv"
  chmod -R a+r "$out/tsv"
  psql -h "$T" -U postgres -d attribution -q <<EOF
\copy runs (id, cluster, scheduler, job_id, attempt, user_name, state, terminal_state, end_time, end_ns, outcome, domain, quality, root_node, affected_nodes, verdict_json, analyzed_at) FROM '$out/tsv/runs.tsv'
\copy run_fabric (run_id, end_ns, job_id, user_name, hosts, failed, fabric, outcome, evidence) FROM '$out/tsv/run_fabric.tsv'
SELECT setval(pg_get_serial_sequence('runs', 'id'), (SELECT max(id) FROM runs));
ANALYZE;
EOF
  echo "postgres: $runs runs synthesised and loaded in $(( $(date +%s) - t0 )) s, database $(psql -h "$T" -U postgres -d attribution -Atc "SELECT pg_database_size('attribution') / 1048576") MB" >&2
  measure postgres --postgres "$DSN"
fi
