"""Site rule: GPU faults on several nodes of one NVLink domain (one rack of a GB200 NVL72 / an
NVSwitch tray) within a short time are one shared cause, not independent GPU failures.

Without it, two GPUs of two nodes failing seconds apart is an ambiguous verdict (two rivals, no
culprit node). With the site's map of nodes to NVLink domains (nvlink_domains.csv, beside this
file: node, rack, nvlink_domain), the refiner adds one candidate cause for the domain that
explains the per-node GPU faults, so the verdict points at the shared part (NVSwitch tray, rack
power, cooling loop) and lists every affected node.
"""
import attribution

DOMAINS = {row["node"]: row for row in attribution.site_data("nvlink_domains.csv")}
WINDOW_NS = 120 * 1_000_000_000  # faults this close together count as one event
FAULT_DOMAINS = ("gpu",)


def _same_event(faults):
    times = [f.first_seen for f in faults if f.first_seen is not None]
    return not times or max(times) - min(times) <= WINDOW_NS


@attribution.refiner(phase="LATE", id="site.nvlink-domain-shared-fault", fixtures=[{
    "lines": [
        "syslog gpu-w02: Nov 18 04:02:11 gpu-w02 kernel: NVRM: Xid (PCI:0000:81:00): 79, pid=0, GPU has fallen off the bus.",
        "syslog gpu-w04: Nov 18 04:02:13 gpu-w04 kernel: NVRM: Xid (PCI:0000:41:00): 48, pid=3345908, name=python3, Ch 00000008, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 2, subpartition 1.",
    ],
    "nodes": ["gpu-w01", "gpu-w02", "gpu-w03", "gpu-w04"],
    "expect": {"outcome": "gpu.nvlink", "root_symptom": "site.nvlink_domain.shared_fault",
               "explained": ["gpu.xid.79", "gpu.xid.48"]},
}, {
    "lines": [
        "syslog gpu-w02: Nov 18 04:02:11 gpu-w02 kernel: NVRM: Xid (PCI:0000:81:00): 79, pid=0, GPU has fallen off the bus.",
        "syslog gpu-w03: Nov 18 04:02:13 gpu-w03 kernel: NVRM: Xid (PCI:0000:41:00): 79, pid=0, GPU has fallen off the bus.",
    ],
    "nodes": ["gpu-w02", "gpu-w03"],
    "expect": {"root_symptom": "gpu.xid.79", "quality": "ambiguous"},  # two domains: no shared cause
}])
def shared_domain_fault(view):
    by_domain = {}
    for s in view.symptoms(role="cause"):
        if s.domain not in FAULT_DOMAINS or not s.node or s.synthetic:
            continue
        site = DOMAINS.get(s.node)
        if site is not None:
            by_domain.setdefault(site["nvlink_domain"], []).append(s)
    out = []
    for domain in sorted(by_domain):
        faults = by_domain[domain]
        nodes = sorted({f.node for f in faults})
        if len(nodes) < 2 or not _same_event(faults):
            continue
        rack = DOMAINS[nodes[0]]["rack"]
        what = ", ".join("%s on %s" % (f.id, f.node) for f in faults)
        out.append(attribution.Candidate(
            id="site.nvlink_domain.shared_fault",
            label="GPU faults on %d nodes of NVLink domain %s (rack %s) at once (%s): a shared fault of the "
                  "domain (NVSwitch tray, rack power or cooling) rather than independent GPUs" % (
                      len(nodes), domain, rack, what),
            domain="gpu", outcome="gpu.nvlink", priority=99, indirect=True,
            based_on=faults, explains=faults,
            fields={"nvlink_domain": domain, "rack": rack, "nodes": ",".join(nodes)}))
    return out
