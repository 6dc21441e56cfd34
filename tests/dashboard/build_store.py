#!/usr/bin/env python3
"""Test fixture builder: fills a verdict store (docs/store.md) from the sample bundles.

    build_store.py BLUEPRINT_BINARY OUT.sqlite [--samples DIR] [--cache DIR] [--jobs N]
    build_store.py --synthetic 50000 OUT.sqlite --cache DIR   (fleet/paging load test)

It runs `attribution-blueprint analyze` on every samples/*/ bundle and inserts rows the way the
blueprint's store writer does (runs + run_nodes). It is a benchmark fixture only (the --synthetic
fleet/paging load store of docs/dashboard.md): the browser test (run.sh) and `make demo` use the
product's writer (`attribution-blueprint run --adapter static ... --db`).
"""
import argparse, concurrent.futures, datetime, json, os, random, sqlite3, subprocess, sys

SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY, cluster TEXT NOT NULL DEFAULT '', scheduler TEXT NOT NULL, job_id TEXT NOT NULL,
  attempt INTEGER NOT NULL DEFAULT 0, name TEXT, user_name TEXT, queue TEXT, state TEXT, terminal_state TEXT,
  start_time TEXT, end_time TEXT, end_ns INTEGER, outcome TEXT NOT NULL, domain TEXT NOT NULL,
  quality TEXT NOT NULL, root_symptom TEXT, root_node TEXT, affected_nodes TEXT NOT NULL DEFAULT '[]',
  verdict_json TEXT NOT NULL, rules_digest TEXT, analyzed_at TEXT NOT NULL,
  UNIQUE (cluster, scheduler, job_id, attempt));
CREATE INDEX IF NOT EXISTS runs_end ON runs (end_ns DESC, id DESC);
CREATE INDEX IF NOT EXISTS runs_outcome ON runs (outcome);
CREATE INDEX IF NOT EXISTS runs_domain ON runs (domain);
CREATE INDEX IF NOT EXISTS runs_root_node ON runs (root_node);
CREATE TABLE IF NOT EXISTS run_nodes (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, node TEXT NOT NULL,
  gpu TEXT NOT NULL DEFAULT '', role TEXT NOT NULL, PRIMARY KEY (run_id, node, gpu, role));
