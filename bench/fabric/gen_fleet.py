#!/usr/bin/python3
"""Simulated fleet for the fabric analysis (issue #12 §5): a week of jobs on a two-tier fat tree.

    gen_fleet.py --out DIR [--profile full|quick|ctest] [--seed 1]

Writes, deterministically for a (profile, seed):
  DIR/topology/ibnetdiscover.txt   the InfiniBand fabric as `ibnetdiscover` prints it (leaf and spine
                                   switches MQM9700, host HCAs mlx5_0, links 4xNDR)
  DIR/topology/fabric.yaml         what no tool prints: NVLink domains (GB200 NVL72 racks, 18 trays of
                                   4 GPUs), the RoCE front-end map (host NIC <-> ToR switch port) and
                                   host IP <-> host name (IPoIB ib0 addresses, the ones NCCL prints)
  DIR/jobs/<jobid>/                one workload bundle per job attempt (SPEC §7): workload.yaml,
                                   logs/<host>.out (torchrun + NCCL + application output),
                                   kernel/syslog-<host> (kernel and daemon lines), sacct.txt,
                                   slurm-<jobid>.out, and for failed jobs the epilog's
                                   reports/perfquery-<host>.txt (and ibstat) node reports
  DIR/truth.json                   the injected faults (component ids as the topology names them,
                                   event times, jobs they failed), every background failure with its
                                   cause, and the noise rates

The fleet: racks of 18 GB200 compute trays (4 GPUs each, one NVLink domain per rack); each host has
one compute HCA (mlx5_0 port 1) cabled to a leaf switch (32 host ports 1-32, uplinks 33..32+S, one to
each of S spines). Routing is D-mod-K (the up port toward destination LID d is 33 + d mod S), as
OpenSM's ftree/updn route a fat tree, so each host pair's path is known from the topology.

Jobs are packed onto hosts over the week (topology-aware: contiguous hosts, so small jobs stay on a
leaf and rack-sized jobs on a rack). Every job ends COMPLETED or fails by one cause:
  background  application (exception, CUDA OOM), gpu (Xid 79, Xid 48, Xid 119 GSP timeout), node (host
              OOM kill, node failure), storage (Lustre I/O error at checkpoint), scheduler (time limit,
              preemption, user cancel), unknown (collective hang, no evidence), network one-offs (a
              single link flap on a link used once, RoCE/GID misconfiguration at job start), plus
              harmless noise (a nonfatal NVLink Xid 145 or a corrected AER now and then)
  injected    F1 a flapping host-leaf link, F2 a bad leaf-spine uplink, F3 a leaf switch with a failing
              ASIC, F4 an NVLink domain (rack) fault
Peers of a dead or killed rank print socket resets and IB completion errors naming the dead host's IP:
fabric-looking evidence with a non-fabric cause, as on real clusters.
"""
import argparse
import datetime as dt
import json
import os
import random
import shutil
import sys

UTC = dt.timezone.utc

PROFILES = {
    # racks of 18 hosts; hosts per leaf; spines; days; target utilisation; job duration scale
    "full": dict(racks=64, per_leaf=32, spines=16, days=7, util=0.85, dur=1.0),
    "quick": dict(racks=32, per_leaf=32, spines=8, days=4, util=0.85, dur=0.5),
    "ctest": dict(racks=16, per_leaf=32, spines=4, days=3, util=0.8, dur=0.35),
}
GPN = 4
# Injected fault intensity (the same in every profile): the share of the multi-host jobs on the
# flapping link's host that a flap hits, the share of jobs with traffic over the bad uplink that it
# fails, and failing-ASIC / NVLink-domain episodes per day (each fails every job it touches).
FLAP_SHARE, UPLINK_SHARE, ASIC_PER_DAY, NVL_PER_DAY = 0.5, 0.5, 6, 5
START = dt.datetime(2026, 11, 23, tzinfo=UTC)  # a Monday
USERS = ["alice", "bkumar", "cwang", "dlopez", "esato", "fmuller", "gnovak", "hkim", "iross", "jpark",
         "kdiaz", "lwalker", "mchen", "nolsen", "ovolkov", "pgarcia", "qli", "rsmith", "sfischer", "tnguyen",
         "ubrown", "vrossi", "wzhang", "xmartin", "ylee", "zahmed"]
NAMES = ["pretrain-70b", "pretrain-8b", "sft-llama", "rlhf-ppo", "vlm-40b", "moe-16x7b", "eval-harness",
         "dpo-run", "gpt-30b-pt", "diffusion-xl", "embed-train", "dist-ckpt-test"]
PCI = ["0000:01:00", "0000:41:00", "0008:01:00", "0008:41:00"]  # a GB200 tray's four GPUs (no function)
HCA_PCI = "0000:1a:00.0"


def syslog_ts(t):
    return t.strftime("%b ") + "%2d" % t.day + t.strftime(" %H:%M:%S")


def glog(t):
    return "%02d%02d %s.%06d" % (t.month, t.day, t.strftime("%H:%M:%S"), t.microsecond)


