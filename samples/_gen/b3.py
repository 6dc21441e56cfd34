"""Node failures and application-level bundles."""
from common import *  # noqa
from registry import bundle
from b1 import CUDA_ASYNC, TRAIN_FRAMES, slurm_out


def basic(b, jobid, nodes, gpn, S, F, seed, name, user, cluster="c3", timeout_ms=600000, period=2.0, fmt="megatron", tz="UTC"):
    tr = Train(jobid, nodes, gpn, S, seed=seed, timeout_ms=timeout_ms, tz=tz)
    start_job(tr, S)
    train(tr, S, F, period=period, fmt=fmt)
    return tr


def kernels(b, tr, S, end, style="syslog", skip=(), extra=None, boots=None):
    for n in tr.nodes:
        if n in skip:
            continue
        kl = std_kernel(tr, n, style, S, end, boot=(boots or {}).get(n), n=12)
        if extra and n in extra:
            extra[n](kl)
        p = "kernel/%s-%s.log" % ({"syslog": "syslog", "iso": "journal-k", "dmesg": "dmesg", "dmesgT": "dmesg-T"}[style], n)
        b.write(p, kl.lines())
        kw = {"boot_time": boots[n]} if boots else {}
        b.source(p, "syslog", node=n, **kw)


def wl(b, tr, name, user, S, E, state="FAILED", ec="1:0", reason="NonZeroExitCode", cluster="c3", queue="gpu", **kw):
    b.workload(id=str(tr.jobid), scheduler="slurm", cluster=cluster, step="%s.0" % tr.jobid, name=name, user=user, queue=queue,
               state=state, exit_code=ec, reason=reason, start=S, end=E, nodes=tr.nodes, ranks=tr.rank_node, **kw)


@bundle("slurm-node-fail-not-responding")
def nodefail(b):
    nodes = ["gpu-n01", "gpu-n02", "gpu-n03", "gpu-n04"]
    S, F = ts("2026-11-07T02:30:00"), ts("2026-11-07T06:11:52.000")
    tr = basic(b, 741002, nodes, 4, S, F, 13, "rm-70b", "ewong")
    for n in ("gpu-n01", "gpu-n02", "gpu-n04"):
        i = nodes.index(n)
        fl = []
        for l in range(4):
            r = i * 4 + l
            t = F + sec(30.5 + tr.rnd.uniform(0, 1.2))
            peer_remote_error(tr, r, t, 60231, tr.ip["gpu-n03"], 51200 + r, how="ib12")
            fl.append((l, -6, t + sec(0.5)))
        tr.agent_fail(n, F + sec(34), fl)
    write_apps(b, tr, "logs/{node}.out")
    down = F + sec(302)
    slurm_out(b, tr.jobid, ["srun: error: gpu-n01: task 0: Exited with exit code 1",
                            "srun: error: gpu-n02: task 1: Exited with exit code 1",
                            "srun: error: gpu-n04: task 3: Exited with exit code 1",
                            "srun: error: Node failure on gpu-n03",
                            "slurmstepd: error: *** JOB 741002 ON gpu-n01 CANCELLED AT %s DUE TO NODE FAILURE ***" % slurm_ts(down + sec(1)),
                            "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
                            "srun: error: Timed out waiting for job step to complete"], "gpu-n01")
    kernels(b, tr, S, down, skip=("gpu-n03",))
    b.write("slurmctld.log", ["[%s.%03d] sched: Allocate JobId=741002 NodeList=gpu-n[01-04] #CPUs=384 Partition=gpu" % (slurm_ts(S), 118),
                              "[%s.412] error: Nodes gpu-n03 not responding" % slurm_ts(F + sec(101)),
                              "[%s.007] error: Nodes gpu-n03 not responding, setting DOWN" % slurm_ts(down),
                              "[%s.007] Killing JobId=741002 on failed node gpu-n03" % slurm_ts(down),
                              "[%s.451] _job_complete: JobId=741002 WTERMSIG 9" % slurm_ts(down + sec(1)),
                              "[%s.451] _job_complete: JobId=741002 done" % slurm_ts(down + sec(1))])
    b.source("slurmctld.log", "scheduler", note="slurmctld log excerpt for the job")
    E = down + sec(1)
    b.write("sacct.txt", sacct(741002, "rm-70b", "gpu", nodes, S, E, [
        ("", None, "NODE_FAIL", "0:0", None, None), (".batch", "batch", "CANCELLED", "0:15", ["gpu-n01"], None),
        (".extern", "extern", "CANCELLED", "0:15", None, None), (".0", "torchrun", "CANCELLED", "0:15", None, None)]))
    b.source("sacct.txt", "scheduler")
    b.write("sinfo-R.txt", ["REASON               USER      TIMESTAMP           NODELIST", "Not responding       slurm     %s gpu-n03" % slurm_ts(down)])
    b.source("sinfo-R.txt", "scheduler")
    wl(b, tr, "rm-70b", "ewong", S, E, state="NODE_FAIL", ec="0:0", reason="NodeDown")
    b.expected("node.unreachable", "probable", "gpu-n03", affected=["gpu-n03"], story="""
      gpu-n03 went silent at about 06:11:52: its ranks (8-11) printed nothing more, and 30 seconds later every rank on
      the other three nodes got IB completion error 12 with a gpu-n03 address as the peer. slurmctld marked gpu-n03
      'not responding' and set it DOWN five minutes later, killed the job, and sacct records NODE_FAIL. No kernel log
      of gpu-n03 could be collected (the node was down), so the cause of its death (power, hard hang, BMC) is not
      established: the verdict rests on scheduler state and peer errors. Drain gpu-n03 and pull its BMC/SEL log.""")


