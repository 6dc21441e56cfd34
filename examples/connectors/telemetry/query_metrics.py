#!/usr/bin/env python3
"""A telemetry backend for attribution-blueprint's exec collector: GPU metrics from a hosted
metrics API (Datadog's v1 timeseries query API shape), as JSON lines of observations.

attribution-blueprint runs this once per ended job with (docs/connectors.md, "exec"):
  ATTRIBUTION_JOB_NODES=gpu-c01,gpu-c02,...   the job's nodes
  ATTRIBUTION_JOB_WINDOW_START_S / _END_S     the job's time window widened by margin_s (Unix s)
and reads one observation per line (api/exec-connector.schema.json, $defs/observation).

Configuration (environment, set in the collector's `env:`):
  METRICS_API_URL      e.g. https://api.datadoghq.eu (required)
  METRICS_API_KEY, METRICS_APP_KEY    sent as DD-API-KEY / DD-APPLICATION-KEY
  METRICS              comma-separated metric names (default dcgm.xid_errors)

For each node and metric: GET /api/v1/query?from&to&query=avg:<metric>{host:<node>} by {gpu,pci_bus_id}.
Each series becomes node_metrics observations named as the rules read them (dcgm.xid_errors ->
DCGM_FI_DEV_XID_ERRORS) with labels Hostname, gpu, pci_bus_id; like the prometheus collector it
keeps the first sample of a series and each change of value. An HTTP or connection error goes to
stderr and the script exits 2 after printing what it did get (the connector report says so).
Standard library only.
"""
import datetime
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request


def rules_name(metric):
    if metric.startswith("dcgm."):
        return "DCGM_FI_DEV_" + metric[len("dcgm."):].upper()
    return metric


def query(base, params, headers):
    url = base.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode(params)
    req = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.load(resp)


def main():
    base = os.environ.get("METRICS_API_URL")
    if not base:
        sys.exit("METRICS_API_URL is not set (the collector's env:)")
    headers = {"DD-API-KEY": os.environ.get("METRICS_API_KEY", ""),
               "DD-APPLICATION-KEY": os.environ.get("METRICS_APP_KEY", ""), "Accept": "application/json"}
    nodes = [n for n in os.environ.get("ATTRIBUTION_JOB_NODES", "").split(",") if n]
    start = os.environ.get("ATTRIBUTION_JOB_WINDOW_START_S") or os.environ.get("ATTRIBUTION_JOB_START_S")
    end = os.environ.get("ATTRIBUTION_JOB_WINDOW_END_S") or os.environ.get("ATTRIBUTION_JOB_END_S")
    if not nodes or not start or not end:
        sys.exit("the job has no nodes or no time window: nothing to query")
    metrics = [m for m in os.environ.get("METRICS", "dcgm.xid_errors").split(",") if m]
    failures = 0
    for node in nodes:
        for metric in metrics:
            q = f"avg:{metric}{{host:{node}}} by {{gpu,pci_bus_id}}"
            try:
                doc = query(base, {"from": start, "to": end, "query": q}, headers)
            except urllib.error.HTTPError as e:
                body = e.read().decode(errors="replace")[:300]
                sys.stderr.write(f"{q}: HTTP {e.code}: {body}\n")
                failures += 1
                continue
            except (urllib.error.URLError, OSError) as e:
                sys.stderr.write(f"{q}: {getattr(e, 'reason', e)}\n")
                failures += 1
                continue
            if doc.get("status") != "ok":
                sys.stderr.write(f"{q}: {doc.get('error', 'status ' + str(doc.get('status')))}\n")
                failures += 1
                continue
            for series in doc.get("series", []):
                tags = dict(t.split(":", 1) for t in series.get("tag_set", []) if ":" in t)
                labels = {"Hostname": node}
                for tag in ("gpu", "pci_bus_id"):
                    if tag in tags:
                        labels[tag] = tags[tag]
                last = None
                for ms, value in series.get("pointlist", []):
                    if value is None or value == last:
                        continue
                    last = value
                    t = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc)
                    print(json.dumps({
                        "kind": "node_metrics", "node": node,
                        "observed_at": t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z",
                        "metric": {"name": rules_name(metric), "labels": labels, "value": value},
                        "source": {"source": f"metrics-api:{series.get('expression', q)}", "line": 0},
                    }, sort_keys=True))
    if failures:
        sys.exit(2)


if __name__ == "__main__":
    main()
