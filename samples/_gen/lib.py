"""Helpers that render realistic log lines for the sample bundles.

Deterministic: every bundle seeds its own random.Random, so re-running gen.py
reproduces the committed files byte for byte.
"""
import datetime as dt
import os
import random
from zoneinfo import ZoneInfo

UTC = dt.timezone.utc
SAMPLES = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DASHBOARD_BUNDLES = os.path.join(os.path.dirname(SAMPLES), "tests", "dashboard", "bundles")

PCI8 = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]   # HGX H100 8-GPU bus numbers
PCI4 = ["01", "41", "81", "c1"]                           # 4-GPU boxes
PY = "/usr/local/lib/python3.10/dist-packages"


def ts(s):
    return dt.datetime.fromisoformat(s).replace(tzinfo=UTC)


def sec(x):
    return dt.timedelta(seconds=x)


def iso(t):
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def slurm_ts(t, tz="UTC"):
    return t.astimezone(ZoneInfo(tz)).strftime("%Y-%m-%dT%H:%M:%S")


def pylog_ts(t, tz="UTC"):
    l = t.astimezone(ZoneInfo(tz))
    return l.strftime("%Y-%m-%d %H:%M:%S") + ",%03d" % (l.microsecond // 1000)


def c10_ts(t, rnd, tz="UTC"):
    """c10 logger: month unpadded, day padded, nanoseconds."""
    l = t.astimezone(ZoneInfo(tz))
    return "%d%02d %s.%06d%03d" % (l.month, l.day, l.strftime("%H:%M:%S"), l.microsecond, rnd.randint(0, 999))


def glog_ts(t, tz="UTC"):
    l = t.astimezone(ZoneInfo(tz))
    return "%02d%02d %s.%06d" % (l.month, l.day, l.strftime("%H:%M:%S"), l.microsecond)


def hostlist(nodes):
    """gpu-a01,gpu-a02,gpu-a04 -> gpu-a[01-02,04] (Slurm compressed form)."""
    import re
    groups = {}
    order = []
    for n in nodes:
        m = re.match(r"^(.*?)(\d+)$", n)
        p, d = (m.group(1), m.group(2)) if m else (n, "")
        if p not in groups:
            groups[p] = []
            order.append(p)
        groups[p].append(d)
    out = []
    for p in order:
        ds = groups[p]
        if len(ds) == 1:
            out.append(p + ds[0])
            continue
        w = len(ds[0])
        nums = sorted(int(x) for x in ds)
        ranges = []
        s = e = nums[0]
        for x in nums[1:]:
            if x == e + 1:
                e = x
            else:
                ranges.append((s, e))
                s = e = x
        ranges.append((s, e))
        parts = [("%0*d" % (w, a)) if a == b else ("%0*d-%0*d" % (w, a, w, b)) for a, b in ranges]
        out.append(p + "[" + ",".join(parts) + "]")
    return ",".join(out)


class Log:
    """Entries with a time used for ordering; rendering decides what is printed."""

    def __init__(self):
        self.entries = []
        self.n = 0

    def add(self, t, text):
        self.entries.append((t, self.n, text))
        self.n += 1

    def lines(self):
        out = []
        for _, _, text in sorted(self.entries, key=lambda e: (e[0], e[1])):
            out.extend(text.split("\n"))
        return out


class KLog(Log):
    """Kernel / system log of one host, in one of the collector shapes of FORMATS.md §1.1."""

    def __init__(self, host, style, boot=None, tz="UTC", rnd=None):
        super().__init__()
        self.host, self.style, self.boot, self.tz = host, style, boot, tz
        self.rnd = rnd or random.Random(host)

    def k(self, t, msg, prog="kernel"):
        """Add a message; prog != kernel only for syslog/iso styles."""
        if self.style == "dmesg":
            d = (t - self.boot).total_seconds()
            line = "[%5d.%06d] %s" % (int(d), int(round((d - int(d)) * 1e6)) % 1000000, msg)
        elif self.style == "dmesgT":
            l = t.astimezone(ZoneInfo(self.tz))
            line = "[%s %s %2d %s %d] %s" % (l.strftime("%a"), l.strftime("%b"), l.day, l.strftime("%H:%M:%S"), l.year, msg)
        elif self.style == "syslog":
            l = t.astimezone(ZoneInfo(self.tz))
            line = "%s %2d %s %s %s: %s" % (l.strftime("%b"), l.day, l.strftime("%H:%M:%S"), self.host, prog, msg)
        elif self.style == "iso":
            l = t.astimezone(ZoneInfo(self.tz))
            off = l.strftime("%z")
            line = "%s.%06d%s:%s %s %s: %s" % (l.strftime("%Y-%m-%dT%H:%M:%S"), l.microsecond, off[:3], off[3:], self.host, prog, msg)
        else:
            raise ValueError(self.style)
        if self.style in ("dmesg", "dmesgT") and prog != "kernel":
            return  # dmesg only carries kernel messages
        self.add(t, line)

    def block(self, t, msgs, step=0.000031):
        for i, m in enumerate(msgs):
            self.k(t + sec(i * step), m)

    def noise(self, t0, t1, n, extra=()):
        pool = KNOISE + list(extra)
        for i in range(n):
            t = t0 + sec(self.rnd.uniform(0, (t1 - t0).total_seconds()))
            prog, msg = self.rnd.choice(pool)
            msg = msg.format(host=self.host, n=self.rnd.randint(100, 9999), port=self.rnd.randint(30000, 60000),
                             cpu=self.rnd.randint(0, 95), pid=self.rnd.randint(2000, 400000))
            self.k(t, msg, prog)


KNOISE = [
    ("kernel", "nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, skipping further processing"),
    ("kernel", "perf: interrupt took too long (2510 > 2500), lowering kernel.perf_event_max_sample_rate to 79500"),
    ("kernel", "TCP: request_sock_TCP: Possible SYN flooding on port 29500. Sending cookies.  Check SNMP counters."),
    ("kernel", "workqueue: ib_cache_event_task [ib_core] hogged CPU for >10000us 4 times, consider switching to WQ_UNBOUND"),
    ("kernel", "kauditd_printk_skb: {n} callbacks suppressed"),
    ("kernel", "hrtimer: interrupt took 1{n} ns"),
    ("kernel", "docker0: port 1(veth{n}a) entered forwarding state"),
    ("kernel", "IPv6: ADDRCONF(NETDEV_CHANGE): veth{n}b: link becomes ready"),
    ("systemd[1]", "Started Session {n} of User root."),
    ("systemd[1]", "Starting Cleanup of Temporary Directories..."),
    ("systemd[1]", "Finished Cleanup of Temporary Directories."),
    ("sshd[{pid}]", "Accepted publickey for svc-monitor from 10.1.0.21 port {port} ssh2: ED25519 SHA256:9fG1yQ0fdG3mYb7Zl0Xk4p0"),
    ("nvidia-persistenced[1833]", "Started (1833)"),
    ("slurmd[2211]", "slurmd: launch task StepId={n}.0 request from UID:1000 GID:1000 HOST:10.1.0.5 PORT:{port}"),
    ("chronyd[1502]", "Selected source 10.1.0.2 (ntp1.cluster)"),
    ("dcgm-exporter[4102]", "level=info msg=\"Collecting metrics\" interval=30s"),
]


def boot_lines(kl, t, pcis, driver="550.90.07"):
    """A few lines printed when the driver loaded (early in the boot)."""
    kl.k(t, "nvidia: module license 'NVIDIA' taints kernel.")
    kl.k(t + sec(0.01), "nvidia-nvlink: Nvlink Core is being initialized, major device number 510")
    for i, p in enumerate(pcis):
        kl.k(t + sec(0.02 + i * 0.4), "nvidia 0000:%s:00.0: enabling device (0000 -> 0002)" % p)
    kl.k(t + sec(3.5), "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  %s  Fri Jun 14 17:49:26 UTC 2024" % driver)
    kl.k(t + sec(3.6), "nvidia-uvm: Loaded the UVM driver, major device number 508.")


# ---------------------------------------------------------------------------
# Training job output

NCHAN = 8                 # NCCL channels printed per rank at init (verbose)
RANK_NOISE_LINES = 240    # ordinary per-rank chatter between job start and the failure (see Train.rank_noise)

TORCH_WARNINGS = [
    PY + "/torch/utils/checkpoint.py:464: UserWarning: torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
    "In version 2.4 we will raise an exception if use_reentrant is not passed.\n  warnings.warn(",
    PY + "/torch/nn/modules/module.py:1747: FutureWarning: `torch.cuda.amp.autocast(args...)` is deprecated. "
    "Please use `torch.amp.autocast('cuda', args...)` instead.\n  with torch.cuda.amp.autocast(enabled=self.fp16):",
    PY + "/transformer_engine/pytorch/attention.py:5012: UserWarning: flash-attn v3 may provide important feature support or performance "
    "improvement. Please install flash-attn v3 by\n  warnings.warn(",
]


# The first frames of every torchrun traceback (ChildFailedError, SignalException).
TORCHRUN_TRACEBACK_HEAD = [
    "Traceback (most recent call last):",
    '  File "/usr/local/bin/torchrun", line 8, in <module>',
    "    sys.exit(main())",
    '  File "%s/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper' % PY,
    "    return f(*args, **kwargs)",
    '  File "%s/torch/distributed/run.py", line 919, in main' % PY,
    "    run(args)",
    '  File "%s/torch/distributed/run.py", line 910, in run' % PY,
    "    elastic_launch(",
    '  File "%s/torch/distributed/launcher/api.py", line 138, in __call__' % PY,
    "    return launch_agent(self._config, self._entrypoint, list(args))",
]


class Train:
    """A torchrun job: one agent per node, `gpn` workers per node."""

    def __init__(self, jobid, nodes, gpn, start, seed, timeout_ms=600000, nccl="2.21.5", tz="UTC",
                 script="train.py", net="IB", ipbase="10.42", pci=None, model_numel=160672064, chatty=True):
        self.jobid, self.nodes, self.gpn, self.start = jobid, nodes, gpn, start
        self.rnd = random.Random(seed)
        self.timeout_ms, self.nccl, self.tz, self.script, self.net = timeout_ms, nccl, tz, script, net
        self.world = len(nodes) * gpn
        self.rank_node = {r: nodes[r // gpn] for r in range(self.world)}
        self.pci = pci or (PCI8 if gpn > 4 else PCI4)
        self.agent_pid = {}
        self.pid = {}
        self.ip = {}
        for i, n in enumerate(nodes):
            base = self.rnd.randint(20000, 3900000)
            self.agent_pid[n] = base
            for l in range(gpn):
                self.pid[i * gpn + l] = base + 29 + l
            self.ip[n] = "%s.%d.%d" % (ipbase, self.rnd.randint(1, 30), 10 + self.rnd.randint(0, 200))
        self.logs = {n: Log() for n in nodes}
        self.commid = "0x%016x" % self.rnd.getrandbits(64)
        self.numel = model_numel
        self.chatty = chatty  # False: the short pre-2026-12 shape (no per-channel NCCL lines, no per-rank chatter)

    # -- small formatters
    def node_of(self, r):
        return self.rank_node[r]

    def local(self, r):
        return r % self.gpn

    def nccl_pfx(self, r, tid=None):
        n = self.node_of(r)
        return "%s:%d:%d [%d]" % (n, self.pid[r], tid if tid else self.pid[r] + 180 + self.local(r), self.local(r))

    def c10(self, r, t, level, where, msg):
        return "[rank%d]:[%s%s %s] %s" % (r, level, c10_ts(t, self.rnd, self.tz), where, msg)

    def elastic(self, node, t, level, where, msg):
        return "%s%s %d %s] %s" % (level, glog_ts(t, self.tz), self.agent_pid[node], where, msg)

    def add(self, node, t, text):
        self.logs[node].add(t, text)

    # -- phases
    def banner(self, node, t):
        w = "torch/distributed/run.py:793"
        for m in ["", "*" * 41,
                  "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed. ",
                  "*" * 41]:
            self.add(node, t, self.elastic(node, t, "W", w, m))

    def nccl_init(self, node, t, verbose=True):
        i = self.nodes.index(node)
        nn = len(self.nodes)
        for l in range(self.gpn):
            r = i * self.gpn + l
            tt = t + sec(0.05 * l)
            p = "%s:%d:%d [%d]" % (node, self.pid[r], self.pid[r], l)
            q = self.nccl_pfx(r)
            busid = self.pci[l] + "000"
            L = []
            if r == 0:
                L.append("%s NCCL INFO Bootstrap : Using ib0:%s<0>" % (p, self.ip[node]))
                L.append("%s NCCL INFO cudaDriverVersion 12040" % p)
                L.append("NCCL version %s+cuda12.4" % self.nccl)
            if l == 0 or verbose:
                if self.net == "IB":
                    L.append("%s NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB ; OOB ib0:%s<0>" % (q, self.ip[node]))
                    L.append("%s NCCL INFO Using network IB" % q)
                else:
                    L.append("%s NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE ; OOB eth0:%s<0>" % (q, self.ip[node]))
                    L.append("%s NCCL INFO Using network IB" % q)
            L.append("%s NCCL INFO comm 0x%x rank %d nranks %d cudaDev %d nvmlDev %d busId %s commId %s - Init START"
                     % (q, 0x55d0c0000000 + r * 0x1f0000, r, self.world, l, l, busid, self.commid))
            if verbose:
                L.append("%s NCCL INFO Setting affinity for GPU %d to ffffffff,00000000,ffffffff" % (q, l))
                L.append("%s NCCL INFO comm 0x%x rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL 0"
                         % (q, 0x55d0c0000000 + r * 0x1f0000, r, self.world, nn, self.gpn, l))
                nxt = (r + 1) % self.world
                L.append("%s NCCL INFO Channel 00/0 : %d[%d] -> %d[%d] via %s" % (
                    q, r, l, nxt, nxt % self.gpn, "P2P/CUMEM/read" if self.node_of(nxt) == node else "NET/IB/0/GDRDMA"))
                if self.chatty:
                    L += self.nccl_channels(node, r, l, q)
                L.append("%s NCCL INFO Connected all rings" % q)
                L.append("%s NCCL INFO Connected all trees" % q)
            if verbose and self.chatty:
                L.append("%s NCCL INFO threadThresholds 8/8/64 | %d/8/64 | 512 | 512" % (q, 8 * self.world))
                L.append("%s NCCL INFO %d coll channels, 0 collnet channels, 0 nvls channels, %d p2p channels, 2 p2p channels per peer"
                         % (q, NCHAN, NCHAN))
                L.append("%s NCCL INFO CC Off, Multi-GPU CC Off, workFifoBytes 1048576" % q)
                L.append("%s NCCL INFO TUNER/Plugin: Plugin load returned 11 : libnccl-tuner.so: cannot open shared object file: No such file or directory"
                         % q)
                L.append("%s NCCL INFO TUNER/Plugin: Using internal tuner plugin." % q)
            L.append("%s NCCL INFO comm 0x%x rank %d nranks %d cudaDev %d nvmlDev %d busId %s commId %s - Init COMPLETE"
                     % (q, 0x55d0c0000000 + r * 0x1f0000, r, self.world, l, l, busid, self.commid))
            self.add(node, tt, "\n".join(L))

    def nccl_channels(self, node, r, l, q):
        """The per-channel ring/tree lines NCCL_DEBUG=INFO prints at init (deterministic, no rnd)."""
        L = ["%s NCCL INFO NCCL_P2P_LEVEL set by environment to NVL" % q,
             "%s NCCL INFO P2P Chunksize set to 524288" % q]
        nxt, prv = (r + 1) % self.world, (r - 1) % self.world
        up = -1 if r == 0 else (r - 1) // 2
        dn = (2 * r + 1) if 2 * r + 1 < self.world else -1
        for c in range(NCHAN):
            L.append("%s NCCL INFO Channel %02d/%02d :    %s" % (q, c, NCHAN, " ".join(
                str((r + k) % self.world) for k in range(min(self.world, 8)))))
        for c in range(NCHAN):
            L.append("%s NCCL INFO Trees [%d] %d/-1/-1->%d->%d" % (q, c, dn, r, up))
        for c in range(NCHAN):
            via = "P2P/CUMEM/read" if self.node_of(nxt) == node else "NET/IB/%d/GDRDMA" % (c % 4)
            L.append("%s NCCL INFO Channel %02d/0 : %d[%d] -> %d[%d] via %s" % (q, c, r, l, nxt, nxt % self.gpn, via))
        for c in range(0, NCHAN, 2):
            via = "P2P/CUMEM/read" if self.node_of(prv) == node else "NET/IB/%d/GDRDMA" % (c % 4)
            L.append("%s NCCL INFO Channel %02d/0 : %d[%d] -> %d[%d] via %s" % (q, c, prv, prv % self.gpn, r, l, via))
        return L

    def rank_noise(self, t0, t1, lines_per_rank=RANK_NOISE_LINES):
        """Ordinary per-rank training chatter between t0 and t1 on every rank (own RNG: the rest of the
        story draws from self.rnd and must not shift)."""
        if t1 <= t0 or not self.chatty:
            return
        span = (t1 - t0).total_seconds()
        for r in range(self.world):
            n = self.node_of(r)
            rnd = random.Random("noise-%s-%d" % (self.jobid, r))
            t = t0 + sec(rnd.uniform(0.5, 3.0))
            for k, w in enumerate(TORCH_WARNINGS):
                self.add(n, t + sec(0.001 * k), "\n".join("[rank%d]:%s" % (r, x) for x in w.split("\n")))
            step = span / lines_per_rank
            shard = rnd.randint(100, 900)
            for k in range(lines_per_rank):
                tt = t0 + sec(5 + k * step + rnd.uniform(0, step * 0.5))
                if tt >= t1:
                    break
                kind = k % 4
                if kind == 0:
                    shard += 1
                    msg = "dataloader - shard %05d: %d samples ready (prefetch %.1f ms)" % (shard, 4096, rnd.uniform(2, 40))
                elif kind == 1:
                    msg = "trainer - fwd %.0f ms | bwd %.0f ms | opt %.0f ms" % (rnd.uniform(300, 340), rnd.uniform(640, 700), rnd.uniform(40, 60))
                elif kind == 2:
                    msg = "memory - allocated %.2f GiB | reserved %.2f GiB | peak %.2f GiB" % (
                        rnd.uniform(51, 53), rnd.uniform(70, 72), rnd.uniform(68, 69))
                else:
                    msg = "throughput - %d tok/s/gpu | mfu %.1f%% | dl_wait %.1f ms" % (
                        rnd.randint(5900, 6300), rnd.uniform(41, 44), rnd.uniform(0.2, 3.0))
                self.add(n, tt, "[rank%d]:%s - INFO - %s" % (r, pylog_ts(tt, self.tz), msg))

    def iterations(self, node, t0, t1, period, it0, every=1, total=100000, fmt="megatron", loss0=2.4):
        t = t0
        it = it0
        while t < t1:
            if it % every == 0:
                loss = loss0 - 0.00002 * it + self.rnd.uniform(-0.03, 0.03)
                ms = period * 1000 * self.rnd.uniform(0.98, 1.03)
                if fmt == "megatron":
                    line = (" [%s] iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): %.1f | "
                            "learning rate: 2.990E-04 | global batch size:  1024 | lm loss: %.6E | loss scale: 1.0 | "
                            "grad norm: %.3f | number of skipped iterations:   0 | number of nan iterations:   0 |"
                            % (t.astimezone(ZoneInfo(self.tz)).strftime("%Y-%m-%d %H:%M:%S"), it, total, it * 1024, ms, loss,
                               self.rnd.uniform(0.8, 1.3)))
                else:
                    line = ("%s - INFO - trainer - step %d/%d | loss %.4f | lr 2.99e-04 | grad_norm %.2f | tok/s %d | %.2f s/it"
                            % (pylog_ts(t, self.tz), it, total, loss, self.rnd.uniform(0.8, 1.3),
                               self.rnd.randint(380000, 420000), ms / 1000))
                self.add(node, t, line)
            t += sec(period)
            it += 1
        return it

    def watchdog(self, r, t, seq, op="ALLREDUCE", numel=None, ran_ms=None, last_enq=None, last_comp=None, pg="0 (default_pg)"):
        numel = self.numel if numel is None else numel
        ran = ran_ms or (self.timeout_ms + self.rnd.randint(3, 90))
        last_enq = seq if last_enq is None else last_enq
        last_comp = seq - 1 if last_comp is None else last_comp
        desc = "WorkNCCL(SeqNum=%d, OpType=%s, NumelIn=%d, NumelOut=%d, Timeout(ms)=%d)" % (seq, op, numel, numel, self.timeout_ms)
        wd = "[Rank %d] Watchdog caught collective operation timeout: %s ran for %d milliseconds before timing out." % (r, desc, ran)
        L = [self.c10(r, t, "E", "ProcessGroupNCCL.cpp:607", wd),
             self.c10(r, t + sec(0.0002), "E", "ProcessGroupNCCL.cpp:1664",
                      "[PG %s Rank %d] Exception (either an error or timeout) detected by watchdog at work: %d, last enqueued NCCL work: %d, last completed NCCL work: %d."
                      % (pg, r, seq, last_enq, last_comp)),
             self.c10(r, t + sec(0.0003), "E", "ProcessGroupNCCL.cpp:621",
                      "[Rank %d] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data." % r),
             self.c10(r, t + sec(0.0004), "E", "ProcessGroupNCCL.cpp:627",
                      "[Rank %d] To avoid data inconsistency, we are taking the entire process down." % r),
             self.c10(r, t + sec(0.0051), "E", "ProcessGroupNCCL.cpp:1515",
                      "[PG %s Rank %d] Process group watchdog thread terminated with exception: %s" % (pg, r, wd))]
        L += self.c10_frames(r, "checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:609")
        L.append("terminate called after throwing an instance of 'c10::DistBackendError'")
        L.append("  what():  [PG %s Rank %d] Process group watchdog thread terminated with exception: %s" % (pg, r, wd))
        self.add(self.node_of(r), t, "\n".join(L))

    def c10_frames(self, r, where):
        b = 0x7f00_0000_0000 + self.rnd.randint(0, 0xffffff) * 0x1000
        return ["[rank%d]:Exception raised from %s (most recent call first):" % (r, where),
                "[rank%d]:frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x%x in %s/torch/lib/libc10.so)" % (r, b + 0x96446, PY),
                "[rank%d]:frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >) + 0x1d2 (0x%x in %s/torch/lib/libtorch_cuda.so)" % (r, b + 0x2253772, PY),
                "[rank%d]:frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x%x in %s/torch/lib/libtorch_cuda.so)" % (r, b + 0x225a1b3, PY),
                "[rank%d]:" % r]

    def async_error(self, r, t, seq, msg, last_err, op="ALLREDUCE"):
        """A collective raising an async NCCL error (remote error, cuda failure)."""
        numel = self.numel
        L = [self.c10(r, t, "E", "ProcessGroupNCCL.cpp:542",
                      "[Rank %d] Collective WorkNCCL(SeqNum=%d, OpType=%s, NumelIn=%d, NumelOut=%d, Timeout(ms)=%d) raised the following async exception: NCCL error: %s, NCCL version %s"
                      % (r, seq, op, numel, numel, self.timeout_ms, msg, self.nccl)),
             "[rank%d]:%s" % (r, {"remote process exited or there was a network error": "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
                                   "unhandled cuda error (run with NCCL_DEBUG=INFO for details)": "ncclUnhandledCudaError: Call to CUDA function failed.",
                                   "unhandled system error (run with NCCL_DEBUG=INFO for details)": "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. "}.get(msg, msg)),
             "[rank%d]:Last error:" % r,
             "[rank%d]:%s" % (r, last_err)]
        L += self.c10_frames(r, "checkNCCLErrors at ../torch/csrc/distributed/c10d/NCCLUtils.cpp:275")[:4]
        L.append("terminate called after throwing an instance of 'c10::DistBackendError'")
        L.append("  what():  [PG 0 (default_pg) Rank %d] Process group watchdog thread terminated with exception: NCCL error: %s, NCCL version %s" % (r, msg, self.nccl))
        self.add(self.node_of(r), t, "\n".join(L))

    def traceback(self, r, t, frames, exc):
        """Python traceback printed by a worker, [rankN]: prefixed."""
        L = ["[rank%d]: Traceback (most recent call last):" % r]
        for f, line, fn, code in frames:
            L.append('[rank%d]:   File "%s", line %d, in %s' % (r, f, line, fn))
            L.append("[rank%d]:     %s" % (r, code))
        for e in exc.split("\n"):
            L.append("[rank%d]: %s" % (r, e))
        self.add(self.node_of(r), t, "\n".join(L))

    def agent_fail(self, node, t, failures, sigterm_locals=(), sigterm_at=None):
        """failures: list of (local_rank, exitcode, when) ; first is the root cause for this agent."""
        i = self.nodes.index(node)
        L = []
        tt = sigterm_at or t
        for l in sigterm_locals:
            self.add(node, tt, self.elastic(node, tt, "W", "torch/distributed/elastic/multiprocessing/api.py:897",
                                            "Sending process %d closing signal SIGTERM" % self.pid[i * self.gpn + l]))
        l0, ec0, w0 = failures[0]
        self.add(node, t, self.elastic(node, t, "E", "torch/distributed/elastic/multiprocessing/api.py:869",
                                       "failed (exitcode: %d) local_rank: %d (pid: %d) of binary: /usr/bin/python3" % (ec0, l0, self.pid[i * self.gpn + l0])))
        L += TORCHRUN_TRACEBACK_HEAD + [
              '  File "%s/torch/distributed/launcher/api.py", line 269, in launch_agent' % PY,
              "    raise ChildFailedError(",
              "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
              "=" * 60, "%s FAILED" % self.script, "-" * 60, "Failures:"]

        def blk(idx, l, ec, w):
            r = i * self.gpn + l
            b = ["[%d]:" % idx,
                 "  time      : %s" % w.astimezone(ZoneInfo(self.tz)).strftime("%Y-%m-%d_%H:%M:%S"),
                 "  host      : %s" % node,
                 "  rank      : %d (local_rank: %d)" % (r, l),
                 "  exitcode  : %d (pid: %d)" % (ec, self.pid[r]),
                 "  error_file: <N/A>"]
            if ec < 0:
                name = {-6: "SIGABRT", -9: "SIGKILL", -15: "SIGTERM", -11: "SIGSEGV", -7: "SIGBUS"}[ec]
                b.append("  traceback : Signal %d (%s) received by PID %d" % (-ec, name, self.pid[r]))
            else:
                b.append("  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")
            return b

        if len(failures) == 1:
            L.append("  <NO_OTHER_FAILURES>")
        else:
            for k, (l, ec, w) in enumerate(failures[1:]):
                L += blk(k + 1, l, ec, w)
        L += ["-" * 60, "Root Cause (first observed failure):"]
        L += blk(0, l0, ec0, w0)
        L.append("=" * 60)
        self.add(node, t + sec(0.3), "\n".join(L))

    def render(self, node):
        return self.logs[node].lines()


# ---------------------------------------------------------------------------
# Slurm records


def sacct(jobid, name, part, nodes, start, end, rows, tz="UTC", account="llm", cpus_per_node=96):
    """rows: list of (suffix, jobname, state, exitcode, nodes_or_None, end_or_None)."""
    hdr = "JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode|Start|End|Elapsed|NodeList"
    out = [hdr]
    for suf, jn, st, ec, nl, en in rows:
        nl = nl or nodes
        en = en or end
        el = int((en - start).total_seconds())
        elapsed = "%02d:%02d:%02d" % (el // 3600, el % 3600 // 60, el % 60)
        if el >= 86400:
            elapsed = "%d-%02d:%02d:%02d" % (el // 86400, el % 86400 // 3600, el % 3600 // 60, el % 60)
        out.append("|".join([str(jobid) + suf, jn or name, part if not suf else "", account, str(cpus_per_node * len(nl)),
                             st, ec, slurm_ts(start, tz), slurm_ts(en, tz), elapsed, hostlist(nl)]))
    return out


def scontrol(jobid, name, user, uid, state, reason, exit_code, start, end, nodes, part="gpu", tz="UTC",
             timelimit="2-00:00:00", gpn=8, derived="0:0", restarts=0, requeue=0, cmd="/home/{u}/jobs/train.sbatch"):
    el = int((end - start).total_seconds())
    rt = "%02d:%02d:%02d" % (el // 3600, el % 3600 // 60, el % 60)
    if el >= 86400:
        rt = "%d-%s" % (el // 86400, "%02d:%02d:%02d" % (el % 86400 // 3600, el % 3600 // 60, el % 60))
    sub = start - sec(431)
    nl = hostlist(nodes)
    return ["JobId=%s JobName=%s" % (jobid, name),
            "   UserId=%s(%d) GroupId=%s(%d) MCS_label=N/A" % (user, uid, user, uid),
            "   Priority=10%04d Nice=0 Account=llm QOS=normal" % (int(jobid) % 9999),
            "   JobState=%s Reason=%s Dependency=(null)" % (state, reason),
            "   Requeue=%d Restarts=%d BatchFlag=1 Reboot=0 ExitCode=%s" % (requeue, restarts, exit_code),
            "   DerivedExitCode=%s" % derived,
            "   RunTime=%s TimeLimit=%s TimeMin=N/A" % (rt, timelimit),
            "   SubmitTime=%s EligibleTime=%s" % (slurm_ts(sub, tz), slurm_ts(sub, tz)),
            "   AccrueTime=%s" % slurm_ts(sub + sec(1), tz),
            "   StartTime=%s EndTime=%s Deadline=N/A" % (slurm_ts(start, tz), slurm_ts(end, tz)),
            "   PreemptEligibleTime=%s PreemptTime=None" % slurm_ts(start, tz),
            "   SuspendTime=None SecsPreSuspend=0 LastSchedEval=%s Scheduler=Main" % slurm_ts(start, tz),
            "   Partition=%s AllocNode:Sid=login01:2214781" % part,
            "   ReqNodeList=(null) ExcNodeList=(null)",
            "   NodeList=%s" % nl,
            "   BatchHost=%s" % nodes[0],
            "   NumNodes=%d NumCPUs=%d NumTasks=%d CPUs/Task=96 ReqB:S:C:T=0:0:*:*" % (len(nodes), 96 * len(nodes), len(nodes)),
            "   ReqTRES=cpu=%d,mem=%dG,node=%d,billing=%d,gres/gpu=%d" % (96 * len(nodes), 1800 * len(nodes), len(nodes), 96 * len(nodes), gpn * len(nodes)),
            "   AllocTRES=cpu=%d,mem=%dG,node=%d,billing=%d,gres/gpu=%d" % (96 * len(nodes), 1800 * len(nodes), len(nodes), 96 * len(nodes), gpn * len(nodes)),
            "   Socks/Node=* NtasksPerN:B:S:C=1:0:*:* CoreSpec=*",
            "   MinCPUsNode=96 MinMemoryNode=1800G MinTmpDiskNode=0",
            "   Features=(null) DelayBoot=00:00:00",
            "   OverSubscribe=NO Contiguous=0 Licenses=(null) Network=(null)",
            "   Command=%s" % cmd.format(u=user),
            "   WorkDir=/home/%s/jobs" % user,
            "   StdErr=/home/%s/jobs/logs/%s-%s.err" % (user, name, jobid),
            "   StdIn=/dev/null",
            "   StdOut=/home/%s/jobs/logs/%s-%s.out" % (user, name, jobid),
            "   TresPerNode=gres/gpu:%d" % gpn,
            ""]


# ---------------------------------------------------------------------------
# Bundle writer


def yq(v):
    """Render a scalar for YAML."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, dt.datetime):
        return iso(v)
    s = str(v)
    if s == "" or any(c in s for c in ":#{}[],&*?|<>=!%@`'\"") or s[0] in "-0123456789" or s.lower() in ("null", "true", "false", "yes", "no", "on", "off"):
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return s


class Bundle:
    def __init__(self, name, root=SAMPLES):
        self.name = name
        self.dir = os.path.join(root, name)
        self.sources = []
        os.makedirs(self.dir, exist_ok=True)

    def write(self, rel, lines, newline="\n", raw=None):
        p = os.path.join(self.dir, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if raw is not None:
            data = raw
        else:
            data = (newline.join(lines) + newline).encode("utf-8")
        with open(p, "wb") as f:
            f.write(data)

    def source(self, path, kind, **kw):
        d = {"path": path, "kind": kind}
        d.update(kw)
        self.sources.append(d)

    def workload(self, **w):
        order = ["id", "scheduler", "cluster", "attempt", "step", "name", "user", "queue", "state", "exit_code",
                 "reason", "start", "end", "nodes", "ranks", "labels"]
        L = ["workload:"]
        for k in order + [k for k in w if k not in order]:
            if k not in w:
                continue
            v = w[k]
            if k == "nodes":
                L.append("  nodes: [%s]" % ", ".join(v))
            elif k == "ranks":
                L.append("  ranks: {%s}" % ", ".join("%d: %s" % (r, n) for r, n in sorted(v.items())))
            elif k == "labels":
                L.append("  labels: {%s}" % ", ".join("%s: %s" % (a, yq(b)) for a, b in v.items()))
            elif k == "id":
                L.append('  id: "%s"' % v)
            else:
                L.append("  %s: %s" % (k, yq(v)))
        L.append("sources:")
        for s in self.sources:
            first = True
            for k in ["path", "kind", "node", "rank", "local_rank", "gpu", "pod", "container", "namespace",
                      "boot_time", "timezone", "note"]:
                if k in s:
                    L.append("  %s %s: %s" % ("-" if first else " ", k, yq(s[k])))
                    first = False
        self.write("workload.yaml", L)

    def expected(self, outcome, quality, root_node, story, root_symptom=None, affected=None, explained=None):
        domain = outcome.split(".")[0]
        L = ["outcome: %s" % outcome, "domain: %s" % domain, "quality: %s" % quality,
             "root_node: %s" % yq(root_node)]
        if root_symptom:
            L.append("root_symptom: %s" % root_symptom)
        if affected is not None:
            L.append("affected_nodes: [%s]" % ", ".join(affected))
        if explained:
            L.append("explained_includes: [%s]" % ", ".join(explained))
        L.append("story: >")
        import textwrap
        for ln in textwrap.wrap(" ".join(story.split()), 100):
            L.append("  " + ln)
        self.write("expected.yaml", L)


def merged_srun_log(tr, task_of_node=None):
    """srun -l style: one file, each line prefixed with the task id of its node."""
    m = Log()
    for i, n in enumerate(tr.nodes):
        task = i if task_of_node is None else task_of_node[n]
        for t, k, text in tr.logs[n].entries:
            m.add(t, "\n".join("%d: %s" % (task, x) for x in text.split("\n")))
    return m