@bundle("kernel-softlockup-panic")
def panic(b):
    nodes = ["gpu-q01", "gpu-q02", "gpu-q03", "gpu-q04"]
    S, F = ts("2026-12-01T10:00:03"), ts("2026-12-01T13:26:40.552")
    tr = basic(b, 744310, nodes, 4, S, F, 14, "asr-conformer", "hlee", period=1.4)
    write_apps_before = None
    end = cascade(tr, 90017, F - sec(0.8), skip_nodes=["gpu-q02"])
    write_apps(b, tr, "logs/{node}.out")
    pid = tr.pid[6]

    def q02(kl):
        kl.block(F, ["watchdog: BUG: soft lockup - CPU#42 stuck for 26s! [python3:%d]" % pid,
                     "Modules linked in: nvidia_uvm(POE) nvidia_peermem(POE) nvidia_drm(POE) nvidia_modeset(POE) nvidia(POE) mlx5_ib ib_uverbs mlx5_core lustre(OE) xfs",
                     "CPU: 42 PID: %d Comm: python3 Tainted: P           OE      6.5.0-1018-nvidia #18-Ubuntu" % pid,
                     "Hardware name: Dell Inc. PowerEdge XE9680/0XF1KH, BIOS 2.3.5 09/10/2025",
                     "RIP: 0010:native_queued_spin_lock_slowpath+0x1b4/0x2e0",
                     "Call Trace:", " <IRQ>", " ? watchdog_timer_fn+0x1b9/0x220", " </IRQ>", " <TASK>",
                     " _raw_spin_lock+0x30/0x40", " change_pmd_range.isra.0+0x11e/0x6e0", " change_protection+0x1b1/0x4e0",
                     " change_prot_numa+0x56/0xa0", " task_numa_work+0x1ff/0x360", " task_work_run+0x5a/0x90", " </TASK>"], step=0.00003)
        kl.k(F + sec(122.5), "INFO: task kworker/u388:2:11235 blocked for more than 122 seconds.")
        kl.k(F + sec(122.5), "      Tainted: P           OEL     6.5.0-1018-nvidia #18-Ubuntu")
        kl.k(F + sec(148.1), "Kernel panic - not syncing: softlockup: hung tasks")
        kl.k(F + sec(148.1), "CPU: 42 PID: %d Comm: python3 Tainted: P           OEL     6.5.0-1018-nvidia #18-Ubuntu" % pid)
        kl.k(F + sec(148.2), "Kernel Offset: 0x2c400000 from 0xffffffff81000000 (relocation range: 0xffffffff80000000-0xffffffffbfffffff)")
        kl.k(F + sec(148.2), "---[ end Kernel panic - not syncing: softlockup: hung tasks ]---")
    kernels(b, tr, S, end, style="iso", extra={"gpu-q02": q02})
    down = F + sec(420)
    b.write("slurmctld.log", ["[%s.233] error: Nodes gpu-q02 not responding" % slurm_ts(F + sec(240)),
                              "[%s.019] error: Nodes gpu-q02 not responding, setting DOWN" % slurm_ts(down),
                              "[%s.019] Killing JobId=744310 on failed node gpu-q02" % slurm_ts(down),
                              "[%s.870] validate_node_specs: Node gpu-q02 unexpectedly rebooted boot_time=%d last response=%d" % (slurm_ts(down + sec(388)), int((down + sec(300)).timestamp()), int((F + sec(140)).timestamp()))])
    b.source("slurmctld.log", "scheduler")
    E = down + sec(1)
    b.write("sacct.txt", sacct(744310, "asr-conformer", "gpu", nodes, S, E, [
        ("", None, "NODE_FAIL", "0:0", None, None), (".batch", "batch", "CANCELLED", "0:15", ["gpu-q01"], None),
        (".extern", "extern", "CANCELLED", "0:15", None, None), (".0", "torchrun", "CANCELLED", "0:15", None, None)]))
    b.source("sacct.txt", "scheduler")
    wl(b, tr, "asr-conformer", "hlee", S, E, state="NODE_FAIL", ec="0:0", reason="NodeDown")
    b.expected("node.kernel", "definitive", "gpu-q02", affected=["gpu-q02"], explained=["nccl.watchdog_timeout"], story="""
      At 13:26:40 gpu-q02's kernel reported a soft lockup on CPU 42 (rank 6's python3 spinning in
      change_prot_numa / NUMA auto-balancing), followed by hung tasks and 'Kernel panic - not syncing: softlockup:
      hung tasks' (journal of the previous boot). Its ranks stopped without a word; the ranks on gpu-q01, gpu-q03
      and gpu-q04 timed out in the watchdog ten minutes later, slurmctld set gpu-q02 DOWN and the job ended NODE_FAIL; the node
      later came back 'unexpectedly rebooted'. gpu-q02 was the only node still on kernel 6.5.0-1018. The
      scheduler's NODE_FAIL is the consequence; the cause is the kernel on gpu-q02.""")


