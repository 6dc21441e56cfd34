#!/usr/bin/python3
"""bench/fleet/report.py FLEET_JSONL DOC QUICK: the fleet-week table and sizing from the rows
bench/fleet/run.sh measured; prints it and, unless DOC is empty, writes it into DOC (the section
between the fleet-week markers; appended with its heading when missing)."""
import json, math, re, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
doc, quick = sys.argv[2], sys.argv[3]
head = rows[0]
by = {r.get("label"): r for r in rows[1:]}
typ, burst = by["typical"], by["burst"]
s1, s3 = by.get("service_1_replica"), by.get("service_3_replica")
week = 2_000_000
per_hour = week / 168
lines = []
w = lines.append
w(f"Measured {head['date']} on {head['cores']} cores (QUICK={quick}, watch --concurrency {head['concurrency']}); "
  "the load average (1/5/15 min) is recorded with each row: the machine is shared, so rows taken under load are "
  "pessimistic. Reproduce: `bench/fleet/run.sh` (or `QUICK=1 bench/fleet/run.sh`; `bench/run.sh` calls it).")
w("")
w("| measurement | jobs | MB/job | drain s | CPU s | jobs/s | per core-hour | peak RSS MB | backlog peak/bound | load before → after |")
w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
for r, what in ((typ, "typical job: 64 ranks, 100 MB (xid79), collect → attribute → store (SQLite)"),
                (burst, "burst: samples/ bundles, all ending within 10 min, released at once")):
    w(f"| {what} | {r['jobs']:,} | {r['mb_per_job']} | {r['drain_s']:.1f} | {r['cpu_s']:.1f} | {r['jobs_per_s']} | "
      f"{r['per_core_hour']:,} | {r['peak_rss_mb']} | {r['backlog_peak']}/{r['backlog_bound']} | {r['load_before']} → {r['load_after']} |")
w("")
if s1 and s3:
    w("| service (POST of 1,000 observations, wrk) | replicas | front | connections | requests/s | p50 ms | p99 ms | errors | load before → after |")
    w("|---|---:|---|---:|---:|---:|---:|---:|---|")
    for r in (s1, s3):
        errs = r["socket_errors"] + r["timeouts"] + sum(v for k, v in r["status"].items() if not k.startswith("2"))
        w(f"| {r['label']} | {r['replicas']} | {r['front']} | {r['connections']} | {r['req_per_s']} | {r['p50_ms']} | "
          f"{r['p99_ms']} | {errs} | {r['load_before']} → {r['load_after']} |")
    w("")
    w(f"All replicas share one PostgreSQL store (`--store postgres://...`) and run on the same {head['cores']} cores as "
      f"PostgreSQL, HAProxy and wrk, so 3 replicas here are not 3 machines' worth: that they took "
      f"{s3['req_per_s'] / s1['req_per_s']:.2f}x the requests of 1 (p50 {s3['p50_ms']} vs {s1['p50_ms']} ms) says one "
      "replica with default settings does not keep these cores busy on its own (why was not measured here), not "
      "that the cores grew; on a real deployment each replica has its own cores and the per-replica row is the "
      "one to size with.")
    w("")
# Sizing.
cores_avg = per_hour / typ["per_core_hour"]
burst_rate = 10_000 / 600  # jobs/s while a maintenance window ends 10,000 jobs in 10 min
small_core_rate = burst["per_core_hour"] / 3600  # small jobs per core-second
cores_burst_small = burst_rate / small_core_rate
drain_here = 10_000 / burst["jobs_per_s"]
w("**What 2 million workloads a week needs** (computed by the script from the rows above):")
w("")
w(f"- 2,000,000 / 168 h = {per_hour:,.0f} workloads an hour on average ({per_hour / 3600:.1f}/s).")
w(f"- Blueprint (watch) cores, if every workload were the typical 64-rank 100 MB job: {per_hour:,.0f} / "
  f"{typ['per_core_hour']:,} per core-hour = **{cores_avg:.1f} cores** busy on average; "
  f"provision {math.ceil(cores_avg * 2)} cores (2x headroom) across the watch processes.")
scaled = "" if burst["jobs"] == 10_000 else f" (scaled from the {burst['jobs']:,} measured)"
w(f"- A 10,000-job maintenance-window burst of small jobs (the samples' shape) drained here in "
  f"{burst['drain_s'] * 10_000 / burst['jobs']:.0f} s{scaled} at {burst['jobs_per_s']} jobs/s on {head['cores']} "
  f"shared cores; by CPU time it needs {burst['cpu_s'] * 10_000 / burst['jobs']:.0f} core-seconds, i.e. "
  f"{burst['cpu_s'] * 10_000 / burst['jobs'] / head['cores']:.0f} s on {head['cores']} idle cores; "
  f"keeping up while it is released (16.7 jobs/s) takes {cores_burst_small:.1f} cores; with fewer, the backlog "
  f"bound holds memory (peak RSS {burst['peak_rss_mb']} MB here) and the rest wait at the adapter. "
  f"If the burst were all typical 100 MB jobs: 10,000 / ({typ['per_core_hour']:,}/3600 per core-s) = "
  f"{10_000 / (typ['per_core_hour'] / 3600) / 3600:.1f} core-hours, i.e. {10_000 / (typ['per_core_hour'] / 3600) / 3600 / 2:.1f} h "
  f"to drain on 2 cores or {10_000 / (typ['per_core_hour'] / 3600) / 600:.0f} cores to drain within the 10 minutes.")
if s1 and s3:
    req_per_workload = 64 * 5000 / 1000  # a 64-rank job streamed as 1,000-observation batches (bench/service shape)
    need = per_hour / 3600 * req_per_workload
    w(f"- Service replicas, if every workload were also streamed to the service ({req_per_workload:.0f} batch requests "
      f"a workload, the bench/service 64 x 5,000-line shape): {need:,.0f} requests/s on average; one replica took "
      f"{s1['req_per_s']} requests/s here, so **{math.ceil(need / s1['req_per_s'])} replicas** of this size on average, "
      f"{math.ceil(need * 2 / s1['req_per_s'])} with 2x headroom (3 replicas is the floor for availability).")
text = "\n".join(lines) + "\n"
if doc:
    cur = open(doc).read()
    begin, end = "<!-- fleet-week:begin (bench/fleet/run.sh writes this section) -->", "<!-- fleet-week:end -->"
    block = f"{begin}\n{text}{end}"
    if begin in cur and end in cur:
        cur = cur[: cur.index(begin)] + block + cur[cur.index(end) + len(end):]
    else:
        cur = cur.rstrip("\n") + "\n\n## A fleet's week, simulated (issue #13 §3)\n\n" + block + "\n"
    open(doc, "w").write(cur)
print(text)
