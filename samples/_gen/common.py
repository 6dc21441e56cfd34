"""Shared story pieces built on lib.py."""
from lib import *  # noqa


def start_job(tr, S, verbose=True):
    for n in tr.nodes:
        tr.banner(n, S + sec(2.4 + tr.rnd.uniform(0, 0.4)))
        tr.nccl_init(n, S + sec(38 + tr.rnd.uniform(0, 2)), verbose=verbose)
    r0 = tr.nodes[0]
    tr.add(r0, S + sec(21), "%s - INFO - trainer - world_size=%d, tp=1, pp=1, dp=%d, micro_batch=4, global_batch=1024, seq_len=4096"
           % (pylog_ts(S + sec(21), tr.tz), tr.world, tr.world))
    tr.add(r0, S + sec(34), "%s - INFO - checkpoint - resuming from /ckpt/%s/latest (iteration 0 if absent)"
           % (pylog_ts(S + sec(34), tr.tz), tr.jobid))


def train(tr, S, F, period=2.0, every=50, it0=1, fmt="megatron", max_lines=40):
    import math
    every = max(every, int(math.ceil((F - S).total_seconds() / period / max_lines)))
    tr.rank_noise(S + sec(60), F)
    return tr.iterations(tr.nodes[0], S + sec(70), F, period, it0, every=every, fmt=fmt)


def cascade(tr, seq, t_enq, skip_ranks=(), skip_nodes=(), exitcode=-6, gap=2.5, last_comp=None, op="ALLREDUCE", numel=None):
    """Every rank not skipped hits the watchdog at t_enq + timeout; its agent then reports the failures.
    Returns the time the last agent finished."""
    last = t_enq
    for n in tr.nodes:
        if n in skip_nodes:
            continue
        i = tr.nodes.index(n)
        fails = []
        for l in range(tr.gpn):
            r = i * tr.gpn + l
            if r in skip_ranks:
                continue
            t = t_enq + sec(tr.timeout_ms / 1000.0 + tr.rnd.uniform(0.01, 0.09))
            tr.watchdog(r, t, seq, op=op, numel=numel, last_comp=last_comp)
            fails.append((l, exitcode, t + sec(0.6)))
        if not fails:
            continue
        fails.sort(key=lambda f: f[2])
        ta = max(f[2] for f in fails) + sec(gap)
        tr.agent_fail(n, ta, fails)
        last = max(last, ta)
    return last


def xid_header(kl, t, pci, uuid, serial):
    kl.k(t, "NVRM: GPU at PCI:0000:%s:00: %s" % (pci, uuid))
    kl.k(t, "NVRM: GPU Board Serial Number: %s" % serial)


def std_kernel(tr, node, style, S, E, boot=None, tz="UTC", n=18, drv=True):
    kl = KLog(node, style, boot=boot, tz=tz, rnd=random.Random(node + str(S)))
    if boot and style == "dmesg" and drv:
        boot_lines(kl, boot + sec(14.2), tr.pci[:tr.gpn])
    kl.noise(S - sec(1800), E + sec(240), n)
    return kl


def write_apps(b, tr, pattern="logs/{node}.log", **kw):
    for n in tr.nodes:
        p = pattern.format(node=n, job=tr.jobid)
        b.write(p, tr.render(n))
        b.source(p, "applog", node=n, **kw)


def std_sacct(b, tr, name, part, S, E, state="FAILED", ec="1:0", step_state=None, step_ec=None, step_end=None, tz="UTC", stepname="torchrun", batch_state=None, batch_ec=None):
    b.write("sacct.txt", sacct(tr.jobid, name, part, tr.nodes, S, E, [
        ("", None, state, ec, None, None), (".batch", "batch", batch_state or state, batch_ec or ec, [tr.nodes[0]], None),
        (".extern", "extern", "COMPLETED", "0:0", None, None),
        (".0", stepname, step_state or state, step_ec or ec, None, step_end)], tz=tz))
    b.source("sacct.txt", "scheduler", **({"timezone": tz} if tz != "UTC" else {}))


def peer_remote_error(tr, r, t, seq, peer_host, port, how="closed"):
    p = tr.nccl_pfx(r)
    if how == "closed":
        last = "socketProgress: Connection closed by remote peer %s<%d>" % (peer_host, port)
        tr.add(tr.node_of(r), t, "%s misc/socket.cc:49 NCCL WARN %s" % (p, last))
    elif how == "reset":
        last = "socketProgressOpt: Call to recv from %s<%d> failed : Connection reset by peer" % (peer_host, port)
        tr.add(tr.node_of(r), t, "%s misc/socket.cc:560 NCCL WARN %s" % (p, last))
    else:  # ib completion error 12 from the peer
        last = "NET/IB : Got completion from peer %s<%d> with error 12, opcode 0, len 0, vendor err 129 (Recv)" % (peer_host, port)
        tr.add(tr.node_of(r), t, "%s transport/net_ib.cc:1696 NCCL WARN %s" % (p, last))
    tr.add(tr.node_of(r), t + sec(0.001), "%s NCCL INFO transport/net.cc:1302 -> 6" % p)
    tr.add(tr.node_of(r), t + sec(0.002), "%s NCCL INFO proxy.cc:878 -> 6 [Progress Thread]" % p)
    tr.async_error(r, t + sec(0.3), seq, "remote process exited or there was a network error", last)
