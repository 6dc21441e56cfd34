#!/usr/bin/python3
"""Synthesises N stored runs for the fleet-analysis cost measurement (bench/fabric/cost.sh).

    cost_rows.py --runs 1000000 --days 30 --sqlite STORE.sqlite
    cost_rows.py --runs 1000000 --days 30 --tsv DIR        # runs.tsv + run_fabric.tsv for PostgreSQL COPY

The rows are written straight into the store's tables (`runs`, `run_fabric`, docs/store.md and
docs/fabric.md §4), not produced by analysing bundles: analysing a million bundles would measure the
engine, not the fleet analysis. They have the shape the analysis reads: each run is a job on a
contiguous block of hosts of the full simulated fleet (gen_fleet.py's 1,152 hosts; sizes 1-128
hosts as in the simulation), spread evenly over `--days` before 2026-12-01; 25 % failed, 1.5 % of
runs are fabric failures whose `evidence` names a host HCA port (`mlx5_0`/`1`) or a peer IP, and
three components are made faulty (a host link, an uplink via ibqueryerrors-style switch ports, an
NVLink domain) so the analysis has findings to report. `verdict_json` is a small placeholder.
Deterministic (seed 1).
"""
import argparse
import json
import os
import random
import sqlite3
import sys

HOSTS = ["gpu-r%02dn%02d" % (r + 1, t + 1) for r in range(64) for t in range(18)]
SIZES = [(1, 22), (2, 14), (4, 16), (8, 16), (16, 12), (18, 8), (32, 6), (36, 3), (64, 2), (128, 1)]
END_NS = 1796083200 * 10**9  # 2026-12-01T00:00:00Z
OUTCOMES_FAILED = [("application.exception", "application"), ("application.cuda_oom", "application"), ("gpu.fell_off_bus", "gpu"),
                   ("node.host_oom", "node"), ("storage.filesystem", "storage"), ("scheduler.time_limit", "scheduler"),
                   ("scheduler.cancelled", "scheduler"), ("unknown.collective_hang", "unknown")]
USERS = ["u%02d" % i for i in range(40)]


