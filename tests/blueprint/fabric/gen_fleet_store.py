#!/usr/bin/env python3
# Measurement helper (by hand, not a ctest): writes fleet.yaml (a 1,024-host two-tier fat tree: 32 leaves
# x 32 hosts, 8 spines, 64 NVLink domains of 16 hosts) and N synthetic runs straight into the run_fabric
# table of a store made by 'topology import' (8 % failures, 30 % of them fabric failures with a random
# peer or local-port location; h0517's host link flaps: 15 % of its runs fail with port errors).
#   python3 gen_fleet_store.py 0 x && attribution-blueprint topology import fleet.yaml --db perf.sqlite
#   python3 gen_fleet_store.py 1000000 perf.sqlite && /usr/bin/time -v attribution-blueprint fleet fabric --db perf.sqlite --no-store
import json, random, sqlite3, sys
n_runs = int(sys.argv[1]); db = sys.argv[2]
random.seed(7)
hosts = ["h%04d" % i for i in range(1024)]
with open("fleet.yaml", "w") as f:
    f.write("version: 1\nvalid_from: 2026-11-01T00:00:00Z\nhosts:\n")
    for i, h in enumerate(hosts):
        f.write("  %s: {ips: [10.%d.%d.%d]}\n" % (h, i // 65536, (i // 256) % 256, i % 256))
    f.write("nvlink_domains:\n")
    for d in range(64):
        f.write("  - {name: nvl%02d, hosts: [%s]}\n" % (d, ", ".join(hosts[d * 16:(d + 1) * 16])))
    f.write("roce:\n  links:\n")
    for i, h in enumerate(hosts):
        f.write("    - {switch: leaf%02d, port: %d, host: %s, hca: mlx5_0}\n" % (i // 32, i % 32 + 1, h))
    for l in range(32):
        for s in range(8):
            f.write("    - {switch: leaf%02d, port: %d, peer_switch: spine%d, peer_port: %d}\n" % (l, 33 + s, s, l + 1))
if n_runs == 0: sys.exit(0)
con = sqlite3.connect(db)
con.execute("PRAGMA synchronous=OFF")
t0 = 1793491200 * 10**9
span = 7 * 86400 * 10**9
rows = []
bad = "h0517"
for i in range(n_runs):
    size = random.choice([1, 1, 2, 4, 8, 16])
    start = random.randrange(0, 1024 - size + 1)
    hs = hosts[start:start + size] if random.random() < 0.7 else sorted(random.sample(hosts, size))
    end = t0 + (i * span) // n_runs
    failed = random.random() < 0.08
    fabric = failed and random.random() < 0.3
    ev = "[]"
    if fabric:
        node = random.choice(hs)
        peer = random.choice(hosts)
        loc = random.choice([{"peer": "10.0.%d.%d" % (hosts.index(peer) // 256, hosts.index(peer) % 256)}, {"hca": "mlx5_0", "hca_port": "1"}])
        ev = json.dumps([{"node": node, "symptom": "ib.completion_error.12", "role": "root_cause", "location": loc}])
    if bad in hs and random.random() < 0.15:
        failed = fabric = True
        ev = json.dumps([{"node": bad, "symptom": "ib.port_error", "role": "root_cause", "location": {"hca": "mlx5_0", "hca_port": "1"}}])
    rows.append((i + 1, end, str(100000 + i), "user%d" % random.randrange(200), " ".join(sorted(hs)), int(failed), int(fabric),
                 "network.link_flap" if fabric else ("application.exception" if failed else "none.succeeded"), ev))
    if len(rows) == 100000:
        con.executemany("INSERT INTO run_fabric VALUES (?,?,?,?,?,?,?,?,?)", rows); rows = []
con.executemany("INSERT INTO run_fabric VALUES (?,?,?,?,?,?,?,?,?)", rows)
con.commit()
