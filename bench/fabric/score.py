#!/usr/bin/python3
"""Scores `attribution-blueprint fleet fabric -o json` against the simulated fleet's truth.json.

    score.py TRUTH.json FINDINGS.json [--runs RUNS.jsonl]

A finding is *true* when the component it names (`component`) is an injected faulty component
(component ids as docs/fabric.md §1.3 spells them). Everything else it names is a false finding,
classified: `related` (a component of, or containing, an injected one: e.g. the leaf of a faulty host
link, a host link under the failing switch), `one-off` (the link of a background one-time flap),
`marginal` (a link with a harmless trickle of symbol errors), `unrelated`. A finding that names a
wrong component but lists the injected one in `ambiguous_with` is false (it is reported as an
ambiguous hit, with the size of the group).

precision = true findings / findings; recall = injected components named / injected components.
The last line of the output is `precision P recall R`.
"""
import json
import sys


def ends(component):
    if not component.startswith("link:"):
        return []
    return component[5:].split("~")


def switch_of_end(end):
    parts = end.split("/")
    return parts[0] if len(parts) == 2 else None


def host_of_end(end):
    parts = end.split("/")
    return parts[0] if len(parts) == 3 else None


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    docs = []
    for path in sys.argv[1:3]:
        try:
            with open(path) as fh:
                docs.append(json.load(fh))
        except (OSError, ValueError) as e:
            print("error: %s: not a readable JSON document: %s" % (path, e), file=sys.stderr)
            return 1
    truth, doc = docs
    findings = [f for f in doc.get("findings", []) if f.get("status", "open") == "open"]
    injected = {t["component"]: t for t in truth["injected"]}
    oneoff = {b["component"] for b in truth.get("background", []) if b.get("component")}
    marginal = set(truth.get("marginal_links", []))
    # what "related" means for each injected component
    rack_hosts = {}
    for t in truth["injected"]:
        c = t["component"]
        if c.startswith("nvlink_domain:"):
            rack_hosts[c] = set(t.get("hosts", []))

    def related(component):
        for c in injected:
            if c.startswith("switch:"):
                sw = c[7:]
                if any(switch_of_end(e) == sw for e in ends(component)):
                    return c
            if c.startswith("link:"):
                for e in ends(c):
                    if switch_of_end(e) and component == "switch:" + switch_of_end(e):
                        return c
            if c.startswith("nvlink_domain:"):
                if any(host_of_end(e) in rack_hosts.get(c, ()) for e in ends(component)):
                    return c
        return None

    tp, false = [], []
    hit = {}
    for f in findings:
        c = f["component"]
        if c in injected:
            tp.append(f)
            hit.setdefault(c, f)
        else:
            amb = [x for x in f.get("ambiguous_with", []) if x in injected]
            if amb:
                kind = "ambiguous (names %s, lists the injected %s among %d)" % (c, amb[0], len(f.get("ambiguous_with", [])) + 1)
            elif related(c):
                kind = "related to injected %s" % related(c)
            elif c in oneoff:
                kind = "one-off background flap"
            elif c in marginal:
                kind = "marginal link (harmless symbol errors)"
            else:
                kind = "unrelated"
            false.append((f, kind))

    fleet = doc.get("fleet", {})
    print("fleet: %s runs, %s failed, %s fabric failures (base rate %s), %s components tested; window %s .. %s"
          % (fleet.get("runs"), fleet.get("failed"), fleet.get("fabric_failed"), fleet.get("base_rate"),
             fleet.get("components_tested"), doc.get("window", {}).get("from"), doc.get("window", {}).get("to")))
    n = truth["noise"]
    print("simulated: %d hosts, %d leaves, %d spines, %d NVLink domains, %d jobs; background failures %d (%.1f %% of jobs: %s); "
          "of them with fabric-looking evidence (peers' resets/completion errors, one-off flaps) %d; injected-fault failures %d"
          % (truth["hosts"], truth["leaves"], truth["spines"], truth["nvlink_domains"], truth["jobs"], n["background_failed_jobs"],
             100 * n["background_failure_rate"], ", ".join("%s %d" % kv for kv in sorted(n["by_domain"].items())),
             n["fabric_looking_background"], n["injected_failed_jobs"]))
    print()
    print("injected faults:")
    for t in truth["injected"]:
        f = hit.get(t["component"])
        if f:
            status = "FOUND    %s confidence %.6f failed %d / crossing %d runs, %d hosts%s" % (
                f["id"], f.get("confidence", 0), f.get("failed_runs", 0), f.get("crossing_runs", 0), f.get("hosts_total", 0),
                (", ambiguous with %d others" % len(f["ambiguous_with"])) if f.get("ambiguous_with") else "")
        else:
            amb = [ff for ff, kind in false if t["component"] in ff.get("ambiguous_with", [])]
            status = "MISSED" + (" (only as ambiguous with %s)" % amb[0]["component"] if amb else "")
        print("  %s %-34s %-52s %d jobs  %s" % (t["id"], t["kind"], t["component"], len(t["jobs"]), status))
    print()
    print("false findings (%d):" % len(false))
    for f, kind in false:
        print("  %s %-52s confidence %.6f failed %d / crossing %d  [%s]" % (f["id"], f["component"], f.get("confidence", 0),
                                                                           f.get("failed_runs", 0), f.get("crossing_runs", 0), kind))
    precision = len(tp) / len(findings) if findings else 0.0
    recall = len(hit) / len(injected) if injected else 0.0
    print()
    print("findings %d: true %d, false %d; injected %d: named %d" % (len(findings), len(tp), len(false), len(injected), len(hit)))
    print("precision %.3f recall %.3f" % (precision, recall))
    return 0


if __name__ == "__main__":
    sys.exit(main())
