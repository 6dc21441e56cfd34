#!/usr/bin/env python3
"""LSF for attribution-blueprint's exec adapter: ended jobs from `bjobs`, as JSON lines.

attribution-blueprint runs this with (docs/connectors.md, "exec"):
  ATTRIBUTION_QUERY=job    ATTRIBUTION_QUERY_JOB=<job id>             one job (run --job ID)
  ATTRIBUTION_QUERY=range  ATTRIBUTION_QUERY_FROM_S / _TO_S (Unix s)   jobs that ended then
and reads one execution context per line (api/exec-connector.schema.json, $defs/adapter_line).

It asks LSF for its JSON customised output (LSF 10.1+):
  bjobs -a -json -hms -o "jobid jobindex job_name user queue stat exit_code exit_reason
                         exec_host start_time finish_time output_file error_file" [JOBID]
with LSB_DISPLAY_YEAR=Y so times carry their year ("Oct 13 16:00:00 2026"). Times are local to
the LSF master; LSF_TZ_OFFSET_S (seconds east of UTC, default 0) converts them.

Mapping: JOBID[JOBINDEX] -> id; EXEC_HOST "4*gpu-c01:4*gpu-c02" -> nodes (slot counts dropped,
order kept); STAT DONE -> COMPLETED, EXIT -> FAILED (TERM_RUNLIMIT -> TIMEOUT, TERM_OWNER /
TERM_ADMIN -> CANCELLED, TERM_MEMLIMIT -> OUT_OF_MEMORY, TERM_PREEMPT -> PREEMPTED); the job's
OUTPUT_FILE/ERROR_FILE are returned as evidence files of kind applog on the first host.
Jobs still pending or running are left out. Exit 1 with a message on stderr when bjobs fails.
Standard library only.
"""
import datetime
import json
import os
import re
import subprocess
import sys

FIELDS = ("jobid jobindex job_name user queue stat exit_code exit_reason exec_host "
          "start_time finish_time output_file error_file")
MONTHS = {m: i + 1 for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split())}
TERM_STATES = {
    "TERM_RUNLIMIT": "TIMEOUT", "TERM_OWNER": "CANCELLED", "TERM_ADMIN": "CANCELLED",
    "TERM_FORCE_OWNER": "CANCELLED", "TERM_FORCE_ADMIN": "CANCELLED", "TERM_MEMLIMIT": "OUT_OF_MEMORY",
    "TERM_PREEMPT": "PREEMPTED", "TERM_REQUEUE_OWNER": "CANCELLED",
}


def lsf_time(text, offset_s):
    """'Oct 13 18:37:53 2026' (optionally with a trailing E/L/X flag) -> RFC 3339 UTC, or None."""
    m = re.match(r"^\s*([A-Z][a-z]{2})\s+(\d{1,2})\s+(\d{1,2}):(\d{2})(?::(\d{2}))?\s+(\d{4})(?:\s+[ELX])?\s*$", text or "")
    if not m or m.group(1) not in MONTHS:
        return None
    local = datetime.datetime(int(m.group(6)), MONTHS[m.group(1)], int(m.group(2)), int(m.group(3)),
                              int(m.group(4)), int(m.group(5) or 0))
    utc = local - datetime.timedelta(seconds=offset_s)
    return utc.strftime("%Y-%m-%dT%H:%M:%SZ")


def exec_hosts(text):
    nodes = []
    for part in re.split(r"[:\s]+", text or ""):
        host = part.split("*", 1)[-1]
        if host and host != "-" and host not in nodes:
            nodes.append(host)
    return nodes


def context(rec, cluster, offset_s):
    stat = rec.get("STAT", "")
    if stat not in ("DONE", "EXIT"):
        return None  # pending, running or suspended: not ended
    job_id = rec["JOBID"]
    index = rec.get("JOBINDEX", "0")
    if index not in ("", "0", "-"):
        job_id = f"{job_id}[{index}]"
    nodes = exec_hosts(rec.get("EXEC_HOST", ""))
    reason = rec.get("EXIT_REASON", "") or ""
    terminal = "COMPLETED" if stat == "DONE" else "FAILED"
    for term, state in TERM_STATES.items():
        if term in reason:
            terminal = state
    ctx = {
        "id": job_id,
        "scheduler": "lsf",
        "name": rec.get("JOB_NAME", ""),
        "user": rec.get("USER", ""),
        "queue": rec.get("QUEUE", ""),
        "nodes": nodes,
        "state": stat,
        "terminal_state": terminal,
        "exit_code": rec.get("EXIT_CODE", "") or ("0" if stat == "DONE" else ""),
        "reason": reason,
    }
    if cluster:
        ctx["cluster"] = cluster
    for key, field in (("start", "START_TIME"), ("end", "FINISH_TIME")):
        t = lsf_time(rec.get(field, ""), offset_s)
        if t:
            ctx[key] = t
    files = []
    for field in ("OUTPUT_FILE", "ERROR_FILE"):
        path = rec.get(field, "")
        if path and path != "-" and os.path.isfile(path) and path not in [f["path"] for f in files]:
            entry = {"path": path, "kind": "applog", "note": f"LSF {field.lower()}"}
            if nodes:
                entry["node"] = nodes[0]
            files.append(entry)
    if files:
        ctx["evidence_files"] = files
    return ctx


def main():
    query = os.environ.get("ATTRIBUTION_QUERY", "job")
    cluster = os.environ.get("LSF_CLUSTER_NAME", "")
    offset_s = int(os.environ.get("LSF_TZ_OFFSET_S", "0"))
    argv = ["bjobs", "-a", "-json", "-hms", "-o", FIELDS]
    if query == "job":
        argv.append(os.environ["ATTRIBUTION_QUERY_JOB"])
    env = dict(os.environ, LSB_DISPLAY_YEAR="Y")
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    except FileNotFoundError:
        sys.exit("bjobs not found on PATH (is the LSF environment sourced: profile.lsf?)")
    try:
        data = json.loads(done.stdout)  # an unknown job id still prints JSON (and exits 255)
    except ValueError:
        data = None
    if data is None or (done.returncode != 0 and not data.get("RECORDS")):
        sys.stderr.write(done.stderr)
        sys.exit(f"bjobs exited {done.returncode}")
    failed_lookup = False
    lo = int(os.environ.get("ATTRIBUTION_QUERY_FROM_S", "0") or 0)
    hi = int(os.environ.get("ATTRIBUTION_QUERY_TO_S", "0") or 0)
    for rec in data.get("RECORDS", []):
        if "ERROR" in rec:  # bjobs reports an unknown job id in its record: "Job <42> is not found"
            sys.stderr.write(f"bjobs: {rec['ERROR']}\n")
            failed_lookup = True
            continue
        ctx = context(rec, cluster, offset_s)
        if ctx is None:
            continue
        if query == "range" and "end" in ctx:
            end = datetime.datetime.strptime(ctx["end"], "%Y-%m-%dT%H:%M:%SZ").replace(
                tzinfo=datetime.timezone.utc).timestamp()
            if not lo <= end <= hi:
                continue
        print(json.dumps(ctx, sort_keys=True))
    if failed_lookup:
        sys.exit(1)


if __name__ == "__main__":
    main()
