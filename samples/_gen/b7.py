"""Bundles for the reasoning capabilities of issue #10 §4: evidence that is weaker, indirect or spread
out (IB errors without a port event, an implied Xid, a repeated Xid across days, Slurm teardown lines,
a barrier without a rank map, NVLS after a Fabric Manager restart, a single-node job without host
names, a Kubernetes eviction of a container over its request)."""
import json
from common import *  # noqa
from registry import bundle
from b1 import CUDA_ASYNC, TRAIN_FRAMES, slurm_out
from b3 import kernels
from b4 import sigterm_all
from b5 import pod_status
from b6 import sigterm_node, signal_exception


def start_quiet(tr, S, world_line=True):
    """torchrun banner and the trainer's first lines, no NCCL INFO output (NCCL_DEBUG=WARN)."""
    for n in tr.nodes:
        tr.banner(n, S + sec(2.4 + tr.rnd.uniform(0, 0.4)))
    r0 = tr.nodes[0]
    if world_line:
        tr.add(r0, S + sec(21), "%s - INFO - trainer - world_size=%d, tp=1, pp=1, dp=%d, micro_batch=4, global_batch=1024, seq_len=4096"
               % (pylog_ts(S + sec(21), tr.tz), tr.world, tr.world))
    tr.add(r0, S + sec(34), "%s - INFO - checkpoint - resuming from /ckpt/%s/latest (iteration 0 if absent)"
           % (pylog_ts(S + sec(34), tr.tz), tr.jobid))


def train_span(tr, S, F, period, every, fmt="megatron"):
    tr.rank_noise(S + sec(60), F)
    return tr.iterations(tr.nodes[0], S + sec(70), F, period, 1, every=every, fmt=fmt)


