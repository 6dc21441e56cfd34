"""GPU hardware / firmware / app-fault bundles."""
from common import *  # noqa
from registry import bundle

CUDA_ASYNC = ["CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
              "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
              "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."]

TRAIN_FRAMES = [("/workspace/train.py", 412, "<module>", "main(cfg)"),
                ("/workspace/train.py", 377, "main", "loss = train_step(model, batch, optimizer)"),
                ("/workspace/train.py", 241, "train_step", "loss.backward()"),
                ("%s/torch/_tensor.py" % PY, 521, "backward", "torch.autograd.backward("),
                ("%s/torch/autograd/__init__.py" % PY, 289, "backward", "_engine_run_backward("),
                ("%s/torch/autograd/graph.py" % PY, 768, "_engine_run_backward", "return Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass")]


def slurm_out(b, jobid, lines, node):
    b.write("slurm-%s.out" % jobid, lines)
    b.source("slurm-%s.out" % jobid, "applog", node=node, note="batch script stdout/stderr (srun, slurmstepd lines)")


@bundle("xid79-nccl-watchdog-cascade")
def xid79_cascade(b):
    nodes = ["gpu-a01", "gpu-a02", "gpu-a03", "gpu-a04"]
    S, F = ts("2026-03-14T08:02:11"), ts("2026-03-14T11:47:33.412")
    tr = Train(418207, nodes, 4, S, seed=1, timeout_ms=600000)
    start_job(tr, S)
    train(tr, S, F, period=2.1, every=50)
    bad = 10  # gpu-a03 local 2 -> PCI 81
    t_enq = F - sec(1.31)
    seq = 51877
    # the rank on the lost GPU: its watchdog sees CUDA errors within seconds
    tf = F + sec(3.27)
    tr.add("gpu-a03", tf, "\n".join([
        "gpu-a03:%d:%d [2] include/alloc.h:112 NCCL WARN Cuda failure 999 'unknown error'" % (tr.pid[bad], tr.pid[bad] + 182),
        tr.c10(bad, tf + sec(0.01), "E", "ProcessGroupNCCL.cpp:1515",
               "[PG 0 (default_pg) Rank 10] Process group watchdog thread terminated with exception: CUDA error: unknown error"),
        *["[rank10]:" + x for x in CUDA_ASYNC],
        "[rank10]:",
        *tr.c10_frames(bad, "c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:43")[:4],
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        "  what():  [PG 0 (default_pg) Rank 10] Process group watchdog thread terminated with exception: CUDA error: unknown error"]))
    ta = tf + sec(2.2)
    tr.agent_fail("gpu-a03", ta + sec(1.1), [(2, -6, tf + sec(0.4)), (0, -15, ta + sec(0.9)), (1, -15, ta + sec(0.9)), (3, -15, ta + sec(0.9))],
                  sigterm_locals=[0, 1, 3], sigterm_at=ta)
    end = cascade(tr, seq, t_enq, skip_nodes=["gpu-a03"])
    for n in nodes:
        b.write("logs/%s-%s.out" % (tr.jobid, n), tr.render(n))
        b.source("logs/%s-%s.out" % (tr.jobid, n), "applog", node=n)
    slurm_out(b, tr.jobid, [
        "+ srun --nodes=4 --ntasks-per-node=1 --output=logs/%j-%N.out torchrun --nnodes=4 --nproc-per-node=4 --rdzv-backend=c10d --rdzv-endpoint=gpu-a01:29500 train.py --config configs/llama-13b.yaml",
        "srun: error: gpu-a03: task 2: Exited with exit code 1",
        "srun: launch/slurm: _task_finish: Received task exit notification for 1 task of StepId=418207.0 (status=0x0100).",
        "srun: error: gpu-a01: task 0: Exited with exit code 1",
        "srun: error: gpu-a02: task 1: Exited with exit code 1",
        "srun: error: gpu-a04: task 3: Exited with exit code 1",
        "srun: launch/slurm: _task_finish: Received task exit notification for 3 tasks of StepId=418207.0 (status=0x0100)."], "gpu-a01")
    # kernel logs: plain dmesg, seconds since boot
    boots = {"gpu-a01": ts("2026-02-27T16:40:02"), "gpu-a02": ts("2026-03-02T09:13:55"),
             "gpu-a03": ts("2026-02-27T16:41:37"), "gpu-a04": ts("2026-03-09T21:05:10")}
    for n in nodes:
        kl = std_kernel(tr, n, "dmesg", S, end, boot=boots[n])
        if n == "gpu-a03":
            xid_header(kl, F - sec(0.0002), "81", "GPU-3f1c8a2e-77d4-1b9e-0c5a-6e1d2f9b4a10", "1654923008731")
            kl.block(F, ["NVRM: Xid (PCI:0000:81:00): 79, pid=0, GPU has fallen off the bus.",
                         "NVRM: GPU 0000:81:00.0: GPU has fallen off the bus.",
                         "NVRM: GPU 0000:81:00.0: GPU serial number is 1654923008731.",
                         "NVRM: A GPU crash dump has been created. If possible, please run",
                         "NVRM: nvidia-bug-report.sh as root to collect this data before",
                         "NVRM: the NVIDIA kernel module is unloaded.",
                         "NVRM: Xid (PCI:0000:81:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"], step=0.0011)
            kl.k(F + sec(41.5), "NVRM: nvGpuOpsReportFatalError: uvm encountered global fatal error 0x60, requiring os reboot to recover.")
        b.write("kernel/dmesg-%s.txt" % n, kl.lines())
        b.source("kernel/dmesg-%s.txt" % n, "syslog", node=n, boot_time=boots[n])
    E = end + sec(3)
    b.write("sacct.txt", sacct(418207, "llama13b-pt", "gpu", nodes, S, E, [
        ("", None, "FAILED", "1:0", None, None), (".batch", "batch", "FAILED", "1:0", ["gpu-a01"], None),
        (".extern", "extern", "COMPLETED", "0:0", None, None), (".0", "torchrun", "FAILED", "1:0", None, end)]))
    b.source("sacct.txt", "scheduler")
    b.workload(id="418207", scheduler="slurm", cluster="ash1", attempt=0, step="418207.0", name="llama13b-pt", user="mkoh",
               queue="gpu", state="FAILED", exit_code="1:0", reason="NonZeroExitCode", start=S, end=E, nodes=nodes,
               ranks=tr.rank_node, labels={"team": "foundation"})
    b.expected("gpu.fell_off_bus", "definitive", "gpu-a03", root_symptom="gpu.xid.79", affected=["gpu-a03"],
               explained=["nccl.watchdog_timeout"], story="""
      GPU 2 of gpu-a03 (PCI 0000:81:00, global rank 10) fell off the PCIe bus at 11:47:33 (Xid 79, then Xid 154
      'Node Reboot Required'). Rank 10's watchdog hit 'CUDA error: unknown error' three seconds later and torchrun
      on gpu-a03 tore down its other three workers. Ranks on gpu-a01, gpu-a02 and gpu-a04 were blocked in the
      ALLREDUCE SeqNum=51877 and reported NCCL watchdog timeouts ten minutes later (Timeout 600000 ms); those
      timeouts are the cascade, not the cause. Drain gpu-a03 and reboot/RMA the GPU.""")


