"""Site rule: name the GPU an Xid is about the way the data center does: its index (as
nvidia-smi and CUDA_VISIBLE_DEVICES count) and its serial number (what an RMA asks for).

The driver's Xid line names the GPU by PCI address only. The site exports its inventory
(gpu_inventory.csv, beside this file: node, pci, index, serial — e.g. from
`nvidia-smi --query-gpu=pci.bus_id,index,serial --format=csv` on every node); this field hook adds
`gpu_index` and `gpu_serial` to every Xid the driver reported, once per aggregated symptom.
"""
import attribution

INVENTORY = {(row["node"], row["pci"].lower()): row for row in attribution.site_data("gpu_inventory.csv")}


@attribution.field_hook(extractor="extract.gpu.xid", id="site.gpu-inventory", fixtures=[{
    "line": "Nov 18 04:02:11 gpu-w02 kernel: NVRM: Xid (PCI:0000:81:00): 79, pid=0, GPU has fallen off the bus.",
    "expect": {"symptom": "gpu.xid.79", "gpu": "0000:81:00", "gpu_index": "2", "gpu_serial": "1654922007311"},
}, {
    "line": "Nov 18 04:02:11 gpu-z09 kernel: NVRM: Xid (PCI:0000:81:00): 79, pid=0, GPU has fallen off the bus.",
    "expect": {"symptom": "gpu.xid.79", "gpu_index": "<absent>"},  # a node the inventory does not list
}])
def gpu_identity(fields, line):
    row = INVENTORY.get((fields.get("node", ""), fields.get("pci", "").lower()))
    if row is None:
        return None
    return {"gpu_index": row["index"], "gpu_serial": row["serial"]}