@bundle("pcie-aer-fatal-then-gpu-lost")
def aer(b):
    nodes = ["gpu-r01", "gpu-r02", "gpu-r03", "gpu-r04"]
    S, F = ts("2026-03-28T17:40:10"), ts("2026-03-28T21:03:19.880")
    tr = basic(b, 746551, nodes, 8, S, F, 15, "diffusion-xl", "cmartin", period=1.1)
    bad = 12  # local 4 -> PCI 9a
    tf = F + sec(2.9)
    tr.add("gpu-r02", tf, "gpu-r02:%d:%d [4] include/alloc.h:112 NCCL WARN Cuda failure 999 'unknown error'" % (tr.pid[bad], tr.pid[bad] + 184))
    tr.traceback(bad, tf + sec(0.1), TRAIN_FRAMES[:3], "RuntimeError: CUDA error: unknown error\n" + "\n".join(CUDA_ASYNC))
    others = [l for l in range(8) if l != 4]
    tr.agent_fail("gpu-r02", tf + sec(3), [(4, 1, tf + sec(0.6))] + [(l, -15, tf + sec(2.6)) for l in others], sigterm_locals=others, sigterm_at=tf + sec(1))
    end = cascade(tr, 44120, F - sec(0.5), skip_nodes=["gpu-r02"])
    write_apps(b, tr, "logs/{node}.log")
    boots = {"gpu-r01": ts("2026-03-20T06:11:40"), "gpu-r02": ts("2026-03-25T14:52:08"),
             "gpu-r03": ts("2026-03-20T06:13:02"), "gpu-r04": ts("2026-03-22T10:27:45")}

    def r02(kl):
        rp = "0000:97:01.0"
        for k in range(9):
            t = F - sec(3000 - k * 330 + kl.rnd.uniform(0, 60))
            if k % 3 == 2:
                kl.block(t, ["pcieport %s: AER: Corrected error received: %s" % (rp, rp),
                             "pcieport %s: PCIe Bus Error: severity=Corrected, type=Data Link Layer, (Transmitter ID)" % rp,
                             "pcieport %s:   device [8086:352a] error status/mask=00001000/00002000" % rp,
                             "pcieport %s:    [12] Timeout               " % rp])
            else:
                kl.block(t, ["pcieport %s: AER: Corrected error received: %s" % (rp, rp),
                             "pcieport %s: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)" % rp,
                             "pcieport %s:   device [8086:352a] error status/mask=00000001/00002000" % rp,
                             "pcieport %s:    [ 0] RxErr                  (First)" % rp])
        kl.block(F - sec(0.02), ["pcieport %s: AER: Uncorrected (Fatal) error received: %s" % (rp, rp),
                                 "pcieport %s: PCIe Bus Error: severity=Uncorrected (Fatal), type=Data Link Layer, (Receiver ID)" % rp,
                                 "pcieport %s:   device [8086:352a] error status/mask=00000010/00400000" % rp,
                                 "pcieport %s:    [ 4] DLP                    (First)" % rp,
                                 "nvidia 0000:9a:00.0: AER: can't recover (no error_detected callback)"], step=0.0002)
        xid_header(kl, F, "9a", "GPU-0e4d7a21-9c3b-58f0-a1d6-3b2f90c7e148", "1654223011942")
        kl.block(F + sec(0.001), ["NVRM: Xid (PCI:0000:9a:00): 79, pid=0, GPU has fallen off the bus.",
                                  "NVRM: GPU 0000:9a:00.0: GPU has fallen off the bus.",
                                  "NVRM: A GPU crash dump has been created. If possible, please run",
                                  "NVRM: nvidia-bug-report.sh as root to collect this data before",
                                  "NVRM: the NVIDIA kernel module is unloaded."], step=0.0005)
        kl.k(F + sec(1.2), "pcieport %s: AER: device recovery failed" % rp)
        kl.k(F + sec(1.3), "pcieport %s: pciehp: Slot(23): Link Down" % rp)
    kernels(b, tr, S, end, style="dmesg", extra={"gpu-r02": r02}, boots=boots)
    E = end + sec(2)
    std_sacct(b, tr, "diffusion-xl", "gpu", S, E, step_end=end)
    wl(b, tr, "diffusion-xl", "cmartin", S, E)
    b.expected("node.pcie", "definitive", "gpu-r02", affected=["gpu-r02"], explained=["nccl.watchdog_timeout"], story="""
      For 50 minutes the root port 0000:97:01.0 on gpu-r02 logged corrected PCIe errors (Physical Layer RxErr,
      Data Link Layer replay Timeout), then at 21:03:19 an uncorrected fatal Data Link Protocol error; AER recovery
      failed, the slot link went down and GPU 0000:9a:00.0 below it fell off the bus (Xid 79). We attribute the
      failure to node.pcie rather than gpu.fell_off_bus because the link degraded on the host side first (riser /
      retimer / slot), and the Xid 79 is the GPU disappearing because its link died; swapping the GPU alone would not
      fix it. Rank 12 failed with 'CUDA error: unknown error' and the ranks on gpu-r01, gpu-r03 and gpu-r04 timed out ten
      minutes later.
      Drain gpu-r02 and inspect the slot 23 riser/cabling.""")