def fmt_hms(s):
    s = int(s)
    if s >= 3600:
        return "%d:%02d:%02d" % (s // 3600, s % 3600 // 60, s % 60)
    return "%02d:%02d" % (s // 60, s % 60)


def tqdm_line(desc, n, total, elapsed, rate_s, postfix=""):
    """One tqdm status as it lands in a log file (width-10 bar, s/it rate)."""
    if n == 0:
        return "%s:   0%%|          | 0/%d [00:00<?, ?it/s%s]" % (desc, total, postfix)
    frac = n / float(total)
    full = int(frac * 10)
    part = int((frac * 10 - full) * 8)
    bar = "\u2588" * full + (" \u258f\u258e\u258d\u258c\u258b\u258a\u2589"[part] if full < 10 else "")
    bar = bar.ljust(10)
    remaining = (total - n) * rate_s
    return "%s: %3.0f%%|%s| %d/%d [%s<%s, %5.2fs/it%s]" % (desc, frac * 100, bar, n, total, fmt_hms(elapsed),
                                                         fmt_hms(remaining), rate_s, postfix)


# ---------------------------------------------------------------------------------------------------
@bundle("ib-errors-only-no-crash")
def ib_errors_only(b):
    nodes = ["gpu-j01", "gpu-j02", "gpu-j03", "gpu-j04"]
    S, F = ts("2026-05-26T03:40:12"), ts("2026-05-26T09:18:47.300")
    tr = Train(790114, nodes, 4, S, seed=70, timeout_ms=600000, ipbase="10.47")
    start_quiet(tr, S)
    train_span(tr, S, F, period=2.3, every=60)
    seq = 88817
    gid = lambda i, l: "fe80::b83f:d203:%02x:%x%02x" % (0x50 + i, 0x1a0 + l, 0x10 + 4 * i + l)  # noqa: E731
    # rails 1 and 2 lost packets for a few seconds: retry-exceeded (12) on the QPs that were sending or
    # receiving, then flushes (5) on the other QPs of the same ranks
    hit = {"gpu-j01": [1, 2], "gpu-j02": [1, 2, 3], "gpu-j03": [1, 2]}
    peers = {"gpu-j01": "gpu-j02", "gpu-j02": "gpu-j03", "gpu-j03": "gpu-j04"}
    for n, locs in hit.items():
        i = nodes.index(n)
        for l in locs:
            r = i * tr.gpn + l
            p = tr.nccl_pfx(r)
            t = F + sec(tr.rnd.uniform(0.0, 3.5))
            peer = peers[n] if l != 3 else "gpu-j01"
            pi = nodes.index(peer)
            d = "Recv" if l % 2 else "Send"
            L = ["%s transport/net_ib.cc:2244 NCCL WARN NET/IB: Got completion from peer %s<%d> with status=12 opcode=%d len=%d vendor err 129 (%s) localGid %s remoteGids %s hca mlx5_%d"
                 % (p, tr.ip[peer], 43000 + tr.rnd.randint(0, 999), 129 if d == "Recv" else 0, 0, d, gid(i, l), gid(pi, l), l)]
            for k in range(1 + tr.rnd.randint(1, 2)):
                pk = nodes[(i + 1 + k) % len(nodes)]
                L.append("%s transport/net_ib.cc:2244 NCCL WARN NET/IB: Got completion from peer %s<%d> with status=5 opcode=0 len=0 vendor err 249 (Send) localGid %s remoteGids %s hca mlx5_%d"
                         % (p, tr.ip[pk], 43000 + tr.rnd.randint(0, 999), gid(i, l), gid(nodes.index(pk), l), l))
            tr.add(n, t, "\n".join(L))
    # the collective never completes: every rank's watchdog fires ten minutes later
    end = cascade(tr, seq, F - sec(0.8))
    for n in nodes:
        p = "logs/%s-%s.out" % (tr.jobid, n)
        b.write(p, tr.render(n))
        b.source(p, "applog", node=n)
    E = end + sec(2)
    std_sacct(b, tr, "gpt-13b-rails", "gpu", S, E, step_end=end)
    b.workload(id=str(tr.jobid), scheduler="slurm", cluster="ash3", step="%s.0" % tr.jobid, name="gpt-13b-rails", user="tnguyen",
               queue="gpu", state="FAILED", exit_code="1:0", reason="NonZeroExitCode", start=S, end=E, nodes=nodes,
               ranks=tr.rank_node)
    b.expected("network.link_flap", "probable", None, story="""
      Five and a half hours into training, within four seconds, seven ranks on gpu-j01, gpu-j02 and gpu-j03 (the
      ones using rails mlx5_1, mlx5_2 and mlx5_3) printed NCCL 'NET/IB: Got completion from peer ... with
      status=12 ... vendor err 129' (transport retry counter exceeded) followed by status=5 flushes on their other
      queue pairs. The peers are bare IP addresses of several different hosts (NCCL_DEBUG=WARN, so no init line
      maps them to a node) and the NCCL lines carry no time of their own. No rank crashed: the ALLREDUCE
      SeqNum=88817 simply never completed and all sixteen ranks hit the watchdog timeout ten minutes later. No
      kernel logs were collected, so no port DOWN/ACTIVE event confirms it, but retry-exceeded errors mid-run on
      several rails and several peers at once point at the fabric links (a flap or a switch losing packets),
      not at one node: hence probable and no node to drain. Collect the IB port counters and switch logs for
      09:18 UTC.""")


# ---------------------------------------------------------------------------------------------------
@bundle("xid45-caused-by-missing-xid")
def xid45_implied(b):
    nodes = ["gpu-e21", "gpu-e22", "gpu-e23", "gpu-e24"]
    S, F = ts("2026-06-30T20:05:31"), ts("2026-07-01T02:44:18.905")
    tr = Train(791377, nodes, 8, S, seed=71, timeout_ms=600000)
    start_job(tr, S)
    train(tr, S, F, period=3.1, every=50)
    bad_node, bad, pci = "gpu-e22", 11, "5d"   # local 3 -> PCI 5d
    seq = 7633
    te = F + sec(0.42)
    p = "gpu-e22:%d:%d [3]" % (tr.pid[bad], tr.pid[bad] + 183)
    tr.add(bad_node, te, "\n".join([
        "%s enqueue.cc:1556 NCCL WARN Cuda failure 'unspecified launch failure'" % p,
        "%s NCCL INFO enqueue.cc:2001 -> 1" % p,
        tr.c10(bad, te + sec(0.02), "E", "ProcessGroupNCCL.cpp:1515",
               "[PG 0 (default_pg) Rank 11] Process group watchdog thread terminated with exception: CUDA error: unspecified launch failure"),
        *["[rank11]:" + x for x in CUDA_ASYNC],
        "[rank11]:",
        *tr.c10_frames(bad, "c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:43")[:4],
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        "  what():  [PG 0 (default_pg) Rank 11] Process group watchdog thread terminated with exception: CUDA error: unspecified launch failure"]))
    # rank 10 shares the P2P buffers of GPU 3 and fails on its next kernel too
    t10 = te + sec(0.9)
    tr.traceback(10, t10, TRAIN_FRAMES[:3], "RuntimeError: CUDA error: unspecified launch failure\n" + "\n".join(CUDA_ASYNC))
    ta = te + sec(2.1)
    others = [l for l in range(8) if l not in (2, 3)]
    tr.agent_fail(bad_node, ta + sec(1.8), [(3, -6, te + sec(0.3)), (2, 1, t10 + sec(0.4))] + [(l, -15, ta + sec(1.4)) for l in others],
                  sigterm_locals=others, sigterm_at=ta)
    end = cascade(tr, seq, F - sec(0.6), skip_nodes=[bad_node])
    for n in nodes:
        p = "logs/%s-%s.out" % (tr.jobid, n)
        b.write(p, tr.render(n))
        b.source(p, "applog", node=n)
    boots = {"gpu-e21": ts("2026-06-22T11:03:40"), "gpu-e22": ts("2026-06-24T08:51:17"),
             "gpu-e23": ts("2026-06-22T11:05:02"), "gpu-e24": ts("2026-06-27T16:30:29")}
    for n in nodes:
        if n == bad_node:
            continue
        kl = std_kernel(tr, n, "dmesg", S, end, boot=boots[n])
        b.write("kernel/dmesg-%s.txt" % n, kl.lines())
        b.source("kernel/dmesg-%s.txt" % n, "syslog", node=n, boot_time=boots[n])
    # gpu-e22: the ring buffer wrapped while the driver tore the contexts down (a peermem flood, one line
    # per freed GPUDirect registration); the first kept line is inside that flood, the Xid 48 / 63 lines
    # printed just before it are gone.
    kl = KLog(bad_node, "dmesg", boot=boots[bad_node], rnd=random.Random("e22-ring"))
    t0 = ta + sec(1.1)
    for k in range(760):
        kl.k(t0 + sec(k * 0.00037), "nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, skipping further processing")
    tx = t0 + sec(760 * 0.00037 + 0.02)
    pid = tr.pid[bad]
    for k, ch in enumerate(["00000008", "00000009", "0000000a", "0000000b"]):
        kl.k(tx + sec(0.0004 * k), "NVRM: Xid (PCI:0000:%s:00): 45, pid=%d, name=python3, Ch %s caused by previous Xid 48" % (pci, pid, ch))
    kl.noise(tx + sec(5), end + sec(1900), 14)
    b.write("kernel/dmesg-%s.txt" % bad_node, kl.lines())
    b.source("kernel/dmesg-%s.txt" % bad_node, "syslog", node=bad_node, boot_time=boots[bad_node],
             note="dmesg taken 35 minutes after the failure; the 256 KiB ring buffer had wrapped, earlier lines are lost")
    E = end + sec(2)
    std_sacct(b, tr, "moe-57b-sft", "gpu", S, E, step_end=end)
    b.workload(id=str(tr.jobid), scheduler="slurm", cluster="ash1", step="%s.0" % tr.jobid, name="moe-57b-sft", user="sbrandt",
               queue="gpu", state="FAILED", exit_code="1:0", reason="NonZeroExitCode", start=S, end=E, nodes=nodes,
               ranks=tr.rank_node)
    b.expected("gpu.memory_ecc", "probable", bad_node, story="""
      At 02:44:18 rank 11 (GPU 3 of gpu-e22, PCI 0000:5d:00) failed with 'CUDA error: unspecified launch failure'
      (NCCL: Cuda failure 'unspecified launch failure'), rank 10 on the neighbouring GPU hit the same error a second
      later, and torchrun tore gpu-e22 down; the 24 ranks on the other nodes timed out in the watchdog on ALLREDUCE
      SeqNum=7633 ten minutes later. The dmesg of gpu-e22 was taken after its ring buffer had wrapped: it starts in a
      flood of benign nvidia-peermem 'invalid context' lines and then shows the driver's cleanup of rank 11's
      channels, 'Xid 45 ... caused by previous Xid 48'. The Xid 48 (double-bit ECC error) line itself is lost, so
      the uncorrectable memory error is implied by the cleanup lines rather than seen: probable. Check the GPU's ECC
      counters and remapped rows (nvidia-smi -q) and reset or drain gpu-e22.""")


# ---------------------------------------------------------------------------------------------------
@bundle("xid13-same-gpu-two-days")
def xid13_repeat(b):
    nodes = ["gpu-e31", "gpu-e32", "gpu-e33", "gpu-e34"]
    S, F = ts("2026-08-19T07:20:05"), ts("2026-08-19T10:02:51.377")
    tr = Train(792650, nodes, 4, S, seed=72, timeout_ms=600000)
    start_job(tr, S)
    train(tr, S, F, period=2.7, every=60)
    bad_node, bad, pci = "gpu-e33", 9, "41"   # local 1 -> PCI 41
    seq = 31207
    tr.traceback(bad, F + sec(0.25), [("/workspace/train.py", 318, "<module>", "main(cfg)"),
                                      ("/workspace/train.py", 276, "main", "loss = train_step(model, batch, optimizer)"),
                                      ("/workspace/train.py", 233, "train_step", "optimizer.step()"),
                                      ("%s/torch/optim/optimizer.py" % PY, 487, "wrapper", "out = func(*args, **kwargs)"),
                                      ("%s/torch/optim/adamw.py" % PY, 220, "step", "adamw(")],
                 "RuntimeError: CUDA error: an illegal memory access was encountered\n" + "\n".join(CUDA_ASYNC))
    others = [0, 2, 3]
    tr.agent_fail(bad_node, F + sec(3.6), [(1, 1, F + sec(0.9))] + [(l, -15, F + sec(3.2)) for l in others],
                  sigterm_locals=others, sigterm_at=F + sec(1.3))
    end = cascade(tr, seq, F - sec(0.5), skip_nodes=[bad_node])
    for n in nodes:
        p = "logs/%s.log" % n
        b.write(p, tr.render(n))
        b.source(p, "applog", node=n)
    boots = {"gpu-e31": ts("2026-08-14T15:20:44"), "gpu-e32": ts("2026-08-14T15:21:30"),
             "gpu-e33": ts("2026-08-15T22:47:09"), "gpu-e34": ts("2026-08-17T06:02:51")}
    for n in nodes:
        kl = KLog(n, "dmesg", boot=boots[n], rnd=random.Random(n + "two-days"))
        boot_lines(kl, boots[n] + sec(14.2), tr.pci[:tr.gpn])
        kl.noise(boots[n] + sec(120), end + sec(300), 45)
        if n == bad_node:
            xid_header(kl, ts("2026-08-17T13:41:26.208"), pci, "GPU-4d7e19a0-c2b5-6f83-91e4-0a3c5b7d2e86", "1654523017709")

            def xid13(t, pid, name):
                kl.block(t, ["NVRM: Xid (PCI:0000:%s:00): 13, pid=%d, name=%s, Graphics SM Warp Exception on (GPC 5, TPC 3, SM 1): Out Of Range Address" % (pci, pid, name),
                             "NVRM: Xid (PCI:0000:%s:00): 13, pid=%d, name=%s, Graphics SM Global Exception on (GPC 5, TPC 3, SM 1): Multiple Warp Errors" % (pci, pid, name),
                             "NVRM: Xid (PCI:0000:%s:00): 13, pid=%d, name=%s, Graphics Exception: ESR 0x52df30=0x201000e 0x52df34=0x24 0x52df28=0xc81eb60 0x52df2c=0x1174" % (pci, pid, name)])
                kl.k(t + sec(1.6), "NVRM: Xid (PCI:0000:%s:00): 43, pid=%d, name=%s, Ch 00000008" % (pci, pid, name))
            # two days earlier, another user's job on the same GPU
            xid13(ts("2026-08-17T13:41:26.210"), 1187342, "pt_main_thread")
            xid13(F, tr.pid[bad], "python3")
        b.write("kernel/dmesg-%s.txt" % n, kl.lines())
        b.source("kernel/dmesg-%s.txt" % n, "syslog", node=n, boot_time=boots[n])
    E = end + sec(2)
    std_sacct(b, tr, "vit-h-pt", "gpu", S, E, step_end=end)
    b.workload(id=str(tr.jobid), scheduler="slurm", cluster="c5", step="%s.0" % tr.jobid, name="vit-h-pt", user="mrossi",
               queue="gpu", state="FAILED", exit_code="1:0", reason="NonZeroExitCode", start=S, end=E, nodes=nodes,
               ranks=tr.rank_node)
    b.expected("gpu.hardware", "probable", bad_node, story="""
      Rank 9 (GPU 1 of gpu-e33, PCI 0000:41:00) died in optimizer.step with 'CUDA error: an illegal memory access
      was encountered' at 10:02:51; its kernel log shows Xid 13 'Graphics SM Warp Exception on (GPC 5, TPC 3, SM 1):
      Out Of Range Address' for that process. The same dmesg, which covers the three and a half days since boot, shows the very same
      exception on the same GPU and the same SM (GPC 5, TPC 3, SM 1) two days earlier, on 2026-08-17 13:41 UTC, from
      another process (pt_main_thread, pid 1187342, another user's job). A single Xid 13 is normally the
      application's own bug, but one GPU faulting at the same place under two different programs on two days points
      at the GPU itself; the other seven GPUs of the node never reported it. Probable, not definitive: run dcgmi diag
      -r 3 on gpu-e33 GPU 1 and drain it if it fails. The other ranks timed out or were stopped as a consequence.""")


# ---------------------------------------------------------------------------------------------------
def start_srun_tasks(tr, S):
    """srun launches one task per rank (no torchrun): NCCL init and the trainer's first lines."""
    for n in tr.nodes:
        tr.nccl_init(n, S + sec(31 + tr.rnd.uniform(0, 2)), verbose=True)
    r0 = tr.nodes[0]
    tr.add(r0, S + sec(18), "%s - INFO - trainer - world_size=%d (SLURM_NTASKS), tp=8, pp=1, dp=%d, micro_batch=1, global_batch=512, seq_len=8192"
           % (pylog_ts(S + sec(18), tr.tz), tr.world, tr.world // 8))


@bundle("slurm-task-failure-teardown")
def task_failure(b):
    nodes = ["gpu-t41", "gpu-t42", "gpu-t43", "gpu-t44"]
    S, F = ts("2026-09-22T13:10:40"), ts("2026-09-22T17:55:09.000")
    jobid = 793018
    tr = Train(jobid, nodes, 8, S, seed=73, timeout_ms=1800000)
    start_srun_tasks(tr, S)
    train_span(tr, S, F, period=4.2, every=30)
    # rank 6 exits with status 1 without printing anything (no traceback, no NCCL error): its output just stops
    t6 = F
    tk = t6 + sec(0.4)
    task = {n: i * 8 for i, n in enumerate(nodes)}
    out = ["+ srun --kill-on-bad-exit=1 --nodes=4 --ntasks-per-node=8 --gpus-per-task=1 --cpu-bind=cores --output=logs/%j-%N.out "
           "python -u pretrain_gpt.py --config configs/gpt-70b-tp8.yaml",
           "srun: error: gpu-t41: task 6: Exited with exit code 1",
           "srun: Terminating StepId=%d.0" % jobid,
           "slurmstepd: error: *** STEP %d.0 ON gpu-t41 CANCELLED AT %s DUE TO TASK FAILURE ***" % (jobid, slurm_ts(tk)),
           "srun: error: gpu-t41: tasks 0-5,7: Terminated",
           "srun: error: gpu-t43: tasks 16-23: Terminated",
           "srun: error: gpu-t42: tasks 8-15: Terminated",
           "srun: error: gpu-t44: tasks 24-31: Terminated",
           "srun: Force Terminated StepId=%d.0" % jobid]
    slurm_out(b, jobid, out, "gpu-t41")
    for n in nodes:
        p = "logs/%d-%s.out" % (jobid, n)
        # the last chatter of rank 6 is before its exit; the others were killed mid-iteration
        b.write(p, tr.render(n))
        b.source(p, "applog", node=n)
    end = tk + sec(1.5)
    kernels(b, tr, S, end + sec(60), style="syslog")
    E = end + sec(1)
    b.write("sacct.txt", sacct(jobid, "gpt-70b-tp8", "gpu", nodes, S, E, [
        ("", None, "FAILED", "1:0", None, None), (".batch", "batch", "FAILED", "1:0", ["gpu-t41"], None),
        (".extern", "extern", "COMPLETED", "0:0", None, None), (".0", "python", "FAILED", "1:0", None, end)]))
    b.source("sacct.txt", "scheduler")
    b.workload(id=str(jobid), scheduler="slurm", cluster="c5", step="%d.0" % jobid, name="gpt-70b-tp8", user="kfischer",
               queue="gpu", state="FAILED", exit_code="1:0", reason="NonZeroExitCode", start=S, end=E, nodes=nodes,
               ranks=tr.rank_node)
    b.expected("application.exception", "probable", "gpu-t41", story="""
      The job runs one srun task per rank (32 tasks, 8 per node, --kill-on-bad-exit). After four and three-quarter
      hours task 6 (rank 6, GPU 6 of gpu-t41) exited with status 1 without printing a traceback or any error; srun
      reported 'gpu-t41: task 6: Exited with exit code 1', terminated the step ('CANCELLED ... DUE TO TASK FAILURE')
      and every other task was 'Terminated' (gpu-t41 tasks 0-5,7 and all tasks of the three other nodes). No kernel
      log shows a GPU, memory or network problem. The first failure is the workload's own exit on rank 6; the
      cancellation and the Terminated lines are Slurm's teardown, not a scheduler decision. Without a traceback the
      reason for the exit is not known: probable. Re-run with the rank's stderr unbuffered / faulthandler on.""")


@bundle("slurm-step-cancelled-plain")
def step_cancelled(b):
    nodes = ["gpu-y31", "gpu-y32", "gpu-y33", "gpu-y34"]
    S, F = ts("2026-10-13T08:30:00"), ts("2026-10-13T12:47:21")
    jobid = 793244
    tr = Train(jobid, nodes, 4, S, seed=74, timeout_ms=600000)
    start_job(tr, S)
    train(tr, S, F, period=2.5, every=80)
    sigterm_all(tr, F + sec(0.4))
    for n in nodes:
        tr.add(n, F + sec(5.0), tr.elastic(n, F + sec(5.0), "I", "torch/distributed/elastic/multiprocessing/api.py:932",
                                           "Waiting for worker processes to terminate"))
        signal_exception(tr, n, F + sec(5.6))
    write_apps(b, tr, "logs/{node}.log")
    slurm_out(b, jobid, ["+ srun --nodes=4 --ntasks-per-node=1 torchrun --nnodes=4 --nproc-per-node=4 --rdzv-backend=c10d "
                         "--rdzv-endpoint=gpu-y31:29500 train.py --config configs/dpo-7b.yaml",
                         "slurmstepd: error: *** STEP %d.0 ON gpu-y31 CANCELLED AT %s ***" % (jobid, slurm_ts(F)),
                         "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
                         *["srun: error: %s: task %d: Terminated" % (n, i) for i, n in enumerate(nodes)]], "gpu-y31")
    kernels(b, tr, S, F + sec(40), style="iso")
    E = F + sec(7)
    b.write("sacct.txt", sacct(jobid, "dpo-7b", "gpu", nodes, S, E, [
        ("", None, "CANCELLED", "0:0", None, None), (".batch", "batch", "CANCELLED", "0:15", ["gpu-y31"], None),
        (".extern", "extern", "COMPLETED", "0:0", None, None), (".0", "torchrun", "CANCELLED", "0:15", None, None)]))
    b.source("sacct.txt", "scheduler")
    b.workload(id=str(jobid), scheduler="slurm", cluster="c5", step="%d.0" % jobid, name="dpo-7b", user="alindqvist",
               queue="gpu", state="CANCELLED", exit_code="0:0", reason="None", start=S, end=E, nodes=nodes,
               ranks=tr.rank_node)
    b.expected("scheduler.cancelled", "probable", None, affected=[], story="""
      Training was healthy for four hours and seventeen minutes, then slurmstepd printed 'STEP 793244.0 ON gpu-y31
      CANCELLED AT 2026-10-13T12:47:21' with no 'DUE TO' reason, torchrun on every node received SIGTERM and
      stopped its workers, srun reported all four tasks Terminated and sacct records the job CANCELLED. No rank, node
      or kernel log shows an error before the cancel. The record does not say who cancelled ('CANCELLED' without
      'by <uid>'), so a user or admin scancel is the most likely reading but not proven: probable.""")


# ---------------------------------------------------------------------------------------------------
@bundle("barrier-rank-never-arrived")
def barrier_no_ranks(b):
    nodes = ["gpu-m21", "gpu-m22", "gpu-m23", "gpu-m24"]
    S, F = ts("2026-11-02T21:00:07"), ts("2026-11-03T13:41:25.000")
    jobid = 794410
    tr = Train(jobid, nodes, 4, S, seed=75, timeout_ms=600000)
    start_quiet(tr, S, world_line=False)
    tr.rank_noise(S + sec(60), F)
    # rank 0 drives a tqdm bar (written line by line to the log)
    total, rate = 35000, 3.0
    t = S + sec(75)
    it = 0
    while t < F - sec(4):
        if it % 400 == 0 and it:
            tr.add(nodes[0], t, "[rank0]:" + tqdm_line("Training", it, total, (t - S - sec(75)).total_seconds(), rate * tr.rnd.uniform(0.99, 1.01),
                                                   ", loss=%.3f, lr=2.10e-04" % (2.45 - 0.00001 * it + tr.rnd.uniform(-0.02, 0.02))))
        t += sec(rate)
        it += 1
    it = 20000
    tr.add(nodes[0], F - sec(3), "[rank0]:" + tqdm_line("Training", it, total, (F - sec(3) - S - sec(75)).total_seconds(), 3.0, ", loss=2.251, lr=2.10e-04"))
    tr.add(nodes[0], F - sec(2), "[rank0]:%s - INFO - checkpoint - Saving checkpoint to /shared/ckpt/llm-34b/step_20000 (7 shards, full state dict on rank 0)"
           % pylog_ts(F - sec(2)))
    for k in range(4):
        tt = F + sec(24.1 * k)
        tr.add(nodes[0], tt, "[rank0]:" + tqdm_line("Saving checkpoint shards", k, 7, 24.1 * k, 24.1 if k else 0.0))
    seq = 40011
    t_enq = F - sec(1)
    for r in range(1, tr.world):
        tt = t_enq + sec(600 + tr.rnd.uniform(0.01, 0.2))
        tr.watchdog(r, tt, seq, numel=1, last_enq=seq, last_comp=seq - 1)
    end = t_enq + sec(604)
    for n in nodes:
        i = nodes.index(n)
        fl = [(l, -6, t_enq + sec(601)) for l in range(4) if i * 4 + l != 0]
        if i == 0:
            tr.agent_fail(n, end, fl + [(0, -15, end - sec(0.5))], sigterm_locals=[0], sigterm_at=end - sec(1))
        else:
            tr.agent_fail(n, end, fl)
    for n in nodes:
        p = "logs/%s.log" % n
        b.write(p, tr.render(n))
        b.source(p, "applog", node=n)
    kernels(b, tr, S, end, style="syslog")
    E = end + sec(1)
    std_sacct(b, tr, "llm-34b", "gpu", S, E, step_end=end)
    b.workload(id=str(jobid), scheduler="slurm", cluster="c5", step="%d.0" % jobid, name="llm-34b", user="odiallo",
               queue="gpu", state="FAILED", exit_code="1:0", reason="NonZeroExitCode", start=S, end=E, nodes=nodes)
    b.expected("application.stuck_rank", "probable", "gpu-m21", affected=[], explained=["nccl.watchdog_timeout"], story="""
      At step 20000 rank 0 logged 'Saving checkpoint to /shared/ckpt/llm-34b/step_20000 (7 shards, full state dict on
      rank 0)' and its tqdm bar reached 3/7 shards after 72 seconds; nothing more came from it. The fifteen other ranks
      entered the next collective, a 1-element ALLREDUCE (NumelIn=1, a barrier) with SeqNum=40011, and all timed out
      after 600000 ms; rank 0 never reports that sequence number. The workload description lists no rank map and no
      world size: the sixteen ranks are known from the [rankN]: prefixes of the logs. The rank that never arrived is
      rank 0, busy writing a large checkpoint to shared storage: the workload's own straggler. Raise the timeout
      around checkpointing or save sharded/asynchronously.""")


# ---------------------------------------------------------------------------------------------------
def nccl_init_partial(tr, node, t, nvls_fail=False, peer_fail=None):
    """NCCL_DEBUG=INFO communicator init on an NVSwitch node, up to NVLS setup. nvls_fail: the NVLS
    buffer registration fails (Cuda failure 1). peer_fail: (host, port base) whose ranks vanished
    during the connection setup."""
    i = tr.nodes.index(node)
    nn = len(tr.nodes)
    for l in range(tr.gpn):
        r = i * tr.gpn + l
        tt = t + sec(0.05 * l)
        p = "%s:%d:%d [%d]" % (node, tr.pid[r], tr.pid[r], l)
        q = tr.nccl_pfx(r)
        comm = 0x55d0c0000000 + r * 0x1f0000
        L = []
        if r == 0:
            L += ["%s NCCL INFO Bootstrap : Using ib0:%s<0>" % (p, tr.ip[node]),
                  "%s NCCL INFO cudaDriverVersion 12040" % p, "NCCL version %s+cuda12.4" % tr.nccl]
        L += ["%s NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [4]mlx5_4:1/IB [5]mlx5_5:1/IB [6]mlx5_6:1/IB [7]mlx5_7:1/IB ; OOB ib0:%s<0>" % (q, tr.ip[node]),
              "%s NCCL INFO Using network IB" % q,
              "%s NCCL INFO comm 0x%x rank %d nranks %d cudaDev %d nvmlDev %d busId %s000 commId %s - Init START"
              % (q, comm, r, tr.world, l, l, tr.pci[l], tr.commid),
              "%s NCCL INFO Setting affinity for GPU %d to ffffffff,00000000,ffffffff" % (q, l),
              "%s NCCL INFO NVLS multicast support is available on dev %d" % (q, l),
              "%s NCCL INFO comm 0x%x rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL 0" % (q, comm, r, tr.world, nn, tr.gpn, l)]
        L += tr.nccl_channels(node, r, l, q)
        L.append("%s NCCL INFO NVLS comm 0x%x headRank %d nHeads 8 buffSize 4194304 memSize 2097152 nvlsPerRankSize 201326592 nvlsTotalSize 1610612736"
                 % (q, comm, l))
        if nvls_fail:
            L += ["%s transport/nvls.cc:244 NCCL WARN Cuda failure 1 'invalid argument'" % q,
                  "%s NCCL INFO transport/nvls.cc:394 -> 1" % q,
                  "%s NCCL INFO init.cc:1236 -> 1" % q,
                  "%s NCCL INFO init.cc:1501 -> 1" % q,
                  "%s NCCL INFO init.cc:1746 -> 1" % q]
        else:
            L.append("%s NCCL INFO Connected NVLS" % q)
        tr.add(node, tt, "\n".join(L))
        if peer_fail:
            host, port = peer_fail
            tp = t + sec(6.2 + 0.03 * l)
            tr.add(node, tp, "\n".join([
                "%s misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer %s<%d>" % (q, host, port + r),
                "%s NCCL INFO misc/socket.cc:752 -> 6" % q,
                "%s NCCL INFO transport/net.cc:698 -> 6" % q,
                "%s NCCL INFO transport.cc:166 -> 6" % q,
                "%s NCCL INFO init.cc:1263 -> 6" % q,
                "%s NCCL INFO init.cc:1746 -> 6" % q]))


BARRIER_FRAMES = [("/opt/train/pretrain.py", 402, "<module>", "main()"),
                  ("/opt/train/pretrain.py", 117, "main", "dist.barrier(device_ids=[local_rank])  # first NCCL call: creates the communicator"),
                  ("%s/torch/distributed/c10d_logger.py" % PY, 83, "wrapper", "return func(*args, **kwargs)"),
                  ("%s/torch/distributed/distributed_c10d.py" % PY, 4166, "barrier", "work = group.barrier(opts=opts)")]


@bundle("nvls-invalid-argument")
def nvls(b):
    nodes = ["hgx-n01", "hgx-n02", "hgx-n03", "hgx-n04"]
    S = ts("2026-12-03T15:02:18")
    jobid = 795102
    tr = Train(jobid, nodes, 8, S, seed=76, timeout_ms=600000, ipbase="10.52")
    bad = "hgx-n03"
    TI = S + sec(36.5)
    for n in nodes:
        tr.banner(n, S + sec(2.4 + tr.rnd.uniform(0, 0.4)))
    tr.add(nodes[0], S + sec(21), "%s - INFO - trainer - world_size=32, tp=8, pp=1, dp=4, NCCL_NVLS_ENABLE=1 NCCL_ALGO=NVLS,Ring"
           % pylog_ts(S + sec(21)))
    tr.rank_noise(S + sec(8), TI, lines_per_rank=4)
    fails = {}
    for n in nodes:
        i = nodes.index(n)
        if n == bad:
            nccl_init_partial(tr, n, TI, nvls_fail=True)
        else:
            nccl_init_partial(tr, n, TI, peer_fail=("%s.cluster" % bad, 52100))
        for l in range(tr.gpn):
            r = i * tr.gpn + l
            if n == bad:
                te = TI + sec(0.4 + 0.05 * l)
                exc = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2027, "
                       "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version %s\n"
                       "ncclUnhandledCudaError: Call to CUDA function failed.\nLast error:\nCuda failure 1 'invalid argument'" % tr.nccl)
            else:
                te = TI + sec(6.6 + 0.03 * l)
                exc = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2027, "
                       "remote process exited or there was a network error, NCCL version %s\n"
                       "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.\nLast error:\n"
                       "socketProgress: Connection closed by remote peer %s.cluster<%d>" % (tr.nccl, bad, 52100 + r))
            tr.traceback(r, te, BARRIER_FRAMES, exc)
            fails.setdefault(n, []).append((l, 1, te + sec(0.5)))
    for n in nodes:
        fl = sorted(fails[n], key=lambda f: f[2])
        tr.agent_fail(n, fl[-1][2] + sec(1.2), fl)
    end = TI + sec(10)
    for n in nodes:
        p = "logs/%s-%s.out" % (jobid, n)
        b.write(p, tr.render(n))
        b.source(p, "applog", node=n)

    def fm(kl):
        t = S - sec(3 * 3600 + 1312)
        kl.k(t, "Stopping NVIDIA fabric manager service...", "systemd[1]")
        kl.k(t + sec(0.8), "nvidia-fabricmanager.service: Deactivated successfully.", "systemd[1]")
        kl.k(t + sec(0.9), "Stopped NVIDIA fabric manager service.", "systemd[1]")
        kl.k(t + sec(1.0), "Starting NVIDIA fabric manager service...", "systemd[1]")
        kl.k(t + sec(1.3), "Detected Pre-NVL5 system", "nvidia-fabricmanager-start.sh[918342]")
        kl.k(t + sec(4.9), "Started NVIDIA fabric manager service.", "systemd[1]")
        kl.k(t - sec(41), "Starting Daily apt upgrade and clean activities...", "systemd[1]")
        kl.k(t + sec(58), "apt-daily-upgrade.service: Deactivated successfully.", "systemd[1]")
        kl.k(t + sec(58.1), "Finished Daily apt upgrade and clean activities.", "systemd[1]")
    kernels(b, tr, S - sec(4 * 3600), end + sec(30), style="syslog", extra={bad: fm})
    E = end + sec(1)
    std_sacct(b, tr, "gpt-175b-nvls", "hgx", S, E, step_end=end)
    b.workload(id=str(jobid), scheduler="slurm", cluster="hgx-west", step="%d.0" % jobid, name="gpt-175b-nvls", user="yamamoto",
               queue="hgx", state="FAILED", exit_code="1:0", reason="NonZeroExitCode", start=S, end=E, nodes=nodes,
               ranks=tr.rank_node)
    b.expected("gpu.driver", "probable", bad, story="""
      The job failed 36 seconds after start, in the first NCCL call (dist.barrier creating the communicator). On
      hgx-n03 all eight ranks (16-23) logged 'transport/nvls.cc:244 NCCL WARN Cuda failure 1 'invalid argument'' while
      setting up NVLink SHARP (NVLS) buffers and raised DistBackendError 'unhandled cuda error' (ncclUnhandledCudaError,
      Last error: Cuda failure 1 'invalid argument'). The ranks of the other three nodes completed their NVLS setup
      and then lost their connections to hgx-n03 ('Connection closed by remote peer hgx-n03.cluster', ncclRemoteError):
      a consequence. NVLS registration failing on every GPU of one HGX node, and only there, is the signature of a
      broken NVSwitch / Fabric Manager state; hgx-n03's syslog shows the nvidia-fabricmanager service restarted (during
      an unattended apt upgrade) three hours and twenty minutes before the job without a GPU reset. Reset the GPUs / reboot hgx-n03
      (or run with NCCL_NVLS_ENABLE=0 meanwhile). Probable: the driver state is inferred from NCCL's error.""")


@bundle("cuda-invalid-device-function")
def no_kernel_image(b):
    nodes = ["gpu-c21", "gpu-c22", "gpu-c23", "gpu-c24"]
    S = ts("2026-04-15T10:41:03")
    jobid = 795377
    tr = Train(jobid, nodes, 8, S, seed=77, timeout_ms=600000)
    start_job(tr, S)
    tr.add(nodes[0], S + sec(27), "%s - INFO - model - using fused kernels from fused_rmsnorm_cuda 0.4.2 (prebuilt wheel, TORCH_CUDA_ARCH_LIST=8.0)"
           % pylog_ts(S + sec(27)))
    tr.rank_noise(S + sec(8), S + sec(44), lines_per_rank=6)
    T = S + sec(46.2)
    for n in nodes:
        i = nodes.index(n)
        fl = []
        for l in range(tr.gpn):
            r = i * tr.gpn + l
            te = T + sec(tr.rnd.uniform(0, 0.8))
            tr.traceback(r, te, [("/workspace/pretrain.py", 288, "<module>", "main(cfg)"),
                                 ("/workspace/pretrain.py", 241, "main", "loss = model(batch).loss  # warm-up step"),
                                 ("%s/torch/nn/modules/module.py" % PY, 1736, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
                                 ("/workspace/model/llama.py", 188, "forward", "h = self.input_norm(x)"),
                                 ("/workspace/model/norm.py", 41, "forward", "return fused_rmsnorm_cuda.forward(x, self.weight, self.eps)")],
                         "RuntimeError: CUDA error: no kernel image is available for execution on the device\n" + "\n".join(CUDA_ASYNC))
            fl.append((l, 1, te + sec(0.6)))
        fl.sort(key=lambda f: f[2])
        tr.agent_fail(n, fl[-1][2] + sec(1.1), fl)
    end = T + sec(4)
    write_apps(b, tr, "logs/{node}.log")
    kernels(b, tr, S, end + sec(20), style="iso")
    E = end + sec(1)
    std_sacct(b, tr, "llama-8b-h100", "h100", S, E, step_end=end)
    b.workload(id=str(jobid), scheduler="slurm", cluster="c6", step="%d.0" % jobid, name="llama-8b-h100", user="pkowalski",
               queue="h100", state="FAILED", exit_code="1:0", reason="NonZeroExitCode", start=S, end=E, nodes=nodes,
               ranks=tr.rank_node)
    b.expected("application.exception", "definitive", None, affected=[], story="""
      The first training run of this model on the H100 partition failed 46 seconds after start, in the warm-up forward
      pass, on all 32 ranks of all four nodes at once: 'CUDA error: no kernel image is available for execution on the
      device' from fused_rmsnorm_cuda.forward (the CUDA runtime's cudaErrorNoKernelImageForDevice; older toolkits say
      'invalid device function'). Rank 0 logged that the extension is a prebuilt wheel compiled with
      TORCH_CUDA_ARCH_LIST=8.0, i.e. for A100 (sm_80) only; H100 is sm_90. The same error on every GPU of every node at
      the same step is the workload's binary, not the hardware: rebuild the extension with 9.0 in the arch list.
      Nothing to drain.""")


# ---------------------------------------------------------------------------------------------------
@bundle("single-node-cause-without-host")
def single_node(b):
    node = "dgx-a07"
    ctr = "7c2e9f1a4b3d"   # the container's hostname: what torchrun reports as 'host'
    S, F = ts("2026-03-09T11:20:00"), ts("2026-03-09T12:31:44.610")
    jobid = 796021
    tr = Train(jobid, [ctr], 8, S, seed=78, timeout_ms=600000)
    tr.banner(ctr, S + sec(3.1))
    tr.add(ctr, S + sec(19), "%s - INFO - trainer - standalone run, 8 GPUs, fsdp=FULL_SHARD, micro_batch=4, seq_len=8192"
           % pylog_ts(S + sec(19)))
    train(tr, S, F, period=3.3, every=40, fmt="hf")
    r = 3
    tr.traceback(r, F, [("/workspace/finetune.py", 266, "<module>", "trainer.train()"),
                        ("/workspace/finetune.py", 204, "train", "loss = self.model(**batch).loss"),
                        ("%s/torch/nn/modules/module.py" % PY, 1736, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
                        ("/workspace/modeling/attention.py", 131, "forward", "attn = torch.softmax(scores.float(), dim=-1).to(q.dtype)")],
                 "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU 3 has a total capacity of 79.10 GiB of which 2.19 GiB is free. "
                 "Including non-PyTorch memory, this process has 76.90 GiB memory in use. Of the allocated memory 71.43 GiB is allocated by PyTorch, "
                 "and 4.02 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
                 "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  "
                 "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
    others = [l for l in range(8) if l != r]
    tr.agent_fail(ctr, F + sec(3.4), [(r, 1, F + sec(0.7))] + [(l, -15, F + sec(3.0)) for l in others],
                  sigterm_locals=others, sigterm_at=F + sec(1.0))
    lines = ["+ srun --container-image=nvcr.io#nvidia/pytorch:24.05-py3 --container-mounts=/lustre:/lustre torchrun --standalone "
             "--nproc-per-node=8 finetune.py --config configs/ft-long.yaml"] + tr.render(ctr)
    b.write("slurm-%d.out" % jobid, lines)
    b.source("slurm-%d.out" % jobid, "applog", note="batch script stdout/stderr; the job ran inside a pyxis container")
    end = F + sec(4)
    kl = std_kernel(tr, node, "syslog", S, end, n=14)
    b.write("kernel/syslog-%s.log" % node, kl.lines())
    b.source("kernel/syslog-%s.log" % node, "syslog", node=node)
    E = end + sec(1)
    b.write("sacct.txt", sacct(jobid, "ft-long-ctx", "gpu", [node], S, E, [
        ("", None, "FAILED", "1:0", None, None), (".batch", "batch", "FAILED", "1:0", None, None),
        (".extern", "extern", "COMPLETED", "0:0", None, None), (".0", "torchrun", "FAILED", "1:0", None, end)]))
    b.source("sacct.txt", "scheduler")
    b.workload(id=str(jobid), scheduler="slurm", cluster="c6", step="%d.0" % jobid, name="ft-long-ctx", user="bokafor", queue="gpu",
               state="FAILED", exit_code="1:0", reason="NonZeroExitCode", start=S, end=E, nodes=[node])
    b.expected("application.cuda_oom", "definitive", node, affected=[], story="""
      A single-node job (dgx-a07, eight GPUs, torchrun --standalone inside a pyxis container). After 71 minutes rank 3
      raised torch.OutOfMemoryError in the attention softmax: tried to allocate 3.50 GiB on GPU 3 (79.10 GiB total,
      2.19 GiB free, 71.43 GiB allocated by PyTorch). Nothing in the log names the node: the lines carry only the
      [rankN]: prefix and torchrun reports the container's hostname (7c2e9f1a4b3d), but a job with one node has only
      one place to put the cause. Torchrun stopped the other seven workers. Reduce the micro-batch or sequence length
      (the fp32 softmax of an 8k sequence); the hardware is fine.""")


# ---------------------------------------------------------------------------------------------------
def describe_pod(pod, ns, node, node_ip, pod_ip, job, idx, S, F, msg, cid):
    rfc = lambda t: t.strftime("%a, %d %b %Y %H:%M:%S +0000")  # noqa: E731
    return ["Name:             %s" % pod,
            "Namespace:        %s" % ns,
            "Priority:         0",
            "Service Account:  default",
            "Node:             %s/%s" % (node, node_ip),
            "Start Time:       %s" % rfc(S - sec(24)),
            "Labels:           training.kubeflow.org/job-name=%s" % job,
            "                  training.kubeflow.org/operator-name=pytorchjob-controller",
            "                  training.kubeflow.org/replica-index=%d" % idx,
            "                  training.kubeflow.org/replica-type=worker",
            "Annotations:      sidecar.istio.io/inject: false",
            "Status:           Failed",
            "Reason:           Evicted",
            "Message:          %s" % msg,
            "IP:               %s" % pod_ip,
            "IPs:",
            "  IP:           %s" % pod_ip,
            "Controlled By:  PyTorchJob/%s" % job,
            "Containers:",
            "  pytorch:",
            "    Container ID:  containerd://%s" % cid,
            "    Image:         nvcr.io/nvidia/pytorch:24.05-py3",
            "    Image ID:      nvcr.io/nvidia/pytorch@sha256:6e1a0b3f4d2c9e8a7b6f5d4c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a2918f",
            "    Port:          23456/TCP",
            "    Host Port:     0/TCP",
            "    Command:",
            "      torchrun",
            "      --nnodes=4",
            "      --nproc-per-node=4",
            "      train.py",
            "    State:          Terminated",
            "      Reason:       Error",
            "      Exit Code:    137",
            "      Started:      %s" % rfc(S),
            "      Finished:     %s" % rfc(F),
            "    Ready:          False",
            "    Restart Count:  0",
            "    Limits:",
            "      nvidia.com/gpu:  4",
            "    Requests:",
            "      cpu:             48",
            "      memory:          32Gi",
            "      nvidia.com/gpu:  4",
            "    Environment:",
            "      MASTER_PORT:  23456",
            "      MASTER_ADDR:  %s-master-0" % job,
            "      WORLD_SIZE:   4",
            "      RANK:         %d" % idx,
            "    Mounts:",
            "      /dev/shm from dshm (rw)",
            "      /data from datasets (ro)",
            "Conditions:",
            "  Type                        Status",
            "  DisruptionTarget            True ",
            "  PodReadyToStartContainers   False ",
            "  Initialized                 True ",
            "  Ready                       False ",
            "  ContainersReady             False ",
            "  PodScheduled                True ",
            "QoS Class:                    Burstable",
            "Node-Selectors:               nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3",
            "Tolerations:                  node.kubernetes.io/not-ready:NoExecute op=Exists for 300s",
            "                              node.kubernetes.io/unreachable:NoExecute op=Exists for 300s",
            "                              nvidia.com/gpu:NoSchedule op=Exists",
            "Events:",
            "  Type     Reason   Age   From     Message",
            "  ----     ------   ----  ----     -------",
            "  Warning  Evicted  4m    kubelet  %s" % msg.strip(),
            "  Normal   Killing  4m    kubelet  Stopping container pytorch"]


@bundle("k8s-eviction-container-over-request")
def k8s_over_request(b):
    nodes = ["dgx-c101", "dgx-c102", "dgx-c105", "dgx-c106"]
    S, F = ts("2026-12-08T06:10:26"), ts("2026-12-08T09:47:03.118")
    job = "ft-llama"
    tr = Train("ft-llama-q8w4n", nodes, 4, S, seed=79, timeout_ms=600000, ipbase="10.46")
    start_job(tr, S)
    train(tr, S, F, period=2.2, fmt="hf")
    pods = {n: "%s-worker-%d" % (job, i) for i, n in enumerate(nodes)}
    bad = "dgx-c102"
    r0 = nodes.index(bad) * tr.gpn
    for k, mins in enumerate([50, 38, 26, 15, 7, 2]):
        t = F - sec(60 * mins + 11)
        tr.add(bad, t, "[rank%d]:%s - WARNING - dataloader - host RSS %.1f GiB (pod request 32Gi); in-memory packing cache holds %d sequences"
               % (r0, pylog_ts(t), 31.0 + 5.4 * k + tr.rnd.uniform(0, 0.8), 410000 + 260000 * k))
    nip = tr.ip[bad]
    died = {}
    for n in nodes:
        if n == bad:
            continue
        i = nodes.index(n)
        for l in range(tr.gpn):
            r = i * tr.gpn + l
            t = F + sec(1.1 + tr.rnd.uniform(0, 1.0))
            peer_remote_error(tr, r, t, 98806, nip, 38200 + r, how="closed" if r % 2 else "reset")
            died[r] = t + sec(0.5)
        tr.agent_fail(n, max(died[i * tr.gpn + l] for l in range(tr.gpn)) + sec(2.0),
                      sorted([(l, -6, died[i * tr.gpn + l]) for l in range(tr.gpn)], key=lambda f: f[2]))
    for n in nodes:
        p = "logs/%s.log" % pods[n]
        b.write(p, tr.render(n))
        b.source(p, "applog", node=n, pod=pods[n], container="pytorch", namespace="ml-ft")
    msg = ("The node was low on resource: memory. Threshold quantity: 100Mi, available: 48Mi. Container pytorch was using "
           "61273580Ki, request is 32Gi, has larger consumption of memory. ")
    cid = __import__("hashlib").sha256(pods[bad].encode()).hexdigest()
    b.write("k8s/describe-pod-%s.txt" % pods[bad], describe_pod(pods[bad], "ml-ft", bad, "10.46.8.102", "10.244.7.31", job, 1, S, F, msg, cid))
    b.source("k8s/describe-pod-%s.txt" % pods[bad], "k8s_event", node=bad, pod=pods[bad], namespace="ml-ft",
             note="kubectl describe pod, 4 minutes after the eviction")
    pl = []
    for n in nodes:
        d = json.loads(pod_status(pods[n], n, "Failed", "Error", 137 if n == bad else 1, S,
                                  F if n == bad else max(died[nodes.index(n) * tr.gpn + l] for l in range(tr.gpn)) + sec(2.2),
                                  msg=msg if n == bad else None, preason="Evicted" if n == bad else None))
        d["metadata"]["namespace"] = "ml-ft"
        if n == bad:
            d["status"]["conditions"] = [
                {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet", "message": msg.strip(),
                 "lastTransitionTime": iso(F)},
                {"type": "Ready", "status": "False", "reason": "PodFailed", "lastTransitionTime": iso(F + sec(1))}]
        pl.append(json.dumps(d, sort_keys=True))
    b.write("k8s/pods.jsonl", pl)
    b.source("k8s/pods.jsonl", "k8s_event", note="pod status JSON, one pod per line")
    ago = lambda t: "%dm" % max(1, int(((F + sec(240)) - t).total_seconds() // 60))  # noqa: E731
    ev = ["LAST SEEN   TYPE      REASON                      OBJECT                        MESSAGE"]
    for n in nodes:
        ev.append("%-11s Normal    Scheduled                   pod/%-25s Successfully assigned ml-ft/%s to %s" % (ago(S), pods[n], pods[n], n))
    ev += ["%-11s Warning   EvictionThresholdMet        node/%-24s Attempting to reclaim memory" % (ago(F), bad),
           "%-11s Normal    NodeHasInsufficientMemory   node/%-24s Node %s status is now: NodeHasInsufficientMemory" % (ago(F), bad, bad),
           "%-11s Warning   Evicted                     pod/%-25s %s" % (ago(F), pods[bad], msg.strip()),
           "%-11s Normal    Killing                     pod/%-25s Stopping container pytorch" % (ago(F), pods[bad]),
           "%-11s Normal    NodeHasSufficientMemory     node/%-24s Node %s status is now: NodeHasSufficientMemory" % (ago(F + sec(60)), bad, bad),
           "%-11s Warning   PyTorchJobFailed            pytorchjob/%-18s PyTorchJob %s is failed because 1 Worker replica(s) failed." % (ago(F + sec(6)), job, job)]
    b.write("k8s/events.txt", ev)
    b.source("k8s/events.txt", "k8s_event", note="kubectl get events -n ml-ft plus the node's events, captured %s" % iso(F + sec(240)))
    kl = KLog(bad, "syslog", rnd=random.Random(bad + str(S)))
    kl.noise(S - sec(1800), F + sec(300), 16)
    kp = "kubelet[2871]"
    lt = lambda t: "I%s    2871" % glog_ts(t)  # noqa: E731
    kl.k(F - sec(0.212), '%s eviction_manager.go:366] "Eviction manager: attempting to reclaim" resourceName="memory"' % lt(F - sec(0.212)), kp)
    kl.k(F - sec(0.211), '%s eviction_manager.go:377] "Eviction manager: must evict pod(s) to reclaim" resourceName="memory"' % lt(F - sec(0.211)), kp)
    kl.k(F - sec(0.210), '%s eviction_manager.go:395] "Eviction manager: pods ranked for eviction" pods=["ml-ft/%s","monitoring/node-exporter-5lq2v","kube-system/kube-proxy-9zt4c"]'
         % (lt(F - sec(0.210)), pods[bad]), kp)
    kl.k(F, '%s eviction_manager.go:616] "Eviction manager: pod is evicted successfully" pod="ml-ft/%s"' % (lt(F), pods[bad]), kp)
    kl.k(F + sec(0.001), '%s eviction_manager.go:197] "Eviction manager: pods evicted, waiting for pod to be cleaned up" pods=["ml-ft/%s"]' % (lt(F + sec(0.001)), pods[bad]), kp)
    b.write("nodes/journal-%s.log" % bad, kl.lines())
    b.source("nodes/journal-%s.log" % bad, "syslog", node=bad, note="journalctl -u kubelet on the node")
    E = F + sec(8)
    b.workload(id="pytorchjob-%s" % job, scheduler="kubernetes", cluster="dgx-onprem-2", attempt=0, name=job, user="team-ft",
               queue="ml-ft", state="Failed", exit_code="137", reason="Evicted", start=S, end=E, nodes=nodes, ranks=tr.rank_node)
    b.expected("application.memory_limit", "definitive", bad, affected=[], story="""
      After three and a half hours the kubelet on dgx-c102 hit its hard eviction threshold for memory and evicted
      ft-llama-worker-1: pod status Failed / reason Evicted with 'The node was low on resource: memory. Threshold
      quantity: 100Mi, available: 48Mi. Container pytorch was using 61273580Ki, request is 32Gi, has larger consumption
      of memory.' (kubectl describe, the pod JSON, the Evicted event and the kubelet's eviction-manager lines agree).
      The container was using 58.4 GiB against a request of 32 GiB: rank 4's in-memory packing cache grew from 31 to
      58 GiB of host RSS over the last 50 minutes. A pod chosen because it is far above its own request is the
      workload's memory use, not a scheduler decision and not a node fault (the node recovered a minute later); the
      twelve ranks of the other workers then failed with 'Connection closed/reset by peer' naming dgx-c102. Cap the
      cache and set a memory request that matches the real use.""")


# ---------------------------------------------------------------------------------------------------
@bundle("job-failed-silently")
def failed_silently(b):
    """A failed job whose only failure is the batch script's last command refusing its arguments: no task
    failed under srun and the kernel log is clean. argparse's own error line is the whole evidence
    (application, probable: the arguments came from the job script)."""
    node = "gpu-q14"
    S, F = ts("2026-04-02T06:10:00"), ts("2026-04-02T09:44:18.220")
    jobid = 801377
    tr = Train(jobid, [node], 8, S, seed=91, timeout_ms=600000)
    tr.banner(node, S + sec(3.4))
    train(tr, S, F - sec(40), period=3.1, every=40, fmt="hf")
    tr.add(node, F - sec(38), "%s - INFO - trainer - training finished: 4000 steps, final loss 1.734" % pylog_ts(F - sec(38)))
    tr.add(node, F - sec(37), "%s - INFO - trainer - saved final checkpoint to /lustre/ckpt/run-801377/final" % pylog_ts(F - sec(37)))
    lines = ["+ srun torchrun --standalone --nproc-per-node=8 train.py --config configs/sft.yaml"] + tr.render(node)
    lines += ["+ python tools/export_hf.py --ckpt /lustre/ckpt/run-801377/final",
              "usage: export_hf.py [-h] --ckpt CKPT --out OUT [--dtype {bf16,fp16,fp32}]",
              "export_hf.py: error: the following arguments are required: --out"]
    b.write("slurm-%d.out" % jobid, lines)
    b.source("slurm-%d.out" % jobid, "applog", note="batch script stdout/stderr: the training step, then the export")
    end = F + sec(1)
    kl = std_kernel(tr, node, "syslog", S, end, n=12)
    b.write("kernel/syslog-%s.log" % node, kl.lines())
    b.source("kernel/syslog-%s.log" % node, "syslog", node=node)
    E = end + sec(1)
    b.write("sacct.txt", sacct(jobid, "sft-export", "gpu", [node], S, E, [
        ("", None, "FAILED", "2:0", None, None), (".batch", "batch", "FAILED", "2:0", None, None),
        (".extern", "extern", "COMPLETED", "0:0", None, None), (".0", "torchrun", "COMPLETED", "0:0", None, F - sec(35))]))
    b.source("sacct.txt", "scheduler")
    b.workload(id=str(jobid), scheduler="slurm", cluster="c6", name="sft-export", user="lmarsh", queue="gpu",
               state="FAILED", exit_code="2:0", reason="NonZeroExitCode", start=S, end=E, nodes=[node])
    b.expected("application.exception", "probable", node, root_symptom="python.argparse_error", affected=[], story="""
      Training ran to its last step and saved the final checkpoint (step .0 COMPLETED 0:0); then the batch script's
      export command stopped at argument parsing ('export_hf.py: error: the following arguments are required: --out',
      argparse's exit 2) and the job ended FAILED 2:0. No task failed under srun and the kernel log is clean: the one
      failure is the program refusing the command line the job script gave it. Application, probable rather than
      definitive: argparse says which argument was wrong, not who should have passed it (the script, a launcher or a
      platform). The verdict's 'unrecognized' list keeps the checkpoint UserWarning every rank prints.""")
