"""Site policy: a verdict may be definitive only when the evidence the site's process requires
was collected (require_gpu_metrics.data.yaml beside this file). Here: a definitive GPU verdict
starts an RMA, and the vendor asks for the GPU's DCGM telemetry; without node_metrics of the
culprit node the verdict is capped at probable, and the reason says what to collect.
"""
import attribution

POLICIES = attribution.site_data("require_gpu_metrics.data.yaml")["policies"]


@attribution.refiner(phase="POST_OUTCOME", id="site.require-gpu-metrics", fixtures=[{
    "lines": ["syslog gpu-b08: Nov 18 04:02:11 gpu-b08 kernel: NVRM: Xid (PCI:0000:9b:00): 79, pid=0, GPU has fallen off the bus."],
    "expect": {"outcome": "gpu.fell_off_bus", "quality": "probable"},
}, {
    "lines": ["applog gpu-b08: ValueError: shapes (3,) and (4,) not aligned"],
    "expect": {"domain": "application"},  # no GPU verdict: the policy does not apply
}])
def require_sources(view):
    root = view.root
    if root is None or view.quality != "definitive":
        return None
    for policy in POLICIES:
        if root.domain != policy["domain"]:
            continue
        if not view.has_source(policy["require"], root.node or None):
            where = (" of " + root.node) if root.node else ""
            return attribution.CapQuality(
                "probable", "site policy: no %s%s was collected; %s" % (policy["require"], where, policy["why"]))
    return None