def iso(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def slurm_t(t):
    return t.strftime("%Y-%m-%dT%H:%M:%S")


def sec(x):
    return dt.timedelta(seconds=x)


def hostlist(nodes):
    return ",".join(nodes)


# ----------------------------------------------------------------------------------------- topology
class Fabric:
    def __init__(self, p, rnd):
        self.racks = p["racks"]
        self.per_leaf = p["per_leaf"]
        self.nspines = p["spines"]
        self.hosts = ["gpu-r%02dn%02d" % (r + 1, t + 1) for r in range(self.racks) for t in range(18)]
        n = len(self.hosts)
        self.nleaves = (n + self.per_leaf - 1) // self.per_leaf
        self.leaves = ["ib-leaf%02d" % (i + 1) for i in range(self.nleaves)]
        self.spines = ["ib-spine%02d" % (i + 1) for i in range(self.nspines)]
        self.idx = {h: i for i, h in enumerate(self.hosts)}
        # LIDs: spines 1.., leaves next, hosts from 101
        self.lid = {}
        for i, s in enumerate(self.spines):
            self.lid[s] = 1 + i
        for i, l in enumerate(self.leaves):
            self.lid[l] = 1 + self.nspines + i
        for i, h in enumerate(self.hosts):
            self.lid[h] = 101 + i
        self.guid = {}
        for i, s in enumerate(self.spines):
            self.guid[s] = 0xfc6a1c0300a00000 + i * 0x100
        for i, l in enumerate(self.leaves):
            self.guid[l] = 0xfc6a1c0300b00000 + i * 0x100
        for i, h in enumerate(self.hosts):
            self.guid[h] = 0x946dae0300c00000 + i * 0x10 + rnd.randint(0, 0xf)
        self.ip = {h: "10.42.%d.%d" % (i // 18, 10 + i % 18) for i, h in enumerate(self.hosts)}
        self.rack = {h: "nvl72-r%02d" % (i // 18 + 1) for i, h in enumerate(self.hosts)}

    def leaf_of(self, h):
        return self.leaves[self.idx[h] // self.per_leaf]

    def leaf_port(self, h):
        return self.idx[h] % self.per_leaf + 1

    def up_port(self, dest_lid):
        return 33 + dest_lid % self.nspines

    def spine_of_port(self, up_port):
        return self.spines[up_port - 33]

    def spine_port(self, leaf):
        return self.leaves.index(leaf) + 1

    def path(self, a, b):
        """Component ids a packet from host a to host b crosses (D-mod-K)."""
        la, lb = self.leaf_of(a), self.leaf_of(b)
        comps = [host_link(self, a), "switch:" + la]
        if la != lb:
            u = self.up_port(self.lid[b])
            comps += [uplink(self, la, u), "switch:" + self.spine_of_port(u), uplink(self, lb, u), "switch:" + lb]
        comps.append(host_link(self, b))
        return comps

    def ibnetdiscover(self):
        L = ["#", "# Topology file: generated on Sun Nov 22 23:50:02 2026", "#",
             "# Initiated from node %016x port %016x" % (self.guid[self.hosts[0]], self.guid[self.hosts[0]]), ""]
        for s in self.spines:
            g = self.guid[s]
            L += ["vendid=0x2c9", "devid=0xd2f0", "sysimgguid=0x%x" % g, "switchguid=0x%x(%x)" % (g, g),
                  'Switch\t65 "S-%016x"\t\t# "MF0;%s:MQM9700/U1" enhanced port 0 lid %d lmc 0' % (g, s, self.lid[s])]
            for li, l in enumerate(self.leaves):
                up = 33 + self.spines.index(s)
                L.append('[%d]\t"S-%016x"[%d]\t\t# "MF0;%s:MQM9700/U1" lid %d 4xNDR' % (li + 1, self.guid[l], up, l, self.lid[l]))
            L.append("")
        for li, l in enumerate(self.leaves):
            g = self.guid[l]
            L += ["vendid=0x2c9", "devid=0xd2f0", "sysimgguid=0x%x" % g, "switchguid=0x%x(%x)" % (g, g),
                  'Switch\t65 "S-%016x"\t\t# "MF0;%s:MQM9700/U1" enhanced port 0 lid %d lmc 0' % (g, l, self.lid[l])]
            for h in self.hosts[li * self.per_leaf:(li + 1) * self.per_leaf]:
                hg = self.guid[h]
                L.append('[%d]\t"H-%016x"[1](%x) \t\t# "%s mlx5_0" lid %d 4xNDR' % (self.leaf_port(h), hg, hg, h, self.lid[h]))
            for si, s in enumerate(self.spines):
                L.append('[%d]\t"S-%016x"[%d]\t\t# "MF0;%s:MQM9700/U1" lid %d 4xNDR' % (33 + si, self.guid[s], li + 1, s, self.lid[s]))
            L.append("")
        for h in self.hosts:
            hg = self.guid[h]
            l = self.leaf_of(h)
            L += ["vendid=0x2c9", "devid=0x1021", "sysimgguid=0x%x" % hg, "caguid=0x%x" % hg,
                  'Ca\t1 "H-%016x"\t\t# "%s mlx5_0"' % (hg, h),
                  '[1](%x) \t"S-%016x"[%d]\t\t# lid %d lmc 0 "MF0;%s:MQM9700/U1" lid %d 4xNDR'
                  % (hg, self.guid[l], self.leaf_port(h), self.lid[h], l, self.lid[l]), ""]
        return "\n".join(L) + "\n"

    def yaml(self):
        """The docs/fabric.md §1.2 YAML: switch names, host addresses, NVLink domains, RoCE map."""
        L = ["# What no fabric tool prints: switch names, host addresses, NVLink domains, the RoCE front end.",
             "# Written by bench/fabric/gen_fleet.py with ibnetdiscover.txt.",
             "version: 1", "valid_from: 2026-11-01T00:00:00Z", "switches:"]
        for s in self.spines:
            L.append('  "0x%016x": {name: %s, tier: spine}' % (self.guid[s], s))
        for l in self.leaves:
            L.append('  "0x%016x": {name: %s, tier: leaf}' % (self.guid[l], l))
        L.append("hosts:")
        for h in self.hosts:
            L.append("  %s: {ips: [%s, %s], lids: [%d]}" % (h, self.ip[h], self.eth_ip(h), self.lid[h]))
        L.append("nvlink_domains:")
        for r in range(self.racks):
            hs = self.hosts[r * 18:(r + 1) * 18]
            L.append("  - name: nvl72-r%02d" % (r + 1))
            L.append("    hosts: [%s]" % ", ".join(hs))
        L.append("roce:")
        L.append("  links:")
        ntor = (len(self.hosts) + 17) // 18
        for i, h in enumerate(self.hosts):
            L.append("    - {switch: eth-tor%02d, port: %d, host: %s, hca: mlx5_4, hca_port: 1, iface: eth0, speed: 200G}"
                     % (i // 18 + 1, i % 18 + 1, h))
        for t in range(ntor):
            for u in range(2):
                L.append("    - {switch: eth-tor%02d, port: %d, peer_switch: eth-agg%02d, peer_port: %d}" % (t + 1, 33 + u, u + 1, t + 1))
        L.append("  tiers: {%s}" % ", ".join(["eth-tor%02d: leaf" % (t + 1) for t in range(ntor)] + ["eth-agg01: spine", "eth-agg02: spine"]))
        return "\n".join(L) + "\n"

    def eth_ip(self, h):
        return "10.50.%d.%d" % (self.idx[h] // 18, 10 + self.idx[h] % 18)


def link_id(a, b):
    """docs/fabric.md §1.3: link:<end>~<end>, ends sorted."""
    a, b = sorted([a, b])
    return "link:%s~%s" % (a, b)


def host_link(f, h):
    return link_id("%s/mlx5_0/1" % h, "%s/%d" % (f.leaf_of(h), f.leaf_port(h)))


def uplink(f, leaf, up):
    return link_id("%s/%d" % (leaf, up), "%s/%d" % (f.spine_of_port(up), f.spine_port(leaf)))


# ----------------------------------------------------------------------------------------- schedule
def schedule(f, p, rnd):
    """Packs jobs onto hosts over the period: list of dict(id, hosts, start, end, user, name)."""
    n = len(f.hosts)
    horizon = p["days"] * 86400
    free = [rnd.uniform(0, 3600) for _ in range(n)]
    jobs = []
    jid = 810000
    sizes = [(1, 22), (2, 14), (4, 16), (8, 16), (16, 12), (18, 8), (32, 6), (36, 3), (64, 2), (128, 1)]
    tot = sum(w for _, w in sizes)
    busy = 0.0
    target = p["util"] * n * horizon
    guard = 0
    while busy < target and guard < 200000:
        guard += 1
        x = rnd.uniform(0, tot)
        for k, w in sizes:
            x -= w
            if x <= 0:
                break
        k = min(k, n // 2)
        align = 18 if k in (18, 36) else (k if k <= 32 else 32)
        best = None
        for _ in range(8):
            off = rnd.randrange(0, max(1, (n - k) // align + 1)) * align
            off = min(off, n - k)
            st = max(free[off:off + k])
            if best is None or st < best[0]:
                best = (st, off)
        st, off = best
        st += rnd.uniform(30, 900)
        if st > horizon - 1800:
            continue
        dur = min(rnd.choice([0.5, 1, 2, 3, 4, 6, 8, 12]) * 3600 * p["dur"] * rnd.uniform(0.7, 1.3), horizon - st)
        for i in range(off, off + k):
            free[i] = st + dur
        busy += k * dur
        jid += rnd.randint(1, 4)
        jobs.append(dict(id=str(jid), hosts=f.hosts[off:off + k], start=st, end=st + dur,
                         user=rnd.choice(USERS), name=rnd.choice(NAMES)))
    jobs.sort(key=lambda j: (j["start"], j["id"]))
    return jobs


# ----------------------------------------------------------------------------------------- bundle writer
class Job:
    def __init__(self, f, j, rnd):
        self.f, self.j, self.rnd = f, j, rnd
        self.id = j["id"]
        self.hosts = j["hosts"]
        self.t0 = START + sec(j["start"])
        self.t1 = START + sec(j["end"])
        self.app = {h: [] for h in self.hosts}
        self.kern = {h: [] for h in self.hosts}
        self.reports = {}
        self.slurm_out = []
        self.state, self.exit_code, self.reason = "COMPLETED", "0:0", "None"
        self.counters = {}
        self.pids = {h: 100000 + rnd.randint(0, 3800000) for h in self.hosts}
        self.seq = rnd.randint(2000, 90000)
        self.nranks = len(self.hosts) * GPN

    def rank(self, h, l=0):
        return self.hosts.index(h) * GPN + l

    def nccl(self, h, l, where, level, msg):
        pid = self.pids[h] + 30 + l
        return "%s:%d:%d [%d] %s NCCL %s %s" % (h, pid, pid + 181, l, where, level, msg)

    def c10(self, h, l, t, sev, where, msg):
        return "[rank%d]:[%s%s %d %s] %s" % (self.rank(h, l), sev, glog(t), self.pids[h] + 30 + l, where, msg)

    def preamble(self):
        t = self.t0 + sec(2)
        for h in self.hosts:
            A = self.app[h]
            A.append("W%s %d torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default" % (glog(t), self.pids[h]))
            for l in range(GPN):
                A.append(self.nccl(h, l, "", "INFO", "NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:%s<0>" % self.f.ip[h]).replace("  ", " "))
            for l in range(GPN):
                A.append(self.nccl(h, l, "", "INFO", "comm 0x55d0c0f8%04x rank %d nranks %d cudaDev %d nvmlDev %d busId %s - Init COMPLETE"
                                   % (self.rnd.randint(0, 0xffff), self.rank(h, l), self.nranks, l, l, PCI[l][5:7] + "000")).replace("  ", " "))
            K = self.kern[h]
            K.append("%s %s kernel: mlx5_core %s mlx5_0: Port: 1 Link ACTIVE" % (syslog_ts(self.t0 - sec(86400 * 3 + self.rnd.randint(0, 86400))), h, HCA_PCI))
            K.append("%s %s slurmd[2211]: slurmd: launch task StepId=%s.0 request from UID:1000 GID:1000 HOST:10.1.0.5 PORT:%d"
                     % (syslog_ts(self.t0), h, self.id, self.rnd.randint(30000, 60000)))

    def iterations(self, until):
        h0 = self.hosts[0]
        t = self.t0 + sec(300)
        it = 100
        step = max(600, (until - self.t0).total_seconds() / 6)
        while t < until:
            self.app[h0].append(" [%s] iteration %8d/%8d | elapsed time per iteration (ms): %.1f | lm loss: %.6E | grad norm: %.3f |"
                                % (t.strftime("%Y-%m-%d %H:%M:%S"), it, 500000, self.rnd.uniform(900, 1100),
                                   2.4 - it * 1e-6 + self.rnd.uniform(-0.03, 0.03), self.rnd.uniform(0.8, 1.3)))
            t += sec(step)
            it += int(step)

    def kernel_noise(self, h, t):
        choice = self.rnd.random()
        if choice < 0.4:
            line = "kernel: hrtimer: interrupt took %d ns" % self.rnd.randint(12000, 30000)
        elif choice < 0.7:
            line = "systemd[1]: Started Session %d of User root." % self.rnd.randint(1000, 9000)
        elif choice < 0.85:
            line = "kernel: nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, skipping further processing"
        else:
            line = "kernel: workqueue: ib_cache_event_task [ib_core] hogged CPU for >10000us 4 times, consider switching to WQ_UNBOUND"
        self.kern[h].append("%s %s %s" % (syslog_ts(t), h, line))

    # ---- cascade helpers
    def watchdogs(self, t, except_hosts=(), seq=None, numel=160672064):
        seq = seq or self.seq
        for h in self.hosts:
            if h in except_hosts:
                continue
            for l in range(GPN):
                r = self.rank(h, l)
                desc = "WorkNCCL(SeqNum=%d, OpType=ALLREDUCE, NumelIn=%d, NumelOut=%d, Timeout(ms)=600000)" % (seq, numel, numel)
                self.app[h].append(self.c10(h, l, t + sec(0.001 * l), "E", "ProcessGroupNCCL.cpp:632",
                                            "[Rank %d] Watchdog caught collective operation timeout: %s ran for %d milliseconds before timing out."
                                            % (r, desc, 600000 + self.rnd.randint(3, 90))))
            self.agent_fail(h, t + sec(2), -6)

    def agent_fail(self, h, t, code, local=0):
        self.app[h].append("E%s %d torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: %d) local_rank: %d (pid: %d) of binary: /usr/bin/python3"
                           % (glog(t), self.pids[h], code, local, self.pids[h] + 30 + local))

    def peers_reset(self, dead, t, kind="reset"):
        """Ring neighbours of a dead/killed host print socket resets or IB completion errors naming it."""
        if len(self.hosts) < 2:
            return
        i = self.hosts.index(dead)
        nb = {self.hosts[(i - 1) % len(self.hosts)], self.hosts[(i + 1) % len(self.hosts)]} - {dead}
        for h in sorted(nb):
            l = self.rnd.randrange(GPN)
            if kind == "reset":
                self.app[h].append(self.nccl(h, l, "misc/socket.cc:538", "WARN", "Net : Call to recv from %s<%d> failed : Connection reset by peer"
                                             % (self.f.ip[dead], self.rnd.randint(30000, 60000))))
            else:
                self.app[h].append(self.nccl(h, l, "transport/net_ib.cc:2244", "WARN",
                                             "NET/IB : Got completion from peer %s<%d> with status=12 opcode=0 len=0 vendor err 129 (Recv) hca mlx5_0"
                                             % (self.f.ip[dead], self.rnd.randint(30000, 60000))))
            self.app[h].append(self.c10(h, l, t + sec(1), "E", "ProcessGroupNCCL.cpp:542",
                                        "[Rank %d] Collective WorkNCCL(SeqNum=%d, OpType=ALLREDUCE, NumelIn=160672064, NumelOut=160672064, Timeout(ms)=600000) raised the following async exception: NCCL error: remote process exited or there was a network error, NCCL version 2.21.5"
                                        % (self.rank(h, l), self.seq)))
            self.agent_fail(h, t + sec(3), -6, l)

    def fail(self, state="FAILED", code="1:0", reason="NonZeroExitCode"):
        self.state, self.exit_code, self.reason = state, code, reason

    def teardown(self, t, bad_host, task_code=1):
        self.slurm_out.append("srun: error: %s: task %d: Exited with exit code %d" % (bad_host, self.hosts.index(bad_host), task_code))
        self.slurm_out.append("srun: Terminating StepId=%s.0" % self.id)
        self.slurm_out.append("slurmstepd: error: *** STEP %s.0 ON %s CANCELLED AT %s DUE TO TASK FAILURE ***" % (self.id, self.hosts[0], slurm_t(t)))

    def perfquery(self, h, counters):
        c = dict(SymbolErrorCounter=0, LinkErrorRecoveryCounter=0, LinkDownedCounter=0, PortRcvErrors=0,
                 PortRcvRemotePhysicalErrors=0, PortRcvSwitchRelayErrors=0, PortXmitDiscards=0,
                 PortXmitConstraintErrors=0, PortRcvConstraintErrors=0, LocalLinkIntegrityErrors=0,
                 ExcessiveBufferOverrunErrors=0, VL15Dropped=0)
        c.update(counters)
        L = ["# Port counters: Lid %d port 1 (CapMask: 0x5A00)" % self.f.lid[h], "PortSelect:......................1",
             "CounterSelect:...................0x0000"]
        for k, v in c.items():
            L.append((k + ":").ljust(33, ".") + str(v))
        L.append("PortXmitData:....................%d" % self.rnd.randint(10**9, 4 * 10**9))
        L.append("PortRcvData:.....................%d" % self.rnd.randint(10**9, 4 * 10**9))
        L.append("PortXmitWait:....................%d" % self.rnd.randint(0, 50000))
        self.reports["perfquery-%s.txt" % h] = (h, "\n".join(L) + "\n", "perfquery on %s (mlx5_0 port 1) by the job epilog; counters cleared at job start" % h)

    def epilog(self, switch_errors):
        """What the site's epilog collects for a failed job: perfquery on every host (counters cleared
        at job start, so values are this job's deltas) and `ibqueryerrors -G <leaf>` for the leaf
        switches of its hosts (switch counters are cumulative: they show whatever the port has seen)."""
        for h in self.hosts:
            self.perfquery(h, self.counters.get(h, {}))
        first = {}
        for h in self.hosts:
            first.setdefault(self.f.leaf_of(h), h)
        for leaf, h in sorted(first.items()):
            g = self.f.guid[leaf]
            L = ['Errors for 0x%016x "MF0;%s:MQM9700/U1"' % (g, leaf)]
            ports = switch_errors(leaf, self.t1)
            for port in sorted(ports):
                L.append("   GUID 0x%016x port %d: %s" % (g, port, " ".join("[%s == %d]" % kv for kv in ports[port])))
            L += ["", "## Summary: 1 nodes checked, %d bad nodes found" % (1 if ports else 0),
                  "##          65 ports checked, %d ports have errors beyond threshold" % len(ports)]
            self.reports["ibqueryerrors-%s.txt" % leaf] = (h, "\n".join(L) + "\n", "ibqueryerrors -G 0x%016x (leaf %s) by the job epilog" % (g, leaf))

    # ---- writing
    def write(self, root, switch_errors):
        if self.state != "COMPLETED":
            self.epilog(switch_errors)
        if root is None:  # --no-bundles: the same random stream, nothing written
            return
        d = os.path.join(root, "jobs", self.id)
        os.makedirs(os.path.join(d, "logs"))
        os.makedirs(os.path.join(d, "kernel"))
        src = []
        for h in self.hosts:
            with open(os.path.join(d, "logs", "%s.out" % h), "w") as fh:
                fh.write("\n".join(self.app[h]) + "\n")
            src.append("  - {path: logs/%s.out, kind: applog, node: %s}" % (h, h))
            with open(os.path.join(d, "kernel", "syslog-%s" % h), "w") as fh:
                fh.write("\n".join(self.kern[h]) + "\n")
            src.append("  - {path: kernel/syslog-%s, kind: syslog, node: %s}" % (h, h))
        if self.reports:
            os.makedirs(os.path.join(d, "reports"))
            for name in sorted(self.reports):
                h, text, note = self.reports[name]
                with open(os.path.join(d, "reports", name), "w") as fh:
                    fh.write(text)
                src.append("  - {path: reports/%s, kind: node_report, node: %s, note: \"%s\"}" % (name, h, note))
        with open(os.path.join(d, "slurm-%s.out" % self.id), "w") as fh:
            fh.write("+ srun --kill-on-bad-exit=1 --nodes=%d --ntasks-per-node=1 torchrun --nnodes=%d --nproc-per-node=%d train.py\n"
                     % (len(self.hosts), len(self.hosts), GPN) + "".join(x + "\n" for x in self.slurm_out))
        src.append("  - {path: slurm-%s.out, kind: applog, node: %s}" % (self.id, self.hosts[0]))
        st = self.state
        el = int((self.t1 - self.t0).total_seconds())
        elapsed = "%02d:%02d:%02d" % (el // 3600, el // 60 % 60, el % 60)
        nl = hostlist(self.hosts)
        step_state = "CANCELLED" if st.startswith("CANCELLED") else st
        with open(os.path.join(d, "sacct.txt"), "w") as fh:
            fh.write("JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode|Start|End|Elapsed|NodeList\n")
            fh.write("%s|%s|gpu|llm|%d|%s|%s|%s|%s|%s|%s\n" % (self.id, self.j["name"], 144 * len(self.hosts), st, self.exit_code,
                                                              slurm_t(self.t0), slurm_t(self.t1), elapsed, nl))
            fh.write("%s.batch|batch||llm|144|%s|%s|%s|%s|%s|%s\n" % (self.id, step_state, self.exit_code, slurm_t(self.t0), slurm_t(self.t1), elapsed, self.hosts[0]))
            fh.write("%s.0|torchrun||llm|%d|%s|%s|%s|%s|%s|%s\n" % (self.id, 144 * len(self.hosts), step_state, self.exit_code,
                                                                   slurm_t(self.t0), slurm_t(self.t1 - sec(2)), elapsed, nl))
        src.append("  - {path: sacct.txt, kind: scheduler}")
        ranks = ", ".join("%d: %s" % (i * GPN + l, h) for i, h in enumerate(self.hosts) for l in range(GPN))
        wl = ["workload:", '  id: "%s"' % self.id, "  scheduler: slurm", "  cluster: sim", '  step: "%s.0"' % self.id,
              "  name: %s" % self.j["name"], "  user: %s" % self.j["user"], "  queue: gpu", "  state: %s" % st,
              '  exit_code: "%s"' % self.exit_code, "  reason: %s" % self.reason, "  start: %s" % iso(self.t0), "  end: %s" % iso(self.t1),
              "  nodes: [%s]" % ", ".join(self.hosts), "  ranks: {%s}" % ranks, "sources:"] + src
        with open(os.path.join(d, "workload.yaml"), "w") as fh:
            fh.write("\n".join(wl) + "\n")


# ----------------------------------------------------------------------------------------- failure causes
def mid(job, rnd, lo=0.3, hi=0.9):
    return job.t0 + sec((job.t1 - job.t0).total_seconds() * rnd.uniform(lo, hi))


def finish_ok(job):
    job.iterations(job.t1 - sec(60))
    job.app[job.hosts[0]].append("[%s] INFO - trainer - training complete, final checkpoint saved" % job.t1.strftime("%Y-%m-%d %H:%M:%S,000"))


def cause_app_exception(job, rnd, t):
    h = rnd.choice(job.hosts)
    r = job.rank(h, 0)
    job.iterations(t)
    exc = rnd.choice(["KeyError: 'attention_mask'", "ValueError: Expected input batch_size (32) to match target batch_size (28).",
                      "AssertionError: sequence length 8193 exceeds max_position_embeddings 8192"])
    for x in ["Traceback (most recent call last):", '  File "/workspace/train.py", line 412, in <module>', "    main()",
              '  File "/workspace/train.py", line 377, in train_step', "    loss = model(**batch).loss", exc]:
        job.app[h].append("[rank%d]: %s" % (r, x))
    job.agent_fail(h, t + sec(1), 1)
    job.peers_reset(h, t + sec(2))
    if len(job.hosts) > 2:
        job.watchdogs(t + sec(600), except_hosts=set([h]) | set(job.hosts[max(0, job.hosts.index(h) - 1):job.hosts.index(h) + 2]))
    job.teardown(t + sec(5), h)
    job.fail()
    return "application", None


def cause_cuda_oom(job, rnd, t):
    h = rnd.choice(job.hosts)
    l = rnd.randrange(GPN)
    job.iterations(t)
    job.app[h].append("[rank%d]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.35 GiB. GPU %d has a total capacity of 184.31 GiB of which 1.70 GiB is free. Process %d has 182.40 GiB memory in use. Of the allocated memory 170.94 GiB is allocated by PyTorch, and 8.56 GiB is reserved by PyTorch but unallocated."
                      % (job.rank(h, l), l, job.pids[h] + 30 + l))
    job.agent_fail(h, t + sec(1), 1, l)
    job.peers_reset(h, t + sec(2))
    job.teardown(t + sec(5), h)
    job.fail()
    return "application", None


def cause_xid79(job, rnd, t):
    h = rnd.choice(job.hosts)
    l = rnd.randrange(GPN)
    job.iterations(t)
    job.kern[h].append("%s %s kernel: NVRM: Xid (PCI:%s): 79, pid=0, GPU has fallen off the bus." % (syslog_ts(t), h, PCI[l]))
    job.kern[h].append("%s %s kernel: NVRM: GPU %s.0: GPU has fallen off the bus." % (syslog_ts(t), h, PCI[l]))
    job.app[h].append("[rank%d]: RuntimeError: CUDA error: unknown error" % job.rank(h, l))
    job.agent_fail(h, t + sec(2), 1, l)
    job.peers_reset(h, t + sec(3), kind="ib")
    job.watchdogs(t + sec(601), except_hosts={h})
    job.teardown(t + sec(605), h)
    job.fail()
    return "gpu", h


def cause_xid48(job, rnd, t):
    h = rnd.choice(job.hosts)
    l = rnd.randrange(GPN)
    job.iterations(t)
    job.kern[h].append("%s %s kernel: NVRM: Xid (PCI:%s): 48, pid=%d, name=python3, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0."
                       % (syslog_ts(t), h, PCI[l], job.pids[h] + 30 + l))
    job.kern[h].append("%s %s kernel: NVRM: Xid (PCI:%s): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)" % (syslog_ts(t + sec(1)), h, PCI[l]))
    job.app[h].append("[rank%d]: RuntimeError: CUDA error: uncorrectable ECC error encountered" % job.rank(h, l))
    job.agent_fail(h, t + sec(2), 1, l)
    job.peers_reset(h, t + sec(3))
    job.teardown(t + sec(6), h)
    job.fail()
    return "gpu", h


def cause_xid119(job, rnd, t):
    h = rnd.choice(job.hosts)
    l = rnd.randrange(GPN)
    job.iterations(t)
    job.kern[h].append("%s %s kernel: NVRM: Xid (PCI:%s): 119, pid=%d, name=python3, Timeout after 6s of waiting for RPC response from GPU%d GSP! Expected function 76 (GSP_RM_CONTROL) (0x2080014b 0x5)."
                       % (syslog_ts(t), h, PCI[l], job.pids[h] + 30 + l, l))
    job.app[h].append("[rank%d]: RuntimeError: CUDA error: unspecified launch failure" % job.rank(h, l))
    job.agent_fail(h, t + sec(2), 1, l)
    job.peers_reset(h, t + sec(3))
    job.teardown(t + sec(6), h)
    job.fail()
    return "gpu", h


def cause_host_oom(job, rnd, t):
    h = rnd.choice(job.hosts)
    job.iterations(t)
    pid = job.pids[h] + 30
    job.kern[h].append("%s %s kernel: Out of memory: Killed process %d (python3) total-vm:912345678kB, anon-rss:851234567kB, file-rss:26912kB, shmem-rss:0kB, UID:1000 pgtables:1721384kB oom_score_adj:0"
                       % (syslog_ts(t), h, pid))
    job.agent_fail(h, t + sec(1), -9)
    job.peers_reset(h, t + sec(2))
    job.teardown(t + sec(5), h, 137)
    job.fail()
    return "node", h


def cause_node_fail(job, rnd, t):
    h = rnd.choice(job.hosts)
    job.iterations(t)
    job.kern[h] = job.kern[h][:2]  # the node stopped logging
    job.peers_reset(h, t + sec(20), kind="ib")
    if len(job.hosts) > 2:
        job.watchdogs(t + sec(600), except_hosts={h})
    job.slurm_out.append("srun: error: Node failure on %s" % h)
    job.slurm_out.append("slurmstepd: error: *** JOB %s ON %s CANCELLED AT %s DUE TO NODE FAILURE ***" % (job.id, job.hosts[0], slurm_t(t + sec(300))))
    job.fail("NODE_FAIL", "0:0", "NodeFail")
    return "node", h


def cause_lustre(job, rnd, t):
    h = rnd.choice(job.hosts)
    job.iterations(t)
    job.kern[h].append("%s %s kernel: LustreError: 11-0: scratch-OST0012-osc-ffff88203810d800: operation ost_write to node 172.31.126.88@o2ib failed: rc = -107" % (syslog_ts(t - sec(5)), h))
    job.kern[h].append("%s %s kernel: Lustre: scratch-OST0012-osc-ffff88203810d800: Connection to scratch-OST0012 (at 172.31.126.88@o2ib) was lost; in progress operations using this service will wait for recovery to complete" % (syslog_ts(t - sec(4)), h))
    r = job.rank(h, 0)
    for x in ["Traceback (most recent call last):", '  File "/workspace/train.py", line 288, in save_checkpoint',
              "    torch.save(state, path)", "OSError: [Errno 5] Input/output error: '/lustre/scratch/ckpt/iter_0042000/model_rank%d.pt'" % r]:
        job.app[h].append("[rank%d]: %s" % (r, x))
    job.agent_fail(h, t + sec(1), 1)
    job.peers_reset(h, t + sec(2))
    job.teardown(t + sec(5), h)
    job.fail()
    return "storage", None


def cause_timelimit(job, rnd, t):
    job.iterations(job.t1 - sec(30))
    job.slurm_out.append("slurmstepd: error: *** JOB %s ON %s CANCELLED AT %s DUE TO TIME LIMIT ***" % (job.id, job.hosts[0], slurm_t(job.t1)))
    job.fail("TIMEOUT", "0:15", "TimeLimit")
    return "scheduler", None


def cause_preempt(job, rnd, t):
    job.iterations(t)
    job.t1 = t + sec(5)
    job.slurm_out.append("slurmstepd: error: *** JOB %s ON %s CANCELLED AT %s DUE TO PREEMPTION ***" % (job.id, job.hosts[0], slurm_t(t)))
    job.fail("PREEMPTED", "0:15", "Preempted")
    return "scheduler", None


def cause_cancel(job, rnd, t):
    job.iterations(t)
    job.t1 = t + sec(5)
    job.slurm_out.append("slurmstepd: error: *** JOB %s ON %s CANCELLED AT %s ***" % (job.id, job.hosts[0], slurm_t(t)))
    job.fail("CANCELLED by 1000", "0:15", "None")
    return "scheduler", None


def cause_hang(job, rnd, t):
    if len(job.hosts) < 2:
        return cause_app_exception(job, rnd, t)
    job.iterations(t)
    job.watchdogs(t + sec(600))
    job.teardown(t + sec(605), job.hosts[0], 134)
    job.fail()
    return "unknown", None


def cause_roce_config(job, rnd, t):
    """GID/routing misconfiguration: retry-exceeded errors within a minute of start, no link events."""
    if len(job.hosts) < 2:
        return cause_app_exception(job, rnd, t)
    t = job.t0 + sec(40)
    for i, h in enumerate(job.hosts):
        peer = job.hosts[(i + 1) % len(job.hosts)]
        job.app[h].append(job.nccl(h, 0, "transport/net_ib.cc:2244", "WARN",
                                   "NET/IB : Got completion from peer %s<%d> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:%s remoteGids::ffff:%s hca mlx5_0"
                                   % (job.f.ip[peer], rnd.randint(30000, 60000), job.f.ip[h], job.f.ip[peer])))
        job.agent_fail(h, t + sec(2), -6)
    job.t1 = t + sec(30)
    job.teardown(t + sec(5), job.hosts[0])
    job.fail()
    return "network", None


def link_flap_evidence(job, rnd, h, t, down_s=8):
    """h's HCA port goes down and comes back; h logs it, h's NCCL sees a port error, its ring
    neighbours see retry-exceeded completion errors naming h."""
    job.kern[h].append("%s %s kernel: mlx5_core %s mlx5_0: Port: 1 Link DOWN" % (syslog_ts(t), h, HCA_PCI))
    job.kern[h].append("%s %s kernel: mlx5_core %s mlx5_0: Port: 1 Link ACTIVE" % (syslog_ts(t + sec(down_s)), h, HCA_PCI))
    l = rnd.randrange(GPN)
    job.app[h].append(job.nccl(h, l, "transport/net_ib.cc:101", "WARN", "NET/IB : mlx5_0:1 Got async event : port error"))
    if len(job.hosts) > 1:
        job.peers_reset(h, t + sec(20), kind="ib")


def cause_oneoff_flap(job, rnd, t, host):
    job.iterations(t)
    link_flap_evidence(job, rnd, host, t)
    job.counters[host] = dict(LinkDownedCounter=1, LinkErrorRecoveryCounter=rnd.randint(0, 2), SymbolErrorCounter=rnd.randint(0, 40))
    if len(job.hosts) > 2:
        job.watchdogs(t + sec(620), except_hosts={host})
    job.teardown(t + sec(625), host)
    job.fail()
    return "network", host


# ----------------------------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--profile", default="full", choices=sorted(PROFILES))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--topology-only", action="store_true", help="write topology/ only (for bench/fabric/cost.sh)")
    ap.add_argument("--no-bundles", action="store_true", help="write topology/, truth.json and jobs.json only")
    a = ap.parse_args()
    p = PROFILES[a.profile]
    rnd = random.Random(a.seed * 7919 + 17)
    f = Fabric(p, rnd)
    if os.path.exists(a.out):
        shutil.rmtree(a.out)
    os.makedirs(os.path.join(a.out, "topology"))
    os.makedirs(os.path.join(a.out, "jobs"))
    with open(os.path.join(a.out, "topology", "ibnetdiscover.txt"), "w") as fh:
        fh.write(f.ibnetdiscover())
    with open(os.path.join(a.out, "topology", "fabric.yaml"), "w") as fh:
        fh.write(f.yaml())
    if a.topology_only:
        return

    jobs = schedule(f, p, rnd)
    by_id = {j["id"]: j for j in jobs}

    # ---- injected faults: components, chosen away from each other
    leaves = list(f.leaves[:-1] if len(f.hosts) % f.per_leaf else f.leaves)
    nl = len(leaves)
    flap_leaf = leaves[max(1, nl // 5)]
    asic_leaf = leaves[nl // 2]
    up_leaf = leaves[max(nl // 2 + 1, 4 * nl // 5)]
    flap_host = f.hosts[f.leaves.index(flap_leaf) * f.per_leaf + 7]
    up_port = 33 + 3 % f.nspines
    nvl_rack = f.rack[f.hosts[0]]  # the first rack: its 18 trays sit under the first leaf
    truth = [
        dict(id="F1", kind="flapping host-leaf link", component=host_link(f, flap_host),
             events=[]),
        dict(id="F2", kind="bad leaf-spine uplink", component=uplink(f, up_leaf, up_port),
             events=[]),
        dict(id="F3", kind="leaf switch with a failing ASIC", component="switch:" + asic_leaf, events=[]),
        dict(id="F4", kind="NVLink domain fault (NVL72 rack)", component="nvlink_domain:" + nvl_rack, events=[],
             hosts=[h for h in f.hosts if f.rack[h] == nvl_rack]),
    ]
    fault_of_job = {}

    def running(pred, t_lo_frac=0.0):
        return [j for j in jobs if pred(j) and j["id"] not in fault_of_job and j["end"] - j["start"] > 1200]

    def spread(cands, k):
        """k candidates spread over the period (one per time slice when possible)."""
        if not cands:
            return []
        cands = sorted(cands, key=lambda j: j["start"])
        out = []
        for i in range(k):
            lo = len(cands) * i // k
            hi = max(lo + 1, len(cands) * (i + 1) // k)
            c = [j for j in cands[lo:hi] if j["id"] not in fault_of_job and j not in out]
            if c:
                out.append(rnd.choice(c))
        return out

    # F1: the host-leaf link flaps: jobs on flap_host hit by a flap
    # (single-host jobs talk over NVLink only: a fabric fault does not touch them)
    c = running(lambda j: flap_host in j["hosts"] and len(j["hosts"]) > 1)
    for j in spread(c, max(2, round(FLAP_SHARE * len(c)))):
        fault_of_job[j["id"]] = ("F1", None)
    # F2: jobs with traffic over the uplink (a ring neighbour pair whose path crosses it)
    upc = uplink(f, up_leaf, up_port)
    rnd_pairs = random.Random(a.seed * 31 + 5)  # which crossing pair of a job hits the bad path

    def crosses(j):
        """A host pair of the job whose D-mod-K path crosses the uplink (jobs exchange data between
        every pair of hosts: all-to-all, tree and ring collectives), or None."""
        hs = j["hosts"]
        if len(hs) < 2 or not any(f.leaf_of(h) == up_leaf for h in hs):
            return None
        pairs = [(x, y) for x in hs for y in hs if x != y and upc in f.path(x, y)]
        return pairs[rnd_pairs.randrange(len(pairs))] if pairs else None
    c = running(lambda j: crosses(j) is not None)
    for j in spread(c, max(2, round(UPLINK_SHARE * len(c)))):
        fault_of_job[j["id"]] = ("F2", crosses(j))
    # F3: ASIC episodes: at an instant, every job with a host on the leaf is hit
    asic_hosts = set(h for h in f.hosts if f.leaf_of(h) == asic_leaf)
    horizon = p["days"] * 86400
    n_asic = ASIC_PER_DAY * p["days"]
    for e in range(n_asic):
        t = horizon * (e + 0.5) / n_asic + rnd.uniform(-1800, 1800)
        hit = [j for j in jobs if j["start"] + 600 < t < j["end"] - 60 and asic_hosts & set(j["hosts"]) and len(j["hosts"]) > 1
               and j["id"] not in fault_of_job]
        for j in hit:
            fault_of_job[j["id"]] = ("F3", t)
        truth[2]["events"].append(iso(START + sec(t)))
    # F4: NVLink domain episodes: every job on a tray of the rack that runs at the instant (in an NVL72
    # rack all GPU-to-GPU NVLink traffic, inside a tray too, goes through the rack's NVSwitch trays)
    rack_hosts = set(h for h in f.hosts if f.rack[h] == nvl_rack)
    n_nvl = NVL_PER_DAY * p["days"]
    for e in range(n_nvl):
        t = horizon * (e + 0.3) / n_nvl + rnd.uniform(-1800, 1800)
        hit = [j for j in jobs if j["start"] + 600 < t < j["end"] - 60 and rack_hosts & set(j["hosts"]) and j["id"] not in fault_of_job]
        if not hit:
            cands = [j for j in jobs if rack_hosts & set(j["hosts"]) and j["id"] not in fault_of_job and j["end"] - j["start"] > 1200
                     and abs((j["start"] + j["end"]) / 2 - t) < horizon / n_nvl]
            if cands:
                j = rnd.choice(cands)
                t = (j["start"] + j["end"]) / 2
                hit = [j]
        for j in hit:
            fault_of_job[j["id"]] = ("F4", t)
        if hit:
            truth[3]["events"].append(iso(START + sec(t)))

    # ---- switch-side counters, as `ibqueryerrors` shows them at a failed job's end
    def onset(fid):
        ts = [by_id[jid]["start"] for jid, (x, _) in fault_of_job.items() if x == fid]
        return min(ts) if ts else None
    on_f1, on_f2 = onset("F1"), onset("F2")
    on_f3 = min((arg for x, arg in fault_of_job.values() if x == "F3"), default=None)
    asic_ports = sorted(rnd.sample(range(1, min(f.per_leaf, len(asic_hosts)) + 1), min(8, len(asic_hosts))))
    faulty_ports = {(flap_leaf, f.leaf_port(flap_host)), (up_leaf, up_port)}
    marginal = []  # a few marginal links that always show a trickle of symbol errors (harmless)
    while len(marginal) < 3:
        h = rnd.choice(f.hosts)
        if (f.leaf_of(h), f.leaf_port(h)) not in faulty_ports and f.leaf_of(h) != asic_leaf:
            marginal.append((f.leaf_of(h), f.leaf_port(h), rnd.uniform(0.5, 3)))

    def switch_errors(leaf, t_end):
        ts = (t_end - START).total_seconds()
        ports = {}
        if leaf == up_leaf and on_f2 is not None and ts > on_f2:
            hrs = (ts - on_f2) / 3600
            ports[up_port] = [("SymbolErrorCounter", int(12 + 55 * hrs)), ("LinkErrorRecoveryCounter", int(1 + hrs / 6))]
        if leaf == flap_leaf and on_f1 is not None and ts > on_f1:
            hrs = (ts - on_f1) / 3600
            ports[f.leaf_port(flap_host)] = [("SymbolErrorCounter", int(40 + 30 * hrs)), ("LinkDownedCounter", int(1 + hrs / 9))]
        if leaf == asic_leaf and on_f3 is not None and ts > on_f3:
            hrs = (ts - on_f3) / 3600
            for port in asic_ports:
                ports[port] = [("PortRcvErrors", int(5 + 20 * hrs + port)), ("PortRcvSwitchRelayErrors", int(30 + 80 * hrs))]
        for ml, mp, rate in marginal:
            if ml == leaf:
                ports[mp] = [("SymbolErrorCounter", int(1 + rate * ts / 86400))]
        return ports

    # ---- background: rates per job (of jobs not hit by an injected fault)
    bg = [(cause_app_exception, 0.045), (cause_cuda_oom, 0.03), (cause_xid79, 0.012), (cause_xid48, 0.008),
          (cause_xid119, 0.008), (cause_host_oom, 0.015), (cause_node_fail, 0.008), (cause_lustre, 0.015),
          (cause_timelimit, 0.03), (cause_preempt, 0.02), (cause_cancel, 0.03), (cause_hang, 0.01),
          (cause_roce_config, 0.006), ("oneoff_flap", 0.008)]
    used_flap_links = {flap_host}
    background = []
    counts = {}
    njobs_bg = 0
    nvl_noise = 0
    for j in jobs:
        job = Job(f, j, rnd)
        job.preamble()
        for h in job.hosts:
            if rnd.random() < 0.3:
                job.kernel_noise(h, job.t0 + sec(rnd.uniform(60, (job.t1 - job.t0).total_seconds())))
        flt = fault_of_job.get(j["id"])
        if flt:
            fid, arg = flt
            if fid == "F1":
                t = mid(job, rnd)
                job.iterations(t)
                link_flap_evidence(job, rnd, flap_host, t, down_s=rnd.randint(3, 20))
                job.counters[flap_host] = dict(LinkDownedCounter=rnd.randint(1, 3), LinkErrorRecoveryCounter=rnd.randint(1, 6),
                                               SymbolErrorCounter=rnd.randint(50, 4000))
                if len(job.hosts) > 2:
                    job.watchdogs(t + sec(620), except_hosts={flap_host})
                job.teardown(t + sec(625), flap_host)
                job.fail()
                truth[0]["events"].append(iso(t))
            elif fid == "F2":
                pa, pb = arg
                t = mid(job, rnd)
                job.iterations(t)
                # Both ends of the broken path report retry-exceeded naming each other; no link event.
                for x, y in ((pa, pb), (pb, pa)):
                    l = rnd.randrange(GPN)
                    job.app[x].append(job.nccl(x, l, "transport/net_ib.cc:2244", "WARN",
                                               "NET/IB : Got completion from peer %s<%d> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:%s remoteGids::ffff:%s hca mlx5_0"
                                               % (f.ip[y], rnd.randint(30000, 60000), f.ip[x], f.ip[y])))
                    job.app[x].append(job.c10(x, l, t + sec(1), "E", "ProcessGroupNCCL.cpp:542",
                                              "[Rank %d] Collective WorkNCCL(SeqNum=%d, OpType=ALLREDUCE, NumelIn=160672064, NumelOut=160672064, Timeout(ms)=600000) raised the following async exception: NCCL error: remote process exited or there was a network error, NCCL version 2.21.5"
                                              % (job.rank(x, l), job.seq)))
                    job.agent_fail(x, t + sec(3), -6, l)
                if len(job.hosts) > 2:
                    job.watchdogs(t + sec(610), except_hosts={pa, pb})
                job.teardown(t + sec(615), pa)
                job.fail()
                truth[1]["events"].append(iso(t))
            elif fid == "F3":
                t = START + sec(arg)
                job.iterations(t)
                mine = [h for h in job.hosts if h in asic_hosts]
                reset = rnd.random() < 0.5
                for h in mine:
                    if reset:  # the ASIC resets: every port of the leaf drops at once
                        job.kern[h].append("%s %s kernel: mlx5_core %s mlx5_0: Port: 1 Link DOWN" % (syslog_ts(t), h, HCA_PCI))
                        job.kern[h].append("%s %s kernel: mlx5_core %s mlx5_0: Port: 1 Link ACTIVE" % (syslog_ts(t + sec(rnd.randint(40, 90))), h, HCA_PCI))
                        job.app[h].append(job.nccl(h, 0, "transport/net_ib.cc:101", "WARN", "NET/IB : mlx5_0:1 Got async event : port error"))
                others = [h for h in job.hosts if h not in asic_hosts] or mine
                for i, h in enumerate(job.hosts):
                    peer = job.hosts[(i + 1) % len(job.hosts)]
                    if len(job.hosts) == 1 or not (h in asic_hosts or peer in asic_hosts):
                        continue
                    job.app[h].append(job.nccl(h, rnd.randrange(GPN), "transport/net_ib.cc:2244", "WARN",
                                               "NET/IB : Got completion from peer %s<%d> with status=12 opcode=0 len=0 vendor err 129 (Recv) hca mlx5_0"
                                               % (f.ip[peer], rnd.randint(30000, 60000))))
                    job.agent_fail(h, t + sec(3), -6)
                for h in mine:
                    job.counters[h] = dict(PortRcvErrors=rnd.randint(20, 900), SymbolErrorCounter=rnd.randint(0, 30),
                                           LinkDownedCounter=1 if reset else 0)
                if len(job.hosts) == 1:
                    job.app[mine[0]].append("[rank%d]: RuntimeError: NCCL error: remote process exited or there was a network error" % job.rank(mine[0]))
                    job.agent_fail(mine[0], t + sec(3), 1)
                job.teardown(t + sec(30), mine[0])
                job.fail()
                del others
            elif fid == "F4":
                t = START + sec(arg)
                job.iterations(t)
                mine = [h for h in job.hosts if h in rack_hosts]
                for h in mine[:max(1, len(mine) // 2)]:
                    l = rnd.randrange(GPN)
                    job.kern[h].append("%s %s kernel: NVRM: Xid (PCI:%s): 149, NETIR_LINK_EVT Fatal XC0 i0 Link %02d (0x025001c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)"
                                       % (syslog_ts(t + sec(rnd.uniform(0, 2))), h, PCI[l], rnd.randint(0, 17)))
                    job.app[h].append("[rank%d]: RuntimeError: CUDA error: uncorrectable NVLink error detected during the execution" % job.rank(h, l))
                    job.agent_fail(h, t + sec(4), 1, l)
                job.teardown(t + sec(10), mine[0])
                job.fail()
        else:
            x = rnd.random()
            cause = None
            for c, w in bg:
                x -= w
                if x <= 0:
                    cause = c
                    break
            if cause is None:
                finish_ok(job)
                if rnd.random() < 0.01:  # harmless noise: a nonfatal NVLink Xid on a healthy job
                    h = rnd.choice(job.hosts)
                    job.kern[h].append("%s %s kernel: NVRM: Xid (PCI:%s): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)"
                                       % (syslog_ts(mid(job, rnd)), h, PCI[0]))
                    nvl_noise += 1
            else:
                t = mid(job, rnd)
                if cause == "oneoff_flap":
                    free_hosts = [h for h in job.hosts if h not in used_flap_links]
                    if not free_hosts:
                        finish_ok(job)
                        job.write(None if a.no_bundles else a.out, switch_errors)
                        continue
                    h = rnd.choice(free_hosts)
                    used_flap_links.add(h)
                    dom, node = cause_oneoff_flap(job, rnd, t, h)
                    name = "network.oneoff_link_flap"
                    background.append(dict(job=j["id"], cause=name, host=h, component=host_link(f, h)))
                else:
                    dom, node = cause(job, rnd, t)
                    name = cause.__name__.replace("cause_", "")
                    if len(job.hosts) < 2 and cause in (cause_hang, cause_roce_config):
                        name = "app_exception"  # single-host: falls back to an application exception
                    background.append(dict(job=j["id"], cause=dom + "." + name, host=node))
                counts[dom] = counts.get(dom, 0) + 1
                njobs_bg += 1
        job.write(None if a.no_bundles else a.out, switch_errors)

    for t in truth:
        t["jobs"] = sorted(jid for jid, (fid, _) in fault_of_job.items() if fid == t["id"])
        t["events"] = sorted(set(t["events"]))
    n = len(jobs)
    doc = dict(profile=a.profile, seed=a.seed, start=iso(START), end=iso(START + sec(p["days"] * 86400)),
               hosts=len(f.hosts), leaves=len(f.leaves), spines=len(f.spines), nvlink_domains=f.racks, jobs=n,
               marginal_links=[host_link(f, f.hosts[f.leaves.index(ml) * f.per_leaf + mp - 1]) for ml, mp, _ in marginal],
               routing="D-mod-K: leaf up port toward destination LID d is 33 + d mod %d" % f.nspines,
               injected=truth,
               noise=dict(background_failed_jobs=njobs_bg, by_domain=counts,
                          background_failure_rate=round(njobs_bg / n, 4),
                          injected_failed_jobs=len(fault_of_job),
                          fabric_looking_background=sum(1 for b in background if b["cause"].split(".")[0] in ("gpu", "node", "network")),
                          harmless_nvlink_xid145=nvl_noise),
               background=background)
    with open(os.path.join(a.out, "truth.json"), "w") as fh:
        json.dump(doc, fh, indent=1)
    with open(os.path.join(a.out, "jobs.json"), "w") as fh:
        json.dump({j["id"]: j["hosts"] for j in jobs}, fh)
    print("fleet: %d hosts, %d leaves, %d spines, %d NVLink domains; %d jobs (%d failed by background causes, %d by injected faults) -> %s"
          % (len(f.hosts), len(f.leaves), len(f.spines), f.racks, n, njobs_bg, len(fault_of_job), a.out), file=sys.stderr)


if __name__ == "__main__":
    main()