@bundle("xid48-dbe-xid45-xid154")
def xid48(b):
    xid48_on(b, "gpu-b08", 421033)


# The dashboard test's own bundle: the same failure on gpu-a03 (a repeat offender in its store).
@bundle("xid48-ecc-on-gpu-a03", root=DASHBOARD_BUNDLES)
def xid48_dashboard(b):
    xid48_on(b, "gpu-a03", 421187)


def xid48_on(b, bad_node, jobid):
    nodes = ["gpu-b07", bad_node, "gpu-b09", "gpu-b10"]
    S, F = ts("2026-04-02T22:15:40"), ts("2026-04-03T03:41:09.218")
    tr = Train(jobid, nodes, 8, S, seed=2, timeout_ms=1800000)
    start_job(tr, S)
    train(tr, S, F, period=3.4, every=40)
    bad, pci = 11, "5d"
    pid = tr.pid[bad]
    seq = 23011
    te = F + sec(0.71)
    tr.add(bad_node, te, "\n".join([
        tr.c10(bad, te, "E", "ProcessGroupNCCL.cpp:916", "[Rank 11] NCCL watchdog thread terminated with exception: CUDA error: uncorrectable ECC error encountered"),
        *["[rank11]:" + x for x in CUDA_ASYNC],
        *tr.c10_frames(bad, "c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:43")[:3],
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        "  what():  [PG 0 (default_pg) Rank 11] Process group watchdog thread terminated with exception: CUDA error: uncorrectable ECC error encountered"]))
    ta = te + sec(1.9)
    others = [l for l in range(8) if l != 3]
    tr.agent_fail(bad_node, ta + sec(2.0), [(3, -6, te + sec(0.3))] + [(l, -15, ta + sec(1.5)) for l in others],
                  sigterm_locals=others, sigterm_at=ta)
    # peers on the other nodes see the connections from the bad node close
    end = ta
    for n in nodes:
        if n == bad_node:
            continue
        i = nodes.index(n)
        fl = []
        for l in range(8):
            r = i * 8 + l
            t = ta + sec(0.8 + 0.05 * l + tr.rnd.uniform(0, 0.3))
            port = 40000 + 7 * r
            tr.add(n, t, "%s misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer %s<%d>"
                   % (tr.nccl_pfx(r), bad_node + ".ash1.cluster", port))
            tr.add(n, t + sec(0.001), "%s NCCL INFO misc/socket.cc:752 -> 6" % tr.nccl_pfx(r))
            tr.add(n, t + sec(0.002), "%s NCCL INFO transport/net_socket.cc:474 -> 6" % tr.nccl_pfx(r))
            tr.async_error(r, t + sec(0.4), seq, "remote process exited or there was a network error",
                           "socketProgress: Connection closed by remote peer %s.ash1.cluster<%d>" % (bad_node, port))
            fl.append((l, -6, t + sec(0.6)))
        fl.sort(key=lambda f: f[2])
        tr.agent_fail(n, fl[-1][2] + sec(2.4), fl)
        end = max(end, fl[-1][2] + sec(2.4))
    for n in nodes:
        b.write("logs/rank-node-%s.log" % n, tr.render(n))
        b.source("logs/rank-node-%s.log" % n, "applog", node=n)
    for n in nodes:
        kl = std_kernel(tr, n, "syslog", S, end, n=24)
        if n == bad_node:
            xid_header(kl, F - sec(0.0001), pci, "GPU-8a02c41f-1e55-93d0-7b2e-44c0d1a9e6f3", "1322621077415")
            kl.k(F, "NVRM: Xid (PCI:0000:%s:00): 48, pid=%d, name=python3, Ch 00000008, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0." % (pci, pid))
            kl.k(F + sec(0.002), "NVRM: Xid (PCI:0000:%s:00): 63, pid=%d, name=python3, Row Remapper: New row marked for remapping, reset gpu to activate." % (pci, pid))
            kl.k(F + sec(0.35), "NVRM: Xid (PCI:0000:%s:00): 45, pid=%d, name=python3, Ch 00000008 caused by previous Xid 48" % (pci, pid))
            kl.k(F + sec(0.35), "NVRM: Xid (PCI:0000:%s:00): 45, pid=%d, name=python3, Ch 00000009 caused by previous Xid 48" % (pci, pid))
            kl.k(F + sec(0.36), "NVRM: Xid (PCI:0000:%s:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)" % pci)
        b.write("kernel/syslog-%s.log" % n, kl.lines())
        b.source("kernel/syslog-%s.log" % n, "syslog", node=n)
    b.write("reports/nvidia-smi-q-%s.txt" % bad_node, [
        "==============NVSMI LOG==============", "", "Timestamp                                 : Fri Apr  3 04:02:17 2026",
        "Driver Version                            : 550.90.07", "CUDA Version                              : 12.4", "",
        "Attached GPUs                             : 8", "GPU 00000000:5D:00.0",
        "    Product Name                          : NVIDIA H100 80GB HBM3",
        "    Serial Number                         : 1322621077415",
        "    GPU UUID                              : GPU-8a02c41f-1e55-93d0-7b2e-44c0d1a9e6f3",
        "    ECC Mode", "        Current                           : Enabled", "        Pending                           : Enabled",
        "    ECC Errors", "        Volatile", "            SRAM Correctable              : 0", "            SRAM Uncorrectable            : 0",
        "            DRAM Correctable              : 3", "            DRAM Uncorrectable            : 1",
        "        Aggregate", "            SRAM Correctable              : 0", "            SRAM Uncorrectable            : 0",
        "            DRAM Correctable              : 41", "            DRAM Uncorrectable            : 1",
        "    Retired Pages", "        Single Bit ECC                    : N/A", "        Double Bit ECC                    : N/A",
        "        Pending Page Blacklist            : N/A",
        "    Remapped Rows", "        Correctable Error                 : 0", "        Uncorrectable Error               : 1",
        "        Pending                           : Yes", "        Remapping Failure Occurred        : No",
        "        Bank Remap Availability Histogram", "            Max                           : 639 bank(s)",
        "            High                          : 0 bank(s)", "            Partial                       : 0 bank(s)",
        "            Low                           : 0 bank(s)", "            None                          : 0 bank(s)"])
    b.source("reports/nvidia-smi-q-%s.txt" % bad_node, "node_report", node=bad_node, gpu="00000000:5D:00.0", note="taken 20 minutes after the failure by the on-call engineer")
    E = end + sec(2)
    b.write("sacct.txt", sacct(jobid, "mix-34b-sft", "batch", nodes, S, E, [
        ("", None, "FAILED", "1:0", None, None), (".batch", "batch", "FAILED", "1:0", ["gpu-b07"], None),
        (".extern", "extern", "COMPLETED", "0:0", None, None), (".0", "python", "FAILED", "1:0", None, end)]))
    b.source("sacct.txt", "scheduler")
    b.workload(id=str(jobid), scheduler="slurm", cluster="ash1", step="%d.0" % jobid, name="mix-34b-sft", user="rtanaka", queue="batch",
               state="FAILED", exit_code="1:0", reason="NonZeroExitCode", start=S, end=E, nodes=nodes, ranks=tr.rank_node)
    b.expected("gpu.memory_ecc", "definitive", bad_node, root_symptom="gpu.xid.48", affected=[bad_node],
               explained=["gpu.xid.45"], story="""
      At 03:41:09 GPU 3 of {bad} (PCI 0000:5d:00, rank 11) reported an uncorrectable double-bit ECC error (Xid 48)
      and marked a row for remapping (Xid 63). The two Xid 45 lines ('caused by previous Xid 48') are the driver's
      cleanup of the killed channels and Xid 154 only says the GPU now needs a reset. Rank 11 died with 'CUDA error:
      uncorrectable ECC error encountered'; torchrun terminated the other workers on {bad}, and the 24 ranks on gpu-b07,
      gpu-b09 and gpu-b10 saw their sockets to {bad} close and aborted with ncclRemoteError. nvidia-smi -q confirms one DRAM uncorrectable error with a
      remap pending. Reset the GPU (activates the remap) before returning {bad} to service.""".format(bad=bad_node))


