#!/usr/bin/env python3
"""Generate the sample bundles under samples/ (and the dashboard test's own bundles under
tests/dashboard/bundles/). Deterministic; run from anywhere:

    python3 samples/_gen/gen.py            # all bundles
    python3 samples/_gen/gen.py xid79      # only bundles whose name contains 'xid79'
"""
import sys
import os

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
import b1, b2, b3, b4, b5, b6, b7  # noqa  (each module registers bundles)
from registry import BUNDLES

if __name__ == "__main__":
    sel = sys.argv[1:]
    for name, fn, root in BUNDLES:
        if sel and not any(s in name for s in sel):
            continue
        b = Bundle(name, root) if root else Bundle(name)
        fn(b)
        print("wrote", os.path.relpath(b.dir, os.path.dirname(SAMPLES)))