CREATE INDEX IF NOT EXISTS run_nodes_node ON run_nodes (node);
CREATE TABLE IF NOT EXISTS cursors (name TEXT PRIMARY KEY, value TEXT NOT NULL, updated_at TEXT NOT NULL);
"""


def ns_of(rfc3339):
    if not rfc3339:
        return None
    s = rfc3339.replace("Z", "+00:00")
    dt = datetime.datetime.fromisoformat(s)
    return int(dt.timestamp()) * 1_000_000_000 + dt.microsecond * 1000


def gpu_str(g):
    if g is None:
        return ""
    return g if isinstance(g, str) else json.dumps(g)


def run_nodes(v):
    seen, out = set(), []

    def add(node, gpu, role):
        if not node or (node, gpu, role) in seen:
            return
        seen.add((node, gpu, role))
        out.append((node, gpu, role))

    rc = v.get("root_cause") or {}
    if isinstance(rc, dict):
        add(rc.get("node"), gpu_str(rc.get("gpu")), "root_cause")
    for c in (v.get("quality") or {}).get("candidates") or []:
        if isinstance(c, dict):
            add(c.get("node"), gpu_str(c.get("gpu")), "candidate")
    for n in v.get("affected_nodes") or []:
        add(n, "", "affected")
    return out


def insert(db, v, raw, overrides=None):
    w = dict(v.get("workload") or {})
    if overrides:
        w.update(overrides)
    rc = v.get("root_cause") or {}
    q = v.get("quality") or {}
    row = dict(
        cluster=w.get("cluster") or "", scheduler=w.get("scheduler") or "static", job_id=str(w.get("id")),
        attempt=int(w.get("attempt") or 0), name=w.get("name"), user_name=w.get("user"), queue=w.get("queue"),
        state=v.get("scheduler_state"), terminal_state=v.get("terminal_state"), start_time=w.get("start"),
        end_time=w.get("end"), end_ns=ns_of(w.get("end")), outcome=v.get("outcome") or "unknown.no_evidence",
        domain=v.get("domain") or "unknown", quality=q.get("level") or "insufficient",
        root_symptom=rc.get("symptom") if isinstance(rc, dict) else None,
        root_node=rc.get("node") if isinstance(rc, dict) else None,
        affected_nodes=json.dumps(v.get("affected_nodes") or []), verdict_json=raw,
        rules_digest=(v.get("engine") or {}).get("rules_digest"),
        analyzed_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"))
    cols = ",".join(row)
    cur = db.execute(f"INSERT OR REPLACE INTO runs ({cols}) VALUES ({','.join('?' * len(row))})", list(row.values()))
    rid = cur.lastrowid
    db.executemany("INSERT OR IGNORE INTO run_nodes (run_id,node,gpu,role) VALUES (?,?,?,?)",
                   [(rid, n, g, r) for n, g, r in run_nodes(v)])
    return rid


def analyze(binary, bundle, cache):
    name = os.path.basename(bundle.rstrip("/"))
    cached = os.path.join(cache, name + ".json") if cache else None
    if cached and os.path.exists(cached) and os.path.getmtime(cached) > os.path.getmtime(binary):
        return name, open(cached).read()
    p = subprocess.run([binary, "analyze", bundle, "-j", "1"], capture_output=True, text=True)
    if not p.stdout.strip().startswith("{"):
        raise SystemExit(f"analyze {bundle} failed ({p.returncode}): {p.stderr[-500:]}")
    raw = p.stdout.strip()
    if cached:
        os.makedirs(cache, exist_ok=True)
        open(cached, "w").write(raw)
    return name, raw


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary", nargs="?")
    ap.add_argument("out")
    ap.add_argument("--samples", default=os.path.join(os.path.dirname(__file__), "..", "..", "samples"))
    ap.add_argument("--cache")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--synthetic", type=int, default=0, help="add N synthetic runs built from the sample verdicts")
    a = ap.parse_args()
    bundles = sorted(os.path.join(a.samples, d) for d in os.listdir(a.samples)
                     if not d.startswith("_") and os.path.exists(os.path.join(a.samples, d, "workload.yaml")))
    if a.binary:
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
            verdicts = list(ex.map(lambda b: analyze(a.binary, b, a.cache), bundles))
    else:
        verdicts = [(os.path.basename(b), open(os.path.join(a.cache, os.path.basename(b) + ".json")).read()) for b in bundles]
    if os.path.exists(a.out):
        os.remove(a.out)
    db = sqlite3.connect(a.out)
    db.executescript(SCHEMA)
    db.execute("INSERT INTO schema_migrations VALUES (1, ?)", (datetime.datetime.utcnow().isoformat() + "Z",))
    for name, raw in verdicts:
        insert(db, json.loads(raw), raw)
    if a.synthetic:
        synthesize(db, verdicts, a.synthetic)
    db.commit()
    n = db.execute("SELECT count(*) FROM runs").fetchone()[0]
    print(f"{a.out}: {n} runs", file=sys.stderr)


def synthesize(db, verdicts, count):
    """Copies sample verdicts under new job ids, times and nodes (a fleet of 2000 nodes, a few bad ones)."""
    rnd = random.Random(5)
    parsed = [json.loads(raw) for _, raw in verdicts]
    base = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    fleet = [f"syn-n{i:04d}" for i in range(2000)]
    bad = fleet[:20]
    for i in range(count):
        v = json.loads(json.dumps(rnd.choice(parsed)))
        w = v.setdefault("workload", {})
        orig = list(w.get("nodes") or [])
        k = max(1, len(orig))
        nodes = rnd.sample(fleet, k)
        if v.get("root_cause") and rnd.random() < 0.3:
            nodes[0] = rnd.choice(bad)
        mapping = dict(zip(orig, nodes))
        raw = json.dumps(v)
        for o, n in mapping.items():
            raw = raw.replace(f'"{o}"', f'"{n}"')
        v = json.loads(raw)
        end = base + datetime.timedelta(seconds=rnd.randrange(0, 330 * 86400))
        w = v["workload"]
        w.update(id=str(2_000_000 + i), cluster=rnd.choice(["ash1", "ash2", "iad3"]),
                 end=end.isoformat().replace("+00:00", "Z"))
        insert(db, v, json.dumps(v))


if __name__ == "__main__":
    main()