@bundle("xid94-contained-ecc")
def xid94(b):
    nodes = ["gpu-c11", "gpu-c12", "gpu-c13", "gpu-c14"]
    tz = "Europe/Berlin"
    S, F = ts("2026-05-19T06:30:02"), ts("2026-05-19T14:07:52.640")
    tr = Train(5520931, nodes, 4, S, seed=3, timeout_ms=300000, tz=tz)
    start_job(tr, S)
    train(tr, S, F, period=1.2, every=200, fmt="hf")
    bad, pci = 5, "41"
    seq = 92441
    te = F + sec(0.08)
    tr.traceback(bad, te, [("/workspace/sft/train.py", 188, "<module>", "trainer.train()"),
                           ("/workspace/sft/trainer.py", 301, "train", "out = self.model(**batch)"),
                           ("%s/torch/nn/modules/module.py" % PY, 1736, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
                           ("/workspace/sft/model.py", 97, "forward", "h = self.mlp(self.norm(h))")],
                 "RuntimeError: CUDA error: uncorrectable ECC error encountered\n" + "\n".join(CUDA_ASYNC))
    tr.agent_fail("gpu-c12", te + sec(3.6), [(1, 1, te + sec(0.5))] + [(l, -15, te + sec(3.1)) for l in (0, 2, 3)],
                  sigterm_locals=[0, 2, 3], sigterm_at=te + sec(1.2))
    end = cascade(tr, seq, F - sec(0.4), skip_nodes=["gpu-c12"])
    for n in nodes:
        b.write("logs/%s.log" % n, tr.render(n))
        b.source("logs/%s.log" % n, "applog", node=n, timezone=tz)
    for n in nodes:
        kl = std_kernel(tr, n, "dmesgT", S, end, tz=tz, n=15)
        if n == "gpu-c12":
            xid_header(kl, F - sec(0.0001), pci, "GPU-c77f0e12-0b3a-4d19-a6e0-52d7e1f08b3c", "1650122041877")
            kl.k(F, "NVRM: Xid (PCI:0000:%s:00): 94, pid=%d, name=python3, Contained ECC error" % (pci, tr.pid[bad]))
            kl.k(F + sec(0.01), "NVRM: Xid (PCI:0000:%s:00): 63, pid=%d, name=python3, Row Remapper: New row marked for remapping, reset gpu to activate." % (pci, tr.pid[bad]))
            kl.k(F + sec(0.4), "NVRM: Xid (PCI:0000:%s:00): 43, pid=%d, name=python3, Ch 00000008" % (pci, tr.pid[bad]))
        b.write("kernel/dmesg-T-%s.txt" % n, kl.lines())
        b.source("kernel/dmesg-T-%s.txt" % n, "syslog", node=n, timezone=tz)
    E = end + sec(2)
    b.write("sacct.txt", sacct(5520931, "sft-8b-de", "a100q", nodes, S, E, [
        ("", None, "FAILED", "1:0", None, None), (".batch", "batch", "FAILED", "1:0", ["gpu-c11"], None),
        (".extern", "extern", "COMPLETED", "0:0", None, None), (".0", "torchrun", "FAILED", "1:0", None, end)], tz=tz))
    b.source("sacct.txt", "scheduler", timezone=tz)
    b.workload(id="5520931", scheduler="slurm", cluster="fra2", step="5520931.0", name="sft-8b-de", user="lweber", queue="a100q",
               state="FAILED", exit_code="1:0", reason="NonZeroExitCode", start=S, end=E, nodes=nodes, ranks=tr.rank_node)
    b.expected("gpu.memory_ecc", "definitive", "gpu-c12", root_symptom="gpu.xid.94", affected=["gpu-c12"],
               explained=["nccl.watchdog_timeout"], story="""
      GPU 1 of gpu-c12 (PCI 0000:41:00) hit a contained uncorrectable ECC error at 16:07:52 local time (Xid 94,
      Europe/Berlin; 14:07:52 UTC), with a row marked for remapping (Xid 63). The driver contained it by killing only
      rank 5, which died with 'CUDA error: uncorrectable ECC error encountered'; Xid 43 is the channel cleanup.
      Torchrun stopped the other local workers and the ranks on gpu-c11 timed out in the watchdog five minutes later.
      The GPU needs a reset to activate the remap; the logs use local Berlin time without a zone.""")


@bundle("xid119-gsp-timeout")
def xid119(b):
    xid119_on(b, "gpu-d02", 903412)


# The dashboard test's own bundle: the same failure on gpu-a03 (a repeat offender in its store).
@bundle("xid119-gsp-on-gpu-a03", root=DASHBOARD_BUNDLES)
def xid119_dashboard(b):
    xid119_on(b, "gpu-a03", 903577)


def xid119_on(b, bad_node, jobid):
    nodes = ["gpu-d01", bad_node, "gpu-d03", "gpu-d04"]
    S, F = ts("2026-06-08T01:10:44"), ts("2026-06-08T09:21:06.883")
    tr = Train(jobid, nodes, 4, S, seed=4, timeout_ms=600000)
    start_job(tr, S)
    train(tr, S, F, period=2.6, every=80)
    bad, pci = 7, "c1"
    seq = 88410
    # rank 7 is stuck inside the driver; its heartbeat monitor fires after 480 s
    th = F + sec(483.2)
    tr.add(bad_node, th, "\n".join([
        tr.c10(bad, th, "E", "ProcessGroupNCCL.cpp:1423",
               "[PG 0 (default_pg) Rank 7] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued collectives. This typically indicates a NCCL/CUDA API (e.g., CudaEventDestroy) hang blocking the watchdog, and could be triggered by another thread holding the GIL inside a CUDA api (for example, CudaEventDestroy), or other deadlock-prone behaviors.If you suspect the watchdog is not actually stuck and a longer timeout would help, you can either increase the timeout (TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC) to a larger value or disable the heartbeat monitor (TORCH_NCCL_ENABLE_MONITORING=0).If either of aforementioned helps, feel free to file an issue to PyTorch about the short timeout or the behavior of watchdog."),
        tr.c10(bad, th + sec(0.002), "E", "ProcessGroupNCCL.cpp:1491", "[PG 0 (default_pg) Rank 7] Heartbeat monitor timed out! Process will be terminated after dumping debug info. workMetaList_.size()=2"),
        tr.c10(bad, th + sec(60.01), "W", "ProcessGroupNCCL.cpp:1308", "[PG 0 (default_pg) Rank 7] timed out after waiting for 60000ms flight recorder dumps to finish."),
        tr.c10(bad, th + sec(60.02), "F", "ProcessGroupNCCL.cpp:1315", "[PG 0 (default_pg) Rank 7] [PG 0 (default_pg) Rank 7] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued collectives.")]))
    end = cascade(tr, seq, F - sec(0.9), skip_nodes=[bad_node])
    # the bad node's other ranks also time out (they wait on rank 7 inside the node)
    fails = []
    for l in (0, 1, 2):
        r = 4 + l
        t = F - sec(0.9) + sec(600.05 + 0.01 * l)
        tr.watchdog(r, t, seq)
        fails.append((l, -6, t + sec(0.6)))
    tr.agent_fail(bad_node, end + sec(1.0), [(3, -6, th + sec(61))] + fails)
    for n in nodes:
        b.write("logs/%s.out" % n, tr.render(n))
        b.source("logs/%s.out" % n, "applog", node=n)
    slurm_out(b, tr.jobid, [
        "srun: error: gpu-d01: task 0: Exited with exit code 1",
        "srun: error: gpu-d03: task 2: Exited with exit code 1",
        "srun: error: gpu-d04: task 3: Exited with exit code 1",
        "slurmstepd: error: *** STEP %d.0 ON gpu-d01 CANCELLED AT %s ***" % (jobid, slurm_ts(end + sec(3))),
        "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
        "slurmstepd: error: Kill task failed for StepId=%d.0 on node %s" % (jobid, bad_node),
        "srun: error: %s: task 1: Killed" % bad_node], "gpu-d01")
    for n in nodes:
        kl = std_kernel(tr, n, "iso", S, end, n=20)
        if n == bad_node:
            xid_header(kl, F - sec(0.0002), pci, "GPU-19e5b07d-4f2c-e611-93aa-0d4c8f12b7e5", "1653022019654")
            pid = tr.pid[bad]
            kl.block(F, ["NVRM: Xid (PCI:0000:c1:00): 119, pid=%d, name=python3, Timeout after 6s of waiting for RPC response from GPU3 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20800a6a 0x4)." % pid,
                         "NVRM: GPU3 GSP RPC buffer contains function 76 (GSP_RM_CONTROL) and data 0x0000000020800a6a 0x0000000000000004.",
                         "NVRM: GPU3 RPC history (CPU -> GSP):",
                         "NVRM:     entry function                   data0              data1              ts_start           ts_end             duration actively_polling",
                         "NVRM:      0    76   GSP_RM_CONTROL        0x0000000020800a6a 0x0000000000000004 0x00061ea4c91f2a10 0x0000000000000000          y",
                         "NVRM:     -1    10   FREE                  0x00000000c1d00017 0x0000000000000000 0x00061ea4c91f29d2 0x00061ea4c91f29e8     22us  ",
                         "NVRM: GPU3 RPC event history (CPU <- GSP):",
                         "NVRM:     entry function                   data0              data1              ts_start           ts_end             duration during_incomplete_rpc",
                         "NVRM:      0    4108 UCODE_LIBOS_PRINT     0x0000000000000000 0x0000000000000000 0x00061ea4c91c0a72 0x00061ea4c91c0a73      1us  "], step=0.00004)
            kl.k(F + sec(6.1), "NVRM: Rate limiting GSP RPC error prints for GPU at PCI:0000:c1:00 (printing 1 of every 30).  The GPU likely needs to be reset.")
            kl.k(F + sec(6.2), "NVRM: Xid (PCI:0000:c1:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)")
            kl.k(F + sec(44.0), "NVRM: Xid (PCI:0000:c1:00): 119, pid=4102, name=nv-hostengine, Timeout after 6s of waiting for RPC response from GPU3 GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4).")
            kl.k(F + sec(123.0), "INFO: task python3:%d blocked for more than 122 seconds." % pid)
            kl.k(F + sec(123.0), "      Tainted: P           OE      6.5.0-1024-nvidia #25-Ubuntu")
            kl.k(F + sec(123.0), "\"echo 0 > /proc/sys/kernel/hung_task_timeout_secs\" disables this message.")
        b.write("kernel/journal-k-%s.log" % n, kl.lines())
        b.source("kernel/journal-k-%s.log" % n, "syslog", node=n)
    E = end + sec(97)
    b.write("sacct.txt", sacct(jobid, "dit-xl-video", "h100", nodes, S, E, [
        ("", None, "FAILED", "1:0", None, None), (".batch", "batch", "FAILED", "1:0", ["gpu-d01"], None),
        (".extern", "extern", "COMPLETED", "0:0", None, None), (".0", "torchrun", "CANCELLED", "0:9", None, E)]))
    b.write("sinfo-R.txt", ["REASON               USER      TIMESTAMP           NODELIST",
                            "Kill task failed     root      %s %s" % (slurm_ts(E - sec(1)), bad_node)])
    b.source("sacct.txt", "scheduler")
    b.source("sinfo-R.txt", "scheduler", note="sinfo -R after the job ended")
    b.workload(id=str(jobid), scheduler="slurm", cluster="iad3", step="%d.0" % jobid, name="dit-xl-video", user="pnair", queue="h100",
               state="FAILED", exit_code="1:0", reason="NonZeroExitCode", start=S, end=E, nodes=nodes, ranks=tr.rank_node)
    b.expected("gpu.firmware", "definitive", bad_node, root_symptom="gpu.xid.119", affected=[bad_node],
               explained=["nccl.watchdog_timeout"], story="""
      The GSP firmware of GPU 3 on {bad} (PCI 0000:c1:00) stopped answering RPCs at 09:21:06 (Xid 119 for
      python3, later also for nv-hostengine, rate-limited 'The GPU likely needs to be reset', Xid 154 GPU Reset
      Required). Rank 7 hung inside the driver: its heartbeat monitor fired after 480 s and the task was
      unkillable (hung task, 'Kill task failed', node drained). Every other rank timed out in the watchdog on
      SeqNum 88410 ten minutes after the GSP timeout. Reset the GPU / check the driver branch for GSP fixes.""".format(bad=bad_node))


@bundle("xid13-all-gpus-app-fault")
def xid13(b):
    nodes = ["gpu-e01", "gpu-e02", "gpu-e03", "gpu-e04"]
    S, F = ts("2026-07-21T13:00:18"), ts("2026-07-21T13:52:40.101")
    tr = Train(604118, nodes, 8, S, seed=5, timeout_ms=600000, model_numel=16777216)
    start_job(tr, S)
    train(tr, S, F, period=1.9, every=25)
    boots = {"gpu-e01": ts("2026-07-20T07:12:09"), "gpu-e02": ts("2026-07-18T18:44:31"),
             "gpu-e03": ts("2026-07-18T18:46:02"), "gpu-e04": ts("2026-07-19T22:03:57")}
    kls = {n: std_kernel(tr, n, "dmesg", S, F + sec(700), boot=boots[n]) for n in nodes}
    k = kls["gpu-e01"]
    for l in range(8):
        t = F + sec(0.13 * l + tr.rnd.uniform(0, 0.05))
        p, pid = PCI8[l], tr.pid[l]
        gpc, tpc = tr.rnd.randint(0, 7), tr.rnd.randint(0, 8)
        k.block(t, ["NVRM: Xid (PCI:0000:%s:00): 13, pid=%d, name=python3, Graphics SM Warp Exception on (GPC %d, TPC %d, SM 0): Out Of Range Address" % (p, pid, gpc, tpc),
                    "NVRM: Xid (PCI:0000:%s:00): 13, pid=%d, name=python3, Graphics SM Global Exception on (GPC %d, TPC %d, SM 0): Multiple Warp Errors" % (p, pid, gpc, tpc),
                    "NVRM: Xid (PCI:0000:%s:00): 13, pid=%d, name=python3, Graphics Exception: ESR 0x5%x730=0x201000e 0x5%x734=0x24 0x5%x728=0xc81eb60 0x5%x72c=0x1174" % (p, pid, 0x1e + gpc, 0x1e + gpc, 0x1e + gpc, 0x1e + gpc)])
        k.k(t + sec(1.8), "NVRM: Xid (PCI:0000:%s:00): 43, pid=%d, name=python3, Ch 00000008" % (p, pid))
        tr.traceback(l, t + sec(0.2), [("/workspace/pretrain.py", 233, "<module>", "run(cfg)"),
                                      ("/workspace/pretrain.py", 201, "run", "loss = pipeline.forward_backward(batch)"),
                                      ("/workspace/pp/schedule.py", 88, "forward_backward", "act = stage.forward(mb)"),
                                      ("/workspace/model/embed.py", 54, "forward", "pos = fused_ops.position_gather(self.rope_cache, position_ids)"),
                                      ("/workspace/kernels/fused_ops.py", 131, "position_gather", "torch.cuda.synchronize()")],
                     "RuntimeError: CUDA error: an illegal memory access was encountered\n" + "\n".join(CUDA_ASYNC))
    tr.agent_fail("gpu-e01", F + sec(4.4), [(l, 1, F + sec(1.3 + 0.13 * l)) for l in range(8)])
    # stages 1-3 on gpu-e02..gpu-e04 wait on pipeline recv
    seq = 30775
    end = cascade(tr, seq, F - sec(0.2), skip_nodes=["gpu-e01"], op="RECV", numel=16777216)
    # fix op type for pp recv: re-render not needed; recv is implied by numel
    for n in nodes:
        b.write("logs/%s-%s.log" % (tr.jobid, n), tr.render(n))
        b.source("logs/%s-%s.log" % (tr.jobid, n), "applog", node=n)
        b.write("kernel/dmesg-%s.txt" % n, kls[n].lines())
        b.source("kernel/dmesg-%s.txt" % n, "syslog", node=n, boot_time=boots[n])
    E = end + sec(2)
    b.write("sacct.txt", sacct(604118, "pp4-tp8-70b", "gpu", nodes, S, E, [
        ("", None, "FAILED", "1:0", None, None), (".batch", "batch", "FAILED", "1:0", ["gpu-e01"], None),
        (".extern", "extern", "COMPLETED", "0:0", None, None), (".0", "torchrun", "FAILED", "1:0", None, end)]))
    b.source("sacct.txt", "scheduler")
    b.workload(id="604118", scheduler="slurm", cluster="ash1", step="604118.0", name="pp4-tp8-70b", user="jdiaz", queue="gpu",
               state="FAILED", exit_code="1:0", reason="NonZeroExitCode", start=S, end=E, nodes=nodes, ranks=tr.rank_node,
               labels={"team": "llm-infra", "commit": "9c41e7a"})
    b.expected("application.gpu_fault", "definitive", "gpu-e01", affected=[], explained=["nccl.watchdog_timeout"], story="""
      All eight GPUs of gpu-e01 reported Xid 13 'Out Of Range Address' SM warp exceptions within one second at
      13:52:40, each from its own python3 process, and every rank of pipeline stage 0 (ranks 0-7) died with 'CUDA
      error: an illegal memory access was encountered' in fused_ops.position_gather. The same fault on every GPU
      of a node at once is the workload's own kernel (an out-of-range position index in the new fused
      position_gather op), not eight broken GPUs; Xid 43 is channel cleanup. Pipeline stages 1-3 on gpu-e02, gpu-e03
      and gpu-e04 (ranks 8-31) then timed out in the watchdog waiting for activations. Fix the kernel / input; no node needs draining.""")


@bundle("xid31-mmu-fault-one-app")
def xid31(b):
    nodes = ["gpu-f21", "gpu-f22", "gpu-f23", "gpu-f24"]
    S, F = ts("2026-08-11T19:44:00"), ts("2026-08-12T02:13:27.550")
    tr = Train(605901, nodes, 4, S, seed=6, timeout_ms=900000)
    start_job(tr, S)
    train(tr, S, F, period=4.1, every=40)
    bad, pci = 6, "81"
    kls = {n: std_kernel(tr, n, "syslog", S, F + sec(960), n=22) for n in nodes}
    kls["gpu-f22"].k(F, "NVRM: Xid (PCI:0000:%s:00): 31, pid=%d, name=python3, Ch 00000018, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_3 faulted @ 0x7f4a_3c000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ" % (pci, tr.pid[bad]))
    tr.traceback(bad, F + sec(0.31), [("/workspace/moe/train.py", 310, "<module>", "main()"),
                                      ("/workspace/moe/train.py", 271, "main", "out = model(tokens)"),
                                      ("/workspace/moe/layers.py", 144, "forward", "x, perm = moe_ops.permute(x, expert_idx, self.num_experts)"),
                                      ("/workspace/moe/ops.py", 62, "permute", "return _C.moe_permute(x, idx, n)")],
                 "RuntimeError: CUDA error: an illegal memory access was encountered\n" + "\n".join(CUDA_ASYNC))
    tr.agent_fail("gpu-f22", F + sec(4.0), [(2, 1, F + sec(1.0))] + [(l, -15, F + sec(3.6)) for l in (0, 1, 3)],
                  sigterm_locals=[0, 1, 3], sigterm_at=F + sec(1.5))
    end = cascade(tr, 118204, F - sec(0.7), skip_nodes=["gpu-f22"])
    for n in nodes:
        b.write("logs/%s.log" % n, tr.render(n))
        b.source("logs/%s.log" % n, "applog", node=n)
        b.write("kernel/kern-%s.log" % n, kls[n].lines())
        b.source("kernel/kern-%s.log" % n, "syslog", node=n)
    E = end + sec(2)
    b.write("sacct.txt", sacct(605901, "moe-16x7b", "gpu", nodes, S, E, [
        ("", None, "FAILED", "1:0", None, None), (".batch", "batch", "FAILED", "1:0", ["gpu-f21"], None),
        (".extern", "extern", "COMPLETED", "0:0", None, None), (".0", "torchrun", "FAILED", "1:0", None, end)]))
    b.source("sacct.txt", "scheduler")
    b.workload(id="605901", scheduler="slurm", cluster="ash1", step="605901.0", name="moe-16x7b", user="akim", queue="gpu",
               state="FAILED", exit_code="1:0", reason="NonZeroExitCode", start=S, end=E, nodes=nodes, ranks=tr.rank_node)
    b.expected("application.gpu_fault", "probable", "gpu-f22", root_symptom="gpu.xid.31", affected=[],
               explained=["nccl.watchdog_timeout"], story="""
      At 02:13:27 one process (rank 6, python3, GPU 2 of gpu-f22) triggered an MMU page fault (Xid 31,
      FAULT_PDE ACCESS_TYPE_VIRT_READ) and died with 'an illegal memory access' inside the custom moe_permute
      extension. A single Xid 31 from one application, with no other Xid on that GPU, is an out-of-bounds read in
      the workload's code (an expert index outside the permutation table), not a hardware fault. The other ranks
      on gpu-f21 timed out in the watchdog 15 minutes later. Fix the extension; no node needs draining. Probable, not
      definitive: Xid 31 is also what a failing GPU raises, and one occurrence in one process cannot tell the two apart
      (the same GPU faulting in other processes or on other days would).""")


@bundle("nvlink-xid74-sxid")
def nvlink(b):
    nodes = ["gpu-g01", "gpu-g02", "gpu-g03", "gpu-g04"]
    S, F = ts("2026-09-03T04:20:31"), ts("2026-09-03T07:05:12.004")
    tr = Train(611420, nodes, 8, S, seed=7, timeout_ms=600000)
    start_job(tr, S)
    train(tr, S, F, period=2.2, every=50)
    kls = {n: std_kernel(tr, n, "dmesgT", S, F + sec(700), n=16) for n in nodes}
    k = kls["gpu-g02"]
    k.k(F, "nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 37 LTSSM Fault Up")
    k.k(F, "nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Severity 1 Engine instance 37 Sub-engine instance 00")
    k.k(F, "nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Data {0x00000025, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000}")
    xid_header(k, F + sec(0.2), "ab", "GPU-5b8e2c90-3d1f-0a47-e6c2-7f9d1a30b84e", "1652823034590")
    k.k(F + sec(0.2), "NVRM: Xid (PCI:0000:ab:00): 74, pid=%d, name=python3, NVLink: fatal error detected on link 7(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)" % tr.pid[13])
    k.k(F + sec(0.21), "NVRM: Xid (PCI:0000:ab:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)")
    kls["gpu-g02"].k(F - sec(3600 * 2.2), "nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 22013, Non-fatal, Link 37 Minion Link DLREQ interrupt")
    te = F + sec(0.6)
    tr.add("gpu-g02", te, "gpu-g02:%d:%d [5] enqueue.cc:1556 NCCL WARN Cuda failure 'uncorrectable NVLink error detected during the execution'" % (tr.pid[13], tr.pid[13] + 185))
    tr.add("gpu-g02", te + sec(0.001), "gpu-g02:%d:%d [5] NCCL INFO enqueue.cc:2001 -> 1" % (tr.pid[13], tr.pid[13] + 185))
    tr.traceback(13, te + sec(0.2), TRAIN_FRAMES[:3], "RuntimeError: CUDA error: uncorrectable NVLink error detected during the execution\n" + "\n".join(CUDA_ASYNC))
    others = [l for l in range(8) if l != 5]
    tr.agent_fail("gpu-g02", te + sec(4), [(5, 1, te + sec(0.9))] + [(l, -15, te + sec(3.5)) for l in others],
                  sigterm_locals=others, sigterm_at=te + sec(1.3))
    end = cascade(tr, 37120, F - sec(1.1), skip_nodes=["gpu-g02"])
    for n in nodes:
        b.write("logs/%s.log" % n, tr.render(n))
        b.source("logs/%s.log" % n, "applog", node=n)
        b.write("kernel/dmesg-T-%s.txt" % n, kls[n].lines())
        b.source("kernel/dmesg-T-%s.txt" % n, "syslog", node=n)
    E = end + sec(2)
    b.write("sacct.txt", sacct(611420, "vlm-40b", "gpu", nodes, S, E, [
        ("", None, "FAILED", "1:0", None, None), (".batch", "batch", "FAILED", "1:0", ["gpu-g01"], None),
        (".extern", "extern", "COMPLETED", "0:0", None, None), (".0", "torchrun", "FAILED", "1:0", None, end)]))
    b.source("sacct.txt", "scheduler")
    b.workload(id="611420", scheduler="slurm", cluster="ash1", step="611420.0", name="vlm-40b", user="sfischer", queue="gpu",
               state="FAILED", exit_code="1:0", reason="NonZeroExitCode", start=S, end=E, nodes=nodes, ranks=tr.rank_node)
    b.expected("gpu.nvlink", "definitive", "gpu-g02", root_symptom="gpu.xid.74", affected=["gpu-g02"],
               explained=["nccl.watchdog_timeout"], story="""
      At 07:05:12 NVSwitch 1 of gpu-g02 reported a fatal SXid 20034 (LTSSM Fault Up on link 37) and GPU 5
      (PCI 0000:ab:00) the matching Xid 74 'NVLink: fatal error detected on link 7'; the same switch link had
      logged a non-fatal SXid 22013 two hours earlier. Rank 13 failed with 'uncorrectable NVLink error detected
      during the execution', torchrun stopped gpu-g02's workers and the 24 ranks on gpu-g01, gpu-g03 and gpu-g04 timed
      out in the watchdog ten minutes later. Drain gpu-g02 and run the NVLink field diagnostics.""")
