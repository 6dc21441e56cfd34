#!/usr/bin/python3
"""Plots bench/run.sh results: cost against log size and against rank count.

  /usr/bin/python3 scripts/plot_performance.py [bench/out/results.csv] [docs/performance.png]

Needs python3-matplotlib (apt). Left: wall and CPU seconds against bundle size (the 64-rank
xid79 bundles), analyze vs rg. Right: wall seconds against rank count (the 1 GB xid79 bundles),
with the 16,384-rank all-timeout bundle marked.
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "bench/out/results.csv")
dst = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "docs/performance.png")
rows = list(csv.DictReader(open(src)))
for r in rows:
    r["bytes"] = int(r["bytes"])
    r["ranks"] = int(r["ranks"])
    r["wall_s"] = float(r["wall_s"])
    r["cpu_s"] = float(r["cpu_s"])

fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
styles = {"analyze-j1": ("C0", "o"), "analyze-j2": ("C1", "o"), "rg-j1": ("C2", "s"), "rg-j2": ("C3", "s")}

size_rows = [r for r in rows if r["ranks"] == 64 and "xid79" in r["bundle"]]
for tool, (color, marker) in styles.items():
    pts = sorted((r["bytes"] / 1e9, r["wall_s"], r["cpu_s"]) for r in size_rows if r["tool"] == tool)
    if not pts:
        continue
    a.plot([p[0] for p in pts], [p[1] for p in pts], color=color, marker=marker, label=tool + " wall")
    a.plot([p[0] for p in pts], [p[2] for p in pts], color=color, marker=marker, ls=":", label=tool + " cpu")
a.set_xscale("log")
a.set_yscale("log")
a.set_xlabel("bundle size (GB), 64 ranks")
a.set_ylabel("seconds (median)")
a.set_title("cost vs log size")
a.grid(True, which="both", alpha=0.3)
a.legend(fontsize=7)

rank_rows = [r for r in rows if r["bytes"] > 0.9e9 and r["bytes"] < 1.3e9 and "xid79" in r["bundle"]]
for tool in ("analyze-j2", "rg-j2"):
    color, marker = styles[tool]
    pts = sorted((r["ranks"], r["wall_s"], r["cpu_s"]) for r in rank_rows if r["tool"] == tool)
    if pts:
        b.plot([p[0] for p in pts], [p[1] for p in pts], color=color, marker=marker, label=tool + " wall (1 GB)")
        b.plot([p[0] for p in pts], [p[2] for p in pts], color=color, marker=marker, ls=":", label=tool + " cpu (1 GB)")
for r in rows:
    if "all-timeout" in r["bundle"] and r["tool"] == "analyze-j2":
        b.scatter([r["ranks"]], [r["wall_s"]], color="k", marker="x", zorder=5,
                  label="analyze-j2, %d ranks all time out (%s)" % (r["ranks"], r["bundle"].split("-")[0][1:]))
b.set_xscale("log", base=2)
b.set_yscale("log")
b.set_xlabel("ranks (one file per rank)")
b.set_ylabel("seconds (median)")
b.set_title("cost vs rank count")
b.grid(True, which="both", alpha=0.3)
b.legend(fontsize=7)
fig.tight_layout()
fig.savefig(dst, dpi=90)
print(dst)