@bundle("cuinit-999-one-node")
def cuinit(b):
    nodes = ["gpu-s01", "gpu-s02", "gpu-s03", "gpu-s04"]
    S = ts("2026-08-30T05:00:41")
    tr = Train(748002, nodes, 4, S, seed=16)
    for n in nodes:
        tr.banner(n, S + sec(2.5))
        chk = "[gpu-check] %s: 4 GPUs, driver 550.90.07, cuInit OK" % n
        if n == "gpu-s03":
            chk = "[gpu-check] gpu-s03: cuInit returned error 999 CUDA_ERROR_UNKNOWN"
        tr.add(n, S + sec(1.0), chk)
    for l in range(4):
        r = 8 + l
        t = S + sec(9.2 + 0.1 * l)
        tr.add("gpu-s03", t, "[rank%d]:%s/torch/cuda/__init__.py:129: UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 999: unknown error (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)" % (r, PY))
        tr.traceback(r, t + sec(0.3), [("/srv/train/main.py", 55, "<module>", "setup_distributed()"),
                                       ("/srv/train/dist.py", 21, "setup_distributed", "torch.cuda.set_device(local_rank)"),
                                       ("%s/torch/cuda/__init__.py" % PY, 478, "set_device", "torch._C._cuda_setDevice(device)"),
                                       ("%s/torch/cuda/__init__.py" % PY, 319, "_lazy_init", "torch._C._cuda_init()")],
                     "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 999: unknown error")
    tr.agent_fail("gpu-s03", S + sec(11.5), [(l, 1, S + sec(10 + 0.1 * l)) for l in range(4)])
    T0 = S + sec(9.0)
    tr.traceback(0, T0 + sec(600.4), [("/srv/train/main.py", 55, "<module>", "setup_distributed()"),
                                      ("/srv/train/dist.py", 24, "setup_distributed", "dist.init_process_group(\"nccl\", timeout=timedelta(minutes=10))"),
                                      ("%s/torch/distributed/distributed_c10d.py" % PY, 1520, "init_process_group", "store, rank, world_size = next(rendezvous_iterator)")],
                 "torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. 12/16 clients joined.")
    tr.agent_fail("gpu-s01", T0 + sec(602), [(0, 1, T0 + sec(601))] + [(l, -15, T0 + sec(601.5)) for l in (1, 2, 3)], sigterm_locals=[1, 2, 3], sigterm_at=T0 + sec(601))
    for n in ("gpu-s02", "gpu-s04"):
        i = nodes.index(n)
        for l in range(4):
            tr.traceback(i * 4 + l, T0 + sec(601.3), [("/srv/train/dist.py", 24, "setup_distributed", "dist.init_process_group(\"nccl\", timeout=timedelta(minutes=10))")],
                         "torch.distributed.DistNetworkError: failed to recv, got 0 bytes. Connection was likely closed. Did the remote server shutdown or crash?")
        tr.agent_fail(n, T0 + sec(603), [(l, 1, T0 + sec(601.6)) for l in range(4)])
    end = T0 + sec(604)
    write_apps(b, tr, "logs/{node}.log")
    boots = {n: ts("2026-08-29T23:10:00") + sec(37 * i) for i, n in enumerate(nodes)}

    def s03(kl):
        for k in range(3):
            t = S + sec(8.9 + k * 0.5)
            kl.k(t, "NVRM: GPU 0000:81:00.0: RmInitAdapter failed! (0x62:0x55:2477)")
            kl.k(t + sec(0.001), "NVRM: GPU 0000:81:00.0: rm_init_adapter failed, device minor number 2")
    kernels(b, tr, S, end, style="dmesg", extra={"gpu-s03": s03}, boots=boots)
    E = end + sec(1)
    std_sacct(b, tr, "tts-large", "gpu", S, E, step_end=end)
    wl(b, tr, "tts-large", "ipetrov", S, E)
    b.expected("gpu.driver", "definitive", "gpu-s03", affected=["gpu-s03"], story="""
      The job never started training. On gpu-s03 the site's gpu-check printed 'cuInit returned error 999
      CUDA_ERROR_UNKNOWN', all four workers failed in torch.cuda.set_device with 'Error 999: unknown error', and the
      kernel log shows 'RmInitAdapter failed! (0x62:0x55:2477)' for GPU 0000:81:00.0 at the same moment: the driver
      could not initialise one GPU, which breaks CUDA for every process on the node. The other nodes waited for
      the missing clients and failed ten minutes later (DistStoreError 12/16 clients joined, then connection
      closed). Drain gpu-s03 and reset/reboot it.""")