def ip(i):
    return "10.42.%d.%d" % (i // 18, 10 + i % 18)


def rows(n, days, rnd):
    tot = sum(w for _, w in SIZES)
    span = days * 86400 * 10**9
    bad_host = 100            # gpu-r06n11: its link flaps
    bad_leaf_hosts = range(32 * 20, 32 * 21)   # ib-leaf21: one uplink is bad
    bad_rack = range(18 * 40, 18 * 41)         # nvl72-r41
    for i in range(n):
        x = rnd.uniform(0, tot)
        for k, w in SIZES:
            x -= w
            if x <= 0:
                break
        align = 18 if k in (18, 36) else min(k, 32)
        off = min(rnd.randrange(0, len(HOSTS) // align) * align, len(HOSTS) - k)
        idx = range(off, off + k)
        end_ns = END_NS - span + (span * i) // n
        user = rnd.choice(USERS)
        evidence = []
        fabric = 0
        failed = rnd.random() < 0.25
        outcome, domain = "none.succeeded", "none"
        if bad_host in idx and rnd.random() < 0.08:
            fabric, evidence = 1, [{"symptom": "ib.port_error", "node": HOSTS[bad_host], "role": "root_cause", "domain": "network",
                                    "location": {"hca": "mlx5_0", "hca_port": "1"}}]
        elif k > 1 and any(j in bad_leaf_hosts for j in idx) and rnd.random() < 0.05:
            h = next(j for j in idx if j in bad_leaf_hosts)
            fabric, evidence = 1, [{"symptom": "net.ibquery.switch_port_errors", "node": HOSTS[h], "role": "candidate", "domain": "network",
                                    "location": {"switch_guid": "0x%016x" % (0xfc6a1c0300b00000 + 20 * 0x100), "switch_port": "36",
                                                 "counter": "SymbolErrorCounter", "value": "1843"}}]
        elif sum(1 for j in idx if j in bad_rack) >= 2 and rnd.random() < 0.1:
            h = next(j for j in idx if j in bad_rack)
            fabric, evidence = 1, [{"symptom": "gpu.xid.149", "node": HOSTS[h], "role": "root_cause", "domain": "gpu",
                                    "location": {"nvlink": "4"}}]
        elif k > 1 and rnd.random() < 0.012:  # background: a peer's error naming another host of the job
            a, b = rnd.sample(list(idx), 2)
            fabric, evidence = 1, [{"symptom": "ib.completion_error.12", "node": HOSTS[a], "role": "root_cause", "domain": "network",
                                    "location": {"hca": "mlx5_0", "peer": ip(b)}}]
        if fabric:
            failed = True
            outcome, domain = ("gpu.nvlink", "gpu") if evidence[0]["symptom"].startswith("gpu.") else ("network.link_flap", "network")
        elif failed:
            outcome, domain = rnd.choice(OUTCOMES_FAILED)
        yield dict(id=i + 1, job_id=str(5000000 + i), user=user, end_ns=end_ns, hosts=" ".join(sorted(HOSTS[j] for j in idx)),
                   failed=int(failed), fabric=fabric, outcome=outcome, domain=domain, evidence=json.dumps(evidence, separators=(",", ":")),
                   root_node=evidence[0]["node"] if evidence else None)


def iso(ns):
    import datetime as dt
    return dt.datetime.fromtimestamp(ns / 1e9, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1000000)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--sqlite")
    ap.add_argument("--tsv")
    a = ap.parse_args()
    rnd = random.Random(1)
    if a.sqlite:
        db = sqlite3.connect(a.sqlite)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=OFF")
        cur = db.cursor()
        batch_r, batch_f = [], []

        def flush():
            cur.executemany("INSERT INTO runs (id, cluster, scheduler, job_id, attempt, user_name, state, terminal_state, end_time, end_ns,"
                            " outcome, domain, quality, root_node, affected_nodes, verdict_json, analyzed_at)"
                            " VALUES (?, 'sim', 'slurm', ?, 0, ?, ?, ?, ?, ?, ?, ?, 'probable', ?, '[]', '{}', '2026-12-01T00:00:00Z')", batch_r)
            cur.executemany("INSERT INTO run_fabric (run_id, end_ns, job_id, user_name, hosts, failed, fabric, outcome, evidence)"
                            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", batch_f)
            batch_r.clear()
            batch_f.clear()
        for r in rows(a.runs, a.days, rnd):
            st = "FAILED" if r["failed"] else "COMPLETED"
            batch_r.append((r["id"], r["job_id"], r["user"], st, st, iso(r["end_ns"]), r["end_ns"], r["outcome"], r["domain"], r["root_node"]))
            batch_f.append((r["id"], r["end_ns"], r["job_id"], r["user"], r["hosts"], r["failed"], r["fabric"], r["outcome"], r["evidence"]))
            if len(batch_r) >= 20000:
                flush()
        flush()
        db.commit()
        db.execute("ANALYZE")
        db.close()
    elif a.tsv:
        os.makedirs(a.tsv, exist_ok=True)
        with open(os.path.join(a.tsv, "runs.tsv"), "w") as fr, open(os.path.join(a.tsv, "run_fabric.tsv"), "w") as ff:
            for r in rows(a.runs, a.days, rnd):
                st = "FAILED" if r["failed"] else "COMPLETED"
                fr.write("\t".join([str(r["id"]), "sim", "slurm", r["job_id"], "0", r["user"], st, st, iso(r["end_ns"]), str(r["end_ns"]),
                                    r["outcome"], r["domain"], "probable", r["root_node"] or "\\N", "[]", "{}", "2026-12-01T00:00:00Z"]) + "\n")
                ff.write("\t".join([str(r["id"]), str(r["end_ns"]), r["job_id"], r["user"], r["hosts"], str(r["failed"]), str(r["fabric"]),
                                    r["outcome"], r["evidence"].replace("\\", "\\\\")]) + "\n")
    else:
        print("need --sqlite or --tsv", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
