#!/usr/bin/python3
"""A loopback stand-in for a hosted metrics API (the shape of Datadog's v1 timeseries query API;
no such service is installable or reachable here). Serves series loaded from a Prometheus text
exposition file (with millisecond timestamps), renamed as the Datadog DCGM integration names them:
DCGM_FI_DEV_XID_ERRORS -> dcgm.xid_errors, tags host (from Hostname), gpu, gpu_uuid (UUID),
pci_bus_id, device.

  GET /api/v1/query?from=<unix s>&to=<unix s>&query=<aggr>:<metric>{<scope>} [by {<tag>,...}]
      headers DD-API-KEY and DD-APPLICATION-KEY (403 {"errors": ["Forbidden"]} without them)
      scope: * or tag:value[,tag:value...] (all must match)
      -> {"status":"ok","res_type":"time_series","series":[{"metric","scope","tag_set","pointlist":
          [[ms, value], ...],"aggr","expression","start","end","interval","length",...}], ...}
      a malformed query: 400 {"status":"error","error":"Error parsing query: ..."}
  GET /api/v1/validate -> {"valid": true}

usage: fake_metrics_api.py PROM_FILE PORT_FILE [API_KEY]   (binds 127.0.0.1, port 0)
"""
import http.server
import json
import re
import sys
import urllib.parse

prom_file, port_file = sys.argv[1], sys.argv[2]
api_key = sys.argv[3] if len(sys.argv) > 3 else "test-api-key"
TAG_OF = {"Hostname": "host", "gpu": "gpu", "UUID": "gpu_uuid", "pci_bus_id": "pci_bus_id", "device": "device"}

points = []  # (metric, tags dict, ms, value)
for line in open(prom_file):
    m = re.match(r'^([A-Za-z_:][A-Za-z0-9_:]*)\{(.*)\}\s+(\S+)\s+(\d+)\s*$', line)
    if not m:
        continue
    labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
    name = m.group(1)
    metric = "dcgm." + name[len("DCGM_FI_DEV_"):].lower() if name.startswith("DCGM_FI_DEV_") else name
    tags = {TAG_OF[k]: v for k, v in labels.items() if k in TAG_OF}
    points.append((metric, tags, int(m.group(4)), float(m.group(3))))

QUERY = re.compile(r'^(avg|sum|min|max):([A-Za-z0-9_.]+)\{([^}]*)\}(?:\s*by\s*\{([^}]*)\})?$')


class Handler(http.server.BaseHTTPRequestHandler):
    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        if self.headers.get("DD-API-KEY") != api_key or not self.headers.get("DD-APPLICATION-KEY"):
            return self.reply(403, {"errors": ["Forbidden"]})
        if url.path == "/api/v1/validate":
            return self.reply(200, {"valid": True})
        if url.path != "/api/v1/query":
            return self.reply(404, {"errors": ["Not found"]})
        q = urllib.parse.parse_qs(url.query)
        try:
            start, end, query = int(q["from"][0]), int(q["to"][0]), q["query"][0]
        except (KeyError, ValueError):
            return self.reply(400, {"status": "error", "error": "Error parsing query: from, to and query are required"})
        m = QUERY.match(query.strip())
        if not m:
            return self.reply(400, {"status": "error", "error": f"Error parsing query: unable to parse {query}"})
        aggr, metric, scope, by = m.groups()
        want = {}
        if scope.strip() not in ("", "*"):
            for part in scope.split(","):
                k, _, v = part.strip().partition(":")
                want[k] = v
        group_tags = [t.strip() for t in (by or "").split(",") if t.strip()]
        groups = {}
        for name, tags, ms, value in points:
            if name != metric or not (start * 1000 <= ms <= end * 1000):
                continue
            if any(tags.get(k) != v for k, v in want.items()):
                continue
            key = tuple((t, tags.get(t, "N/A")) for t in group_tags)
            groups.setdefault(key, {}).setdefault(ms, []).append(value)
        series = []
        for key, by_time in sorted(groups.items()):
            pointlist = []
            for ms in sorted(by_time):
                vals = by_time[ms]
                v = {"avg": sum(vals) / len(vals), "sum": sum(vals), "min": min(vals), "max": max(vals)}[aggr]
                pointlist.append([float(ms), v])
            tag_set = [f"{t}:{v}" for t, v in key] + [f"{k}:{v}" for k, v in want.items()]
            scope_s = ",".join(sorted(tag_set)) or "*"
            series.append({"metric": metric, "display_name": metric, "aggr": aggr, "scope": scope_s,
                           "tag_set": sorted(tag_set), "expression": f"{aggr}:{metric}{{{scope_s}}}",
                           "pointlist": pointlist, "start": pointlist[0][0], "end": pointlist[-1][0],
                           "interval": 30, "length": len(pointlist), "unit": None, "attributes": {}})
        self.reply(200, {"status": "ok", "res_type": "time_series", "resp_version": 1, "query": query,
                         "from_date": start * 1000, "to_date": end * 1000, "series": series,
                         "values": [], "times": [], "message": "", "group_by": group_tags})


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
