#!/usr/bin/env python3
"""Latency of the dashboard API on a large store (docs/dashboard.md "Performance").

    build_store.py --cache VERDICT_CACHE --synthetic 50000 big.sqlite
    attribution-blueprint web --db big.sqlite --listen 127.0.0.1:8099 &
    bench_api.py http://127.0.0.1:8099
"""
import json, statistics, sys, time, urllib.parse, urllib.request

base = sys.argv[1].rstrip("/")


def get(path, **params):
    q = urllib.parse.urlencode({k: v for k, v in params.items() if v not in (None, "")})
    t0 = time.perf_counter()
    with urllib.request.urlopen(f"{base}/api/{path}" + ("?" + q if q else "")) as r:
        body = r.read()
    return (time.perf_counter() - t0) * 1000, json.loads(body)


def bench(name, path, reps=7, **params):
    times = [get(path, **params)[0] for _ in range(reps)]
    print(f"| {name} | {statistics.median(times):.1f} | {max(times):.1f} |")


facets = get("facets")[1]
print(f"store: {facets['runs']} runs\n")
print("| request | median ms | max ms |\n|---|---|---|")
bench("runs, first page (50)", "runs")
# Deep page: walk 200 pages (10,000 runs) with the cursor, then time the next page.
cursor = None
for _ in range(200):
    cursor = get("runs", cursor=cursor)[1]["next_cursor"]
bench("runs, page 201 (keyset cursor)", "runs", cursor=cursor)
bench("runs, domain=storage", "runs", domain="storage")
bench("runs, quality=ambiguous (rare)", "runs", quality="ambiguous")
bench("runs, outcome=gpu.fell_off_bus", "runs", outcome="gpu.fell_off_bus")
fleet = get("fleet")[1]
node = fleet["nodes"][0]["node"]
bench(f"runs, node={node}", "runs", node=node)
bench("runs, job id search q=20012", "runs", q="20012")
bench("runs, window 2026-06-01..2026-07-01", "runs", **{"from": "2026-06-01T00:00:00Z", "to": "2026-07-01T00:00:00Z"})
bench("runs, domain=gpu + quality=definitive + 30-day window", "runs", domain="gpu", quality="definitive",
      **{"from": "2026-06-01T00:00:00Z", "to": "2026-07-01T00:00:00Z"})
bench("counts by domain, no filter", "runs/counts")
bench("counts by domain, 30-day window", "runs/counts", **{"from": "2026-06-01T00:00:00Z", "to": "2026-07-01T00:00:00Z"})
bench("facets", "facets")
run_id = get("runs")[1]["runs"][0]["id"]
bench("verdict (one run)", f"runs/{run_id}")
bench("fleet, all time", "fleet", reps=5)
bench("fleet, 30-day window", "fleet", reps=5, **{"from": "2026-06-01T00:00:00Z", "to": "2026-07-01T00:00:00Z"})
print(f"\nfleet top node: {node} ({fleet['nodes'][0]['runs']} failed runs)")
