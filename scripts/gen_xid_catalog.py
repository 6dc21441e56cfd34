#!/usr/bin/env python3
"""Generate rules/gpu_xid_catalog.yaml from the shared Xid table.

Usage: scripts/gen_xid_catalog.py [--tsv PATH] [--out PATH] [--check]

The TSV has the columns code, mnemonic, description, immediate_action,
investigatory_action, our_class (lines starting with '#' are comments). Every code
becomes one entry of the `xid` catalog with label, domain, outcome, role, priority,
and the extra string keys mnemonic, action and class (copied into the symptom's fields).

Mapping of the team's `our_class` column (the first word decides; qualifiers refine):
  hw          -> role cause, outcome by code (79 fell_off_bus, ECC codes memory_ecc,
                 NVLink codes nvlink, micro-controller/GSP codes firmware, else hardware);
                 priority 95 for Xid 79 and fatal ECC, 90 for other hardware.
                 "hw (info)" / "hw (degradation signal)" are signals, not failures -> context.
  drv/hw      -> treated as hw (taxonomy: Xid 46, 109 ... are gpu.hardware)
  drv         -> role cause, gpu.driver (gpu.firmware for firmware/GSP/micro-controller codes), 85
  app         -> role cause, application.gpu_fault, 50
  link        -> role cause, gpu.nvlink, 90
  info        -> role context, 0
  sympathetic -> role victim, 0 (Xid 43, 45, 154: cleanup / recovery notes after another Xid)
  unused      -> role cause, gpu.hardware, 60 (not emitted on Ampere+; kept for older GPUs)
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# The table is kept in the repository (rules/data/), copied from shared/data/xid_catalog.tsv;
# when shared/ sits beside the checkout, --check also verifies the copy is current.
DEFAULT_TSV = os.environ.get("XID_CATALOG_TSV", os.path.join(ROOT, "rules", "data", "xid_catalog.tsv"))
UPSTREAM_TSV = os.path.join(os.path.dirname(ROOT), "shared", "data", "xid_catalog.tsv")
DEFAULT_OUT = os.path.join(ROOT, "rules", "gpu_xid_catalog.yaml")

FELL_OFF_BUS = {79}
MEMORY_ECC = {48, 63, 64, 92, 94, 95, 140, 171, 172}
FATAL_ECC = {48, 94, 95, 140, 171, 172}
NVLINK = {74, 136, 137} | set(range(144, 151))  # 138-143 are not NVLink codes
FIRMWARE = {61, 62, 119, 120}
SYMPATHETIC = {43, 45, 154}


def hw_outcome(code):
    if code in FELL_OFF_BUS:
        return "gpu.fell_off_bus"
    if code in MEMORY_ECC:
        return "gpu.memory_ecc"
    if code in NVLINK:
        return "gpu.nvlink"
    if code in FIRMWARE:
        return "gpu.firmware"
    return "gpu.hardware"


def classify(code, our_class, description):
    """Returns (class, domain, outcome, role, priority)."""
    raw = our_class.strip().lower()
    primary = raw.replace("/", " ").split()[0] if raw else "unused"
    if code in SYMPATHETIC:
        return "sympathetic", "gpu", hw_outcome(code), "victim", 0
    if primary == "info" or (primary == "hw" and ("info" in raw or "degradation" in raw)):
        return "info", "gpu", hw_outcome(code), "context", 0
    tokens = raw.replace("/", " ").replace("(", " ").replace(")", " ").split()
    if primary == "drv" and "hw" in tokens:
        # mixed driver/hardware codes (46, 109, copy engines ...): the taxonomy files them under gpu.hardware
        primary = "hw"
    if primary == "hw":
        prio = 95 if (code in FELL_OFF_BUS or code in FATAL_ECC) else 90
        return "hw", "gpu", hw_outcome(code), "cause", prio
    if primary == "drv":
        d = description.lower()
        if code in FIRMWARE or "firmware" in raw or "firmware" in d or "gsp" in d \
                or "micro-controller" in d:
            outcome = "gpu.firmware"
        else:
            outcome = "gpu.driver"
        return "drv", "gpu", outcome, "cause", 85
    if primary == "app":
        return "app", "application", "application.gpu_fault", "cause", 50
    if primary == "link":
        return "link", "gpu", "gpu.nvlink", "cause", 90
    if primary == "sympathetic":
        return "sympathetic", "gpu", hw_outcome(code), "victim", 0
    # unused (not emitted on Ampere+) and anything unexpected
    return "unused", "gpu", hw_outcome(code), "cause", 60


def q(s):
    # JSON strings are valid YAML double-quoted scalars.
    return json.dumps(s, ensure_ascii=False)


def read_rows(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) < 6:
                cols += [""] * (6 - len(cols))
            code_s, mnemonic, description, action, investigate, our_class = cols[:6]
            try:
                code = int(code_s)
            except ValueError:
                sys.exit(f"{path}:{lineno}: bad Xid code {code_s!r}")
            rows.append((code, mnemonic.strip(), description.strip(), action.strip(),
                         investigate.strip(), our_class.strip()))
    rows.sort(key=lambda r: r[0])
    return rows


def render(rows, tsv_path):
    out = []
    out.append("# GENERATED FILE - DO NOT EDIT.")
    out.append("# Generated by scripts/gen_xid_catalog.py from rules/data/xid_catalog.tsv (a copy of shared/data/xid_catalog.tsv)")
    out.append(f"# ({len(rows)} codes). Edit the script or the TSV and re-run:")
    out.append("#   python3 scripts/gen_xid_catalog.py")
    out.append("version: 1")
    out.append("catalogs:")
    out.append("  - id: xid")
    out.append("    description: NVIDIA Xid codes (generated from rules/data/xid_catalog.tsv)")
    out.append("    entries:")
    for code, mnemonic, description, action, investigate, our_class in rows:
        cls, domain, outcome, role, prio = classify(code, our_class, description)
        desc = description or mnemonic or "Xid"
        label = f"{desc} (Xid {code})"
        fields = [
            ("label", q(label)),
            ("domain", domain),
            ("outcome", outcome),
            ("role", role),
            ("priority", str(prio)),
            ("mnemonic", q(mnemonic)),
        ]
        if action:
            fields.append(("action", q(action)))
        if investigate:
            fields.append(("investigation", q(investigate)))
        if role == "cause" and investigate.startswith("INVESTIGATE_SW"):
            # NVIDIA's own next step is to look at the software: the code says where the error
            # surfaced (GSP, SEC2, a channel), not whether the driver, the firmware or the part
            # is at fault, so on its own it supports a probable verdict, not a definitive one.
            fields.append(("evidence", "indirect"))
        fields.append(("class", q(cls)))
        if our_class and our_class != cls:
            fields.append(("class_detail", q(our_class)))
        out.append(f'      "{code}":')
        for k, v in fields:
            out.append(f"        {k}: {v}")
    out.append("    default:")
    out.append('      label: "Xid {xid}"')
    out.append("      domain: gpu")
    out.append("      outcome: gpu.hardware")
    out.append("      role: cause")
    out.append("      priority: 60")
    out.append('      class: "unknown"')
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tsv", default=DEFAULT_TSV)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true", help="exit 1 if the output file is stale")
    args = ap.parse_args()
    if not os.path.exists(args.tsv):
        print(f"{args.tsv}: not found", file=sys.stderr)
        return 1
    if args.check and args.tsv == DEFAULT_TSV and os.path.exists(UPSTREAM_TSV):
        with open(UPSTREAM_TSV, "rb") as a, open(args.tsv, "rb") as b:
            if a.read() != b.read():
                print(f"{args.tsv} differs from {UPSTREAM_TSV}; copy it and run scripts/gen_xid_catalog.py",
                      file=sys.stderr)
                return 1
    rows = read_rows(args.tsv)
    text = render(rows, args.tsv)
    if args.check:
        try:
            with open(args.out, encoding="utf-8") as f:
                current = f.read()
        except FileNotFoundError:
            current = None
        if current != text:
            print(f"{args.out} is stale; run scripts/gen_xid_catalog.py", file=sys.stderr)
            return 1
        return 0
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {args.out}: {len(rows)} Xid codes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
