"""Network and node bundles."""
from common import *  # noqa
from registry import bundle
from b1 import CUDA_ASYNC, TRAIN_FRAMES, slurm_out


@bundle("roce-err12-at-job-start")
def roce12(b):
    nodes = ["rc-n01", "rc-n02", "rc-n03", "rc-n04"]
    S = ts("2026-02-10T15:30:05")
    tr = Train(1207731, nodes, 4, S, seed=8, net="RoCE", ipbase="10.60")
    start_job(tr, S)
    F = S + sec(84.3)
    gids = {n: "fe80::ba3f:d2ff:fe%02x:%02x%02x" % (i * 16 + 3, 0x40 + i, 0xa2 + i) for i, n in enumerate(nodes)}
    ends = {}
    for r in range(tr.world):
        n = tr.node_of(r)
        peer = nodes[(nodes.index(n) + 1) % len(nodes)]
        t = F + sec(tr.rnd.uniform(0, 1.8))
        p = tr.nccl_pfx(r)
        last = ("NET/IB: Got completion from peer %s<%d> with status=12 opcode=129 len=0 vendor err 129 (Recv) localGid %s remoteGids %s hca mlx5_%d"
                % (tr.ip[peer], 53000 + tr.rnd.randint(0, 999), gids[n], gids[peer], tr.local(r) // 2))
        tr.add(n, t, "%s transport/net_ib.cc:2244 NCCL WARN %s\n%s NCCL INFO transport/net.cc:1302 -> 6\n%s NCCL INFO proxy.cc:878 -> 6 [Progress Thread]" % (p, last, p, p))
        tr.traceback(r, t + sec(0.4), [("/opt/app/train.py", 96, "<module>", "main()"),
                                       ("/opt/app/train.py", 61, "main", "dist.all_reduce(torch.ones(1, device=device))  # warm-up"),
                                       ("%s/torch/distributed/c10d_logger.py" % PY, 83, "wrapper", "return func(*args, **kwargs)"),
                                       ("%s/torch/distributed/distributed_c10d.py" % PY, 2501, "all_reduce", "work = group.allreduce([tensor], opts)")],
                     "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2027, remote process exited or there was a network error, NCCL version 2.21.5\n"
                     "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.\nLast error:\n" + last)
        ends[n] = max(ends.get(n, t), t + sec(1.0))
    for n in nodes:
        tr.agent_fail(n, ends[n] + sec(1.2), [(l, 1, ends[n] + sec(0.05 * l)) for l in range(tr.gpn)])
    end = max(ends.values()) + sec(2)
    write_apps(b, tr, "logs/{job}.{node}.out")
    for n in nodes:
        kl = std_kernel(tr, n, "syslog", S, end, n=10)
        kl.k(S - sec(3600 * 5), "mlx5_core 0000:0c:00.0 enp12s0f0np0: Link up")
        kl.k(S - sec(3600 * 5 - 0.2), "mlx5_core 0000:0c:00.1 enp12s0f1np1: Link up")
        b.write("kernel/syslog-%s" % n, kl.lines())
        b.source("kernel/syslog-%s" % n, "syslog", node=n)
    E = end + sec(1)
    std_sacct(b, tr, "qwen-ft-roce", "roce", S, E, step_end=end)
    b.workload(id="1207731", scheduler="slurm", cluster="roce-lab", step="1207731.0", name="qwen-ft-roce", user="dchen", queue="roce",
               state="FAILED", exit_code="1:0", reason="NonZeroExitCode", start=S, end=E, nodes=nodes, ranks=tr.rank_node,
               labels={"fabric": "roce-v2"})
    b.expected("network.configuration", "definitive", None, affected=[], story="""
      The job never trained: the very first warm-up all_reduce, 45 seconds after NCCL init, failed on all sixteen
      ranks of all four nodes with IB completion status 12 (transport retry counter exceeded, vendor err 129).
      Every rank reports it, in every direction of the ring, and the GIDs in the messages are link-local fe80::
      addresses (GID index 0) on a routed RoCE v2 fabric, so the packets could never be delivered. No node logged
      a port or link event. This is a fabric configuration problem (NCCL_IB_GID_INDEX / RoCE routing), not a
      broken node: fix the job environment, nothing to drain.""")


@bundle("ib-link-flap-midrun")
def linkflap(b):
    nodes = ["gpu-h01", "gpu-h02", "gpu-h03", "gpu-h04"]
    S, F = ts("2026-04-22T11:05:50"), ts("2026-04-22T16:38:02.770")
    tr = Train(733019, nodes, 4, S, seed=9, timeout_ms=300000)
    start_job(tr, S)
    train(tr, S, F, period=1.7, every=100)
    seq = 77190
    kls = {n: std_kernel(tr, n, "syslog", S, F + sec(400), n=20) for n in nodes}
    k = kls["gpu-h03"]
    nic = "0000:3b:00.0"
    k.k(F - sec(0.4), "mlx5_core %s: Port module event[error]: module 2, Cable error, Bad or shorted cable/module" % nic)
    for dt_down, dt_up in [(0, 5.9), (38.2, 41.0), (95.5, 101.3)]:
        k.k(F + sec(dt_down), "mlx5_core %s mlx5_2: Port: 1 Link DOWN" % nic)
        k.k(F + sec(dt_down + 0.002), "IPv6: ADDRCONF(NETDEV_CHANGE): ib2: link is not ready")
        k.k(F + sec(dt_up), "mlx5_core %s mlx5_2: Port: 1 Link ACTIVE" % nic)
    # rank on the flapping rail (local 2 of gpu-h03 -> rank 10) sees async events
    r = 10
    p = tr.nccl_pfx(r)
    tr.add("gpu-h03", F + sec(0.01), "%s transport/net_ib.cc:143 NCCL WARN NET/IB : Got async event : port error" % p)
    tr.add("gpu-h03", F + sec(5.92), "%s transport/net_ib.cc:143 NCCL WARN NET/IB : Got async event : port active" % p)
    # peers on rail 2 see their QPs to gpu-h03 time out (error 12, peer = gpu-h03's address)
    h03ip = tr.ip["gpu-h03"].rsplit(".", 1)[0] + ".%d" % (int(tr.ip["gpu-h03"].rsplit(".", 1)[1]) + 2)
    died = {}
    for rr in (2, 6, 14):
        t = F + sec(17.8 + tr.rnd.uniform(0, 0.6))
        peer_remote_error(tr, rr, t, seq, h03ip, 41000 + rr, how="ib12")
        died[rr] = t + sec(0.3)
    t = F + sec(18.9)
    last = "NET/IB : Got completion from peer %s<%d> with error 12, opcode 0, len 0, vendor err 129 (Recv)" % (tr.ip["gpu-h02"].rsplit(".", 1)[0] + ".%d" % (int(tr.ip["gpu-h02"].rsplit(".", 1)[1]) + 2), 41106)
    tr.add("gpu-h03", t, "%s transport/net_ib.cc:1696 NCCL WARN %s" % (p, last))
    tr.async_error(r, t + sec(0.3), seq, "remote process exited or there was a network error", last)
    died[r] = t + sec(0.3)
    # every agent with a dead worker stops its node; remaining ranks elsewhere time out? no: agents kill locals quickly
    for n in nodes:
        i = nodes.index(n)
        dead = [(rr % 4, -6, died[rr] + sec(0.4)) for rr in died if tr.node_of(rr) == n]
        rest = [l for l in range(4) if (i * 4 + l) not in died]
        ta = dead[0][2] + sec(1.5)
        tr.agent_fail(n, ta + sec(2.0), dead + [(l, -15, ta + sec(1.6)) for l in rest], sigterm_locals=rest, sigterm_at=ta)
    end = F + sec(26)
    write_apps(b, tr, "logs/{node}.log")
    for n in nodes:
        b.write("kernel/syslog-%s" % n, kls[n].lines())
        b.source("kernel/syslog-%s" % n, "syslog", node=n)
    E = end + sec(2)
    std_sacct(b, tr, "gpt-20b-ib", "gpu", S, E, step_end=end)
    b.workload(id="733019", scheduler="slurm", cluster="ash2", step="733019.0", name="gpt-20b-ib", user="ovolkov", queue="gpu",
               state="FAILED", exit_code="1:0", reason="NonZeroExitCode", start=S, end=E, nodes=nodes, ranks=tr.rank_node)
    b.expected("network.link_flap", "definitive", "gpu-h03", affected=["gpu-h03"], story="""
      Five and a half hours into training, the cable of HCA mlx5_2 on gpu-h03 (0000:3b:00.0) reported 'Bad or
      shorted cable/module' and port 1 went DOWN/ACTIVE three times within two minutes. NCCL on rank 10 (the rank
      using that rail) logged 'Got async event : port error'; 18 seconds after the first flap the rail-2 ranks on the
      other nodes (2, 6, 14) got IB completion error 12 with gpu-h03's rail-2 address as the peer, and rank 10 itself
      lost its QPs. All errors converge on one port that has link events in its kernel log: a flapping link, not a
      crashed peer. Replace the cable/transceiver on gpu-h03 mlx5_2.""")


@bundle("ib-err4-acs-enabled")
def acs(b):
    nodes = ["gpu-p11", "gpu-p12", "gpu-p13", "gpu-p14"]
    S = ts("2026-10-05T09:12:40")
    tr = Train(750144, nodes, 8, S, seed=10, ipbase="10.50")
    start_job(tr, S)
    F = S + sec(57.1)
    tr.add("gpu-p12", S + sec(1.2), "[preflight] gpu-p12: WARNING: PCIe ACS enabled on 0000:16:02.0 0000:16:03.0 (PLX PEX890xx ports above mlx5_0/GPU0, mlx5_1/GPU1); GPUDirect RDMA peer traffic will be redirected to the root complex")
    for n in ("gpu-p11", "gpu-p13", "gpu-p14"):
        tr.add(n, S + sec(1.1), "[preflight] %s: ACS disabled on all PCIe switch downstream ports: OK" % n)
    died = {}
    for l in range(8):
        r = 8 + l
        t = F + sec(tr.rnd.uniform(0, 0.4))
        p = tr.nccl_pfx(r)
        peer = "gpu-p11" if l % 2 == 0 else "gpu-p13"  # ring neighbours on both sides
        last = ("NET/IB : Got completion from peer %s<%d> with status=4 opcode=0 len=0 vendor err 81 (Send) localGid ::ffff:%s remoteGids::ffff:%s hca mlx5_%d"
                % (tr.ip[peer], 43100 + l, tr.ip["gpu-p12"], tr.ip[peer], l // 2))
        tr.add("gpu-p12", t, "%s transport/net_ib.cc:2244 NCCL WARN %s\n%s NCCL INFO transport/net.cc:1302 -> 6\n%s NCCL INFO proxy.cc:878 -> 6 [Progress Thread]" % (p, last, p, p))
        tr.async_error(r, t + sec(0.2), 3, "remote process exited or there was a network error", last)
        died[r] = t + sec(0.4)
    tr.agent_fail("gpu-p12", F + sec(3.0), [(r - 8, -6, died[r]) for r in sorted(died, key=died.get)])
    for n in ("gpu-p11", "gpu-p13", "gpu-p14"):
        i = nodes.index(n)
        for l in range(8):
            peer_remote_error(tr, i * 8 + l, F + sec(3.4 + 0.02 * l + 0.05 * i), 3, "gpu-p12.ord1.cluster", 38000 + i * 8 + l, how="closed")
        tr.agent_fail(n, F + sec(6.0 + 0.05 * i), [(l, -6, F + sec(4.0 + 0.02 * l + 0.05 * i)) for l in range(8)])
    end = F + sec(7)
    write_apps(b, tr, "logs/{node}.out")
    boots = {"gpu-p11": ts("2026-09-30T12:00:41"), "gpu-p12": ts("2026-10-05T08:31:17"),
             "gpu-p13": ts("2026-09-30T12:02:13"), "gpu-p14": ts("2026-09-28T19:47:05")}
    for n in nodes:
        kl = std_kernel(tr, n, "dmesg", S, end, boot=boots[n], n=8)
        kl.k(boots[n] + sec(0.0), "DMI: Supermicro SYS-821GE-TNHR/X13DEG-OAD, BIOS %s" % ("2.3 09/18/2026" if n == "gpu-p12" else "2.1 04/12/2025"))
        kl.k(boots[n] + sec(1.31), "DMAR: IOMMU enabled")
        b.write("kernel/dmesg-%s.txt" % n, kl.lines())
        b.source("kernel/dmesg-%s.txt" % n, "syslog", node=n, boot_time=boots[n])
    lspci = []
    for port in ("16:02.0", "16:03.0"):
        lspci += ["0000:%s PCI bridge: PLX Technology, Inc. PEX890xx PCIe Gen 5 Switch (rev b0) (prog-if 00 [Normal decode])" % port,
                  "\tControl: I/O+ Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR+ FastB2B- DisINTx+",
                  "\tBus: primary=16, secondary=%s, subordinate=%s, sec-latency=0" % ((("17", "17") if port == "16:02.0" else ("18", "18"))),
                  "\tCapabilities: [100 v1] Access Control Services",
                  "\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl+ DirectTrans+",
                  "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-", ""]
    b.write("reports/lspci-vvv-gpu-p12.txt", lspci)
    b.source("reports/lspci-vvv-gpu-p12.txt", "node_report", node="gpu-p12", note="lspci -vvv -s 16:02.0,16:03.0 after the failure")
    E = end + sec(1)
    std_sacct(b, tr, "llama-ft-8b", "gpu", S, E, step_end=end)
    b.workload(id="750144", scheduler="slurm", cluster="ord1", step="750144.0", name="llama-ft-8b", user="bsingh", queue="gpu",
               state="FAILED", exit_code="1:0", reason="NonZeroExitCode", start=S, end=E, nodes=nodes, ranks=tr.rank_node)
    b.expected("node.platform_config", "definitive", "gpu-p12", affected=["gpu-p12"], story="""
      gpu-p12 had been rebooted with a new BIOS (2.3) 40 minutes before the job; the preflight check and lspci both
      show PCIe ACS request/completion redirect enabled on the PLX switch ports above its NICs and GPUs. On the first
      large GPUDirect RDMA transfer every rank on gpu-p12 got IB completion status 4 (local protection error,
      vendor err 81), the signature of ACS breaking NIC-to-GPU peer DMA (the addresses in those errors are its ring
      neighbours gpu-p11 and gpu-p13, the far ends, which are fine); the ranks on gpu-p11, gpu-p13 and gpu-p14 then saw
      their connections to gpu-p12 close. The other three nodes still run BIOS 2.1 with ACS disabled. Disable ACS (BIOS setting or setpci at boot) on gpu-p12; the fabric is fine.""")


@bundle("peer-killed-by-host-oom")
def hostoom(b):
    nodes = ["gpu-i01", "gpu-i02", "gpu-i03", "gpu-i04"]
    S, F = ts("2026-05-02T20:00:12"), ts("2026-05-03T01:17:45.310")
    tr = Train(739120, nodes, 4, S, seed=11)
    start_job(tr, S)
    train(tr, S, F, period=2.4, every=60)
    seq = 31022
    victim = 9
    tr.add("gpu-i03", F + sec(0.9), tr.elastic("gpu-i03", F + sec(0.9), "W", "torch/distributed/elastic/multiprocessing/api.py:897",
                                              "Sending process %d closing signal SIGTERM" % tr.pid[8]))
    for l in (2, 3):
        tr.add("gpu-i03", F + sec(0.9), tr.elastic("gpu-i03", F + sec(0.9), "W", "torch/distributed/elastic/multiprocessing/api.py:897",
                                                  "Sending process %d closing signal SIGTERM" % tr.pid[8 + l]))
    tr.agent_fail("gpu-i03", F + sec(3.1), [(1, -9, F + sec(0.2)), (0, -15, F + sec(2.8)), (2, -15, F + sec(2.8)), (3, -15, F + sec(2.8))])
    for n in ("gpu-i01", "gpu-i02", "gpu-i04"):
        i = nodes.index(n)
        fl = []
        for l in range(4):
            r = i * 4 + l
            t = F + sec(1.1 + tr.rnd.uniform(0, 0.8))
            peer_remote_error(tr, r, t, seq, "gpu-i03.c2.internal", 38900 + r, how="closed" if l % 2 == 0 else "reset")
            fl.append((l, -6, t + sec(0.5)))
        tr.agent_fail(n, F + sec(4.4), fl)
    end = F + sec(5)
    write_apps(b, tr, "logs/{node}.log")
    pid = tr.pid[victim]
    for n in nodes:
        kl = std_kernel(tr, n, "syslog", S, end, n=16)
        if n == "gpu-i03":
            t = F - sec(0.35)
            kl.block(t, [
                "pt_data_worker invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0",
                "CPU: 61 PID: %d Comm: pt_data_worker Tainted: P           OE      5.15.0-119-generic #129-Ubuntu" % (pid + 412),
                "Hardware name: Dell Inc. PowerEdge XE9680/0XF1KH, BIOS 2.3.5 09/10/2025",
                "Call Trace:", " <TASK>", " dump_stack_lvl+0x4a/0x63", " dump_header+0x4a/0x1f4", " oom_kill_process.cold+0xb/0x10",
                " out_of_memory+0x106/0x2e0", " __alloc_pages_slowpath.constprop.0+0x9a3/0xa80", " __alloc_pages+0x311/0x330",
                " alloc_pages_vma+0x95/0x240", " do_anonymous_page+0x108/0x3d0", " __handle_mm_fault+0x83d/0x8c0", " handle_mm_fault+0xd8/0x2c0",
                " do_user_addr_fault+0x1c9/0x670", " exc_page_fault+0x77/0x170", " asm_exc_page_fault+0x27/0x30", " </TASK>",
                "Mem-Info:",
                "active_anon:1512774 inactive_anon:498112011 isolated_anon:0",
                " active_file:1204 inactive_file:933 isolated_file:0",
                " unevictable:8301 dirty:0 writeback:0",
                " slab_reclaimable:301227 slab_unreclaimable:812033",
                " mapped:1022 shmem:11902334 pagetables:1290004",
                " free:2101337 free_pcp:1094 free_cma:0",
                "Free swap  = 0kB", "Total swap = 0kB", "503289127 pages RAM",
                "Tasks state (memory values in pages):",
                "[  pid  ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name",
                "[ 611042]  1004 611042 171120331 151442112 1213538304        0             0 python3",
                "[%7d]  1000 %d 141120020 101442510 822018048        0             0 python3" % (pid, pid),
                "[%7d]  1000 %d 60551204 42881012 344190976        0             0 pt_data_worker" % (pid + 412, pid + 412),
                "[%7d]  1000 %d 139950331 98877001 801431552        0             0 python3" % (tr.pid[8], tr.pid[8]),
                "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,task_memcg=/system.slice/slurmstepd.scope/job_739120/step_0/user/task_0,task=python3,pid=%d,uid=1000" % pid,
                "Out of memory: Killed process %d (python3) total-vm:564480080kB, anon-rss:405765956kB, file-rss:74500kB, shmem-rss:3310112kB, UID:1000 pgtables:802752kB oom_score_adj:0" % pid,
            ], step=0.00002)
            kl.k(F + sec(1.4), "oom_reaper: reaped process %d (python3), now anon-rss:0kB, file-rss:0kB, shmem-rss:3310112kB" % pid)
            kl.k(F - sec(3600 * 9), "slurmstepd[611002]: error: *** JOB 738877 ON gpu-i03 CANCELLED AT %s ***" % slurm_ts(F - sec(3600 * 9)), prog="slurmstepd[611002]")
        b.write("kernel/syslog-%s" % n, kl.lines())
        b.source("kernel/syslog-%s" % n, "syslog", node=n)
    E = end + sec(1)
    std_sacct(b, tr, "pt-7b-longctx", "gpu", S, E, step_end=end)
    b.workload(id="739120", scheduler="slurm", cluster="c2", step="739120.0", name="pt-7b-longctx", user="mgarcia", queue="gpu",
               state="FAILED", exit_code="1:0", reason="NonZeroExitCode", start=S, end=E, nodes=nodes, ranks=tr.rank_node)
    b.expected("node.host_oom", "definitive", "gpu-i03", affected=["gpu-i03"], story="""
      At 01:17:45 the kernel's global OOM killer (CONSTRAINT_NONE, global_oom, no swap) on gpu-i03 killed rank 9's
      python3. The task table shows why the node ran out: a 580 GB python3 owned by uid 1004 left over from job
      738877, which had been cancelled nine hours earlier but never cleaned up. Torchrun on gpu-i03 reported
      exitcode -9 and terminated its other workers; within two seconds every rank on gpu-i01, gpu-i02 and gpu-i04
      failed with ncclRemoteError ('Connection closed by remote peer' / 'Connection reset by peer' naming
      gpu-i03). The remote errors are the consequence of the peer's death, not a network fault. Kill the stray
      process / reboot gpu-i03 and check the epilog cleanup.""")


@bundle("slurm-cgroup-oom-kill")
def cgoom(b):
    nodes = ["gpu-j01", "gpu-j02", "gpu-j03", "gpu-j04"]
    S, F = ts("2026-01-19T07:45:00"), ts("2026-01-19T09:02:31.114")
    tr = Train(739881, nodes, 4, S, seed=12)
    start_job(tr, S)
    train(tr, S, F, period=3.0, every=20)
    r0 = tr.nodes[0]
    tr.add(r0, F - sec(65), "%s - INFO - eval - running evaluation on 'longbench-full' (loading 48,211 documents into memory)" % pylog_ts(F - sec(65)))
    i = 1
    tr.agent_fail("gpu-j02", F + sec(2.4), [(1, -9, F + sec(0.1)), (0, -15, F + sec(2.0)), (2, -15, F + sec(2.0)), (3, -15, F + sec(2.0))],
                  sigterm_locals=[0, 2, 3], sigterm_at=F + sec(0.6))
    for n in ("gpu-j01", "gpu-j03", "gpu-j04"):
        k = nodes.index(n)
        for l in range(4):
            peer_remote_error(tr, k * 4 + l, F + sec(1.0 + 0.1 * l + 0.03 * k), 8806, "gpu-j02.hpc.local", 42100 + k * 4 + l, how="closed")
        tr.agent_fail(n, F + sec(3.5 + 0.03 * k), [(l, -6, F + sec(1.5 + 0.1 * l + 0.03 * k)) for l in range(4)])
    m = merged_srun_log(tr)
    lines = m.lines()
    lines += ["slurmstepd: error: Detected 1 oom_kill event in StepId=739881.0. Some of the step tasks have been OOM Killed.",
              "srun: error: gpu-j02: task 1: Out Of Memory",
              "srun: launch/slurm: _task_finish: Received task exit notification for 1 task of StepId=739881.0 (status=0x0009).",
              "srun: error: gpu-j01: task 0: Exited with exit code 1",
              "srun: error: gpu-j03: task 2: Exited with exit code 1",
              "srun: error: gpu-j04: task 3: Exited with exit code 1",
              "slurmstepd: error: Detected 1 oom_kill event in StepId=739881.batch. Some of the step tasks have been OOM Killed."]
    b.write("slurm-739881.out", lines)
    b.source("slurm-739881.out", "applog", note="srun -l output of all four tasks plus slurmstepd lines")
    for n in nodes:
        kl = std_kernel(tr, n, "iso", S, F + sec(10), n=12)
        if n == "gpu-j02":
            pid = tr.pid[5]
            kl.block(F - sec(0.2), [
                "python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0",
                "memory: usage 209715200kB, limit 209715200kB, failcnt 120031",
                "swap: usage 0kB, limit 0kB, failcnt 0",
                "Memory cgroup stats for /system.slice/slurmstepd.scope/job_739881:",
                "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-1,oom_memcg=/system.slice/slurmstepd.scope/job_739881,task_memcg=/system.slice/slurmstepd.scope/job_739881/step_0/user/task_0,task=python3,pid=%d,uid=1000" % pid,
                "Memory cgroup out of memory: Killed process %d (python3) total-vm:191223040kB, anon-rss:150118212kB, file-rss:81220kB, shmem-rss:2210400kB, UID:1000 pgtables:310112kB oom_score_adj:0" % pid])
            kl.k(F + sec(0.6), "oom_reaper: reaped process %d (python3), now anon-rss:0kB, file-rss:0kB, shmem-rss:2210400kB" % pid)
        b.write("kernel/journal-k-%s.log" % n, kl.lines())
        b.source("kernel/journal-k-%s.log" % n, "syslog", node=n)
    E = F + sec(5)
    b.write("sacct.txt", sacct(739881, "eval-sweep-13b", "gpu", nodes, S, E, [
        ("", None, "OUT_OF_MEMORY", "0:125", None, None), (".batch", "batch", "OUT_OF_MEMORY", "0:125", ["gpu-j01"], None),
        (".extern", "extern", "COMPLETED", "0:0", None, None), (".0", "torchrun", "OUT_OF_MEMORY", "0:125", None, None)]))
    b.source("sacct.txt", "scheduler")
    b.workload(id="739881", scheduler="slurm", cluster="hpc3", step="739881.0", name="eval-sweep-13b", user="tnguyen", queue="gpu",
               state="OUT_OF_MEMORY", exit_code="0:125", reason="OutOfMemory", start=S, end=E, nodes=nodes, ranks=tr.rank_node)
    b.expected("application.memory_limit", "definitive", "gpu-j02", affected=[], story="""
      The job asked for --mem=200G per node. A minute after rank 0 started an evaluation that loads the whole
      48k-document 'longbench-full' set into host memory in every rank, the job's cgroup on gpu-j02 hit its
      limit (usage = limit = 209715200 kB) and the memcg OOM killer (CONSTRAINT_MEMCG) killed rank 5. slurmstepd
      reported 'Detected 1 oom_kill event in StepId=739881.0', srun 'task 1: Out Of Memory', and sacct
      OUT_OF_MEMORY. The remote errors on gpu-j01, gpu-j03 and gpu-j04 are consequences. The job exceeded its own memory request;
      the node is healthy.""")
