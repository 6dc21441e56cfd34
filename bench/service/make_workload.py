#!/usr/bin/env python3
"""Observation payloads for attribution-service tests and benchmarks.

  make_workload.py bundle BUNDLE_DIR OUT_DIR
      OUT_DIR/context.json   {"context": ...} (ExecutionContext JSON, SPEC §3)
      OUT_DIR/obs.ndjson     one observation per bundle line (kind/node/rank/source/text)
      OUT_DIR/oneshot.json   {"context": ..., "observations": [...]} for POST /v2/attributions

  make_workload.py synthetic OUT_DIR [--ranks 64] [--lines 5000] [--batch 1000]
      A 64-rank job with a realistic mix: training chatter, an Xid 79 on one node, NCCL
      watchdog timeouts on every other rank, torchrun teardown. Writes context.json,
      batch-NNNNN.ndjson (--batch lines each) and obs.ndjson (everything).
"""
import argparse
import datetime as dt
import glob
import json
import os
import sys


def rfc3339(v):
    if isinstance(v, dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=dt.timezone.utc)
        return v.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(v, dt.date):
        return v.strftime("%Y-%m-%dT00:00:00Z")
    return str(v)


def context_from_manifest(w):
    ctx = {"id": str(w["id"])}
    for key in ("scheduler", "cluster", "step", "name", "user", "queue", "state", "terminal_state",
                "exit_code", "reason"):
        if key in w and w[key] is not None:
            ctx[key] = str(w[key])
    if "attempt" in w:
        ctx["attempt"] = int(w["attempt"])
    for key in ("start", "end"):
        if w.get(key) is not None:
            ctx[key] = rfc3339(w[key])
    if w.get("nodes"):
        ctx["nodes"] = [str(n) for n in w["nodes"]]
    if w.get("ranks"):
        ctx["ranks"] = {str(k): str(v) for k, v in w["ranks"].items()}
    if w.get("labels"):
        ctx["labels"] = {str(k): str(v) for k, v in w["labels"].items()}
    return ctx


def bundle(args):
    import yaml  # python3-yaml

    with open(os.path.join(args.bundle, "workload.yaml"), encoding="utf-8") as f:
        manifest = yaml.safe_load(f)
    ctx = context_from_manifest(manifest["workload"])
    observations = []
    for src in manifest.get("sources", []):
        for path in sorted(glob.glob(os.path.join(args.bundle, src["path"]))):
            rel = os.path.relpath(path, args.bundle)
            with open(path, "rb") as f:
                data = f.read()
            lines = data.split(b"\n")
            if lines and lines[-1] == b"":
                lines.pop()  # no observation for the empty string after a final newline
            for n, raw in enumerate(lines, start=1):
                o = {"kind": src.get("kind", "applog"), "source": {"source": rel, "line": n},
                     "text": raw.decode("utf-8", errors="replace").rstrip("\r")}
                if src.get("node"):
                    o["node"] = str(src["node"])
                if src.get("rank") is not None:
                    o["rank"] = int(src["rank"])
                observations.append(o)
    write_outputs(args.out, ctx, observations)


def write_outputs(out, ctx, observations):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "context.json"), "w", encoding="utf-8") as f:
        json.dump({"context": ctx}, f, separators=(",", ":"))
    with open(os.path.join(out, "obs.ndjson"), "w", encoding="utf-8") as f:
        for o in observations:
            f.write(json.dumps(o, separators=(",", ":"), ensure_ascii=False) + "\n")
    with open(os.path.join(out, "oneshot.json"), "w", encoding="utf-8") as f:
        json.dump({"context": ctx, "observations": observations}, f, separators=(",", ":"),
                  ensure_ascii=False)


def synthetic(args):
    nodes = [f"gpu-{i // 8:03d}" for i in range(args.ranks)]
    node_set = sorted(set(nodes))
    t0 = dt.datetime(2026, 3, 14, 8, 0, 0, tzinfo=dt.timezone.utc)
    ctx = {"id": "900001", "scheduler": "slurm", "cluster": "bench", "attempt": 0,
           "name": "bench-pretrain", "state": "FAILED", "exit_code": "1:0",
           "start": rfc3339(t0), "end": rfc3339(t0 + dt.timedelta(hours=4)),
           "nodes": node_set, "ranks": {str(r): nodes[r] for r in range(args.ranks)}}
    culprit = node_set[len(node_set) // 2]
    observations = []
    for r in range(args.ranks):
        for i in range(args.lines):
            t = t0 + dt.timedelta(seconds=i * 2, milliseconds=r)
            ts = t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
            if i == args.lines - 3 and nodes[r] != culprit:
                text = (f"[rank{r}]:[E ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
                        f"operation timeout: WorkNCCL(SeqNum=88231, OpType=ALLREDUCE, NumelIn=262144, "
                        f"NumelOut=262144, Timeout(ms)=600000) ran for 600041 milliseconds before timing out.")
            elif i == args.lines - 1:
                text = f"[rank{r}]: torch.distributed.elastic.multiprocessing.api: failed (exitcode: -6)"
            else:
                text = (f"{ts} [rank{r}] step {i} | loss {2.5 - i * 1e-4:.4f} | lr 3.0e-04 | "
                        f"tokens/s {41000 + (i * 7919 + r) % 900} | mem 61.2GiB")
            observations.append({"kind": "applog", "node": nodes[r], "rank": r,
                                 "observed_at": ts,
                                 "source": {"source": f"logs/rank{r}.log", "line": i + 1},
                                 "text": text})
    xt = (t0 + dt.timedelta(seconds=(args.lines - 300) * 2)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    observations.append({"kind": "syslog", "node": culprit, "observed_at": xt,
                         "source": {"source": f"kernel/dmesg-{culprit}.txt", "line": 1},
                         "text": "NVRM: Xid (PCI:0000:9b:00): 79, pid=0, GPU has fallen off the bus."})
    write_outputs(args.out, ctx, observations)
    for b in range(0, len(observations), args.batch):
        with open(os.path.join(args.out, f"batch-{b // args.batch:05d}.ndjson"), "w") as f:
            for o in observations[b:b + args.batch]:
                f.write(json.dumps(o, separators=(",", ":")) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bundle")
    b.add_argument("bundle")
    b.add_argument("out")
    s = sub.add_parser("synthetic")
    s.add_argument("out")
    s.add_argument("--ranks", type=int, default=64)
    s.add_argument("--lines", type=int, default=5000)
    s.add_argument("--batch", type=int, default=1000)
    args = p.parse_args()
    {"bundle": bundle, "synthetic": synthetic}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
