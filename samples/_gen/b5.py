"""Kubernetes/Kueue, success, ambiguous, messy-input and metrics-only bundles."""
import json
from common import *  # noqa
from registry import bundle
from b1 import CUDA_ASYNC, TRAIN_FRAMES, slurm_out
from b3 import basic, kernels, wl
from b4 import sigterm_all


def pod_status(name, node, phase, reason, exit_code, started, finished, restart=0, msg=None, preason=None):
    st = {"terminated": {"exitCode": exit_code, "reason": reason, "startedAt": iso(started), "finishedAt": iso(finished),
                         "containerID": "containerd://%s" % __import__("hashlib").sha256(name.encode()).hexdigest()}}
    d = {"metadata": {"name": name, "namespace": "llm-train"}, "spec": {"nodeName": node},
         "status": {"phase": phase, "containerStatuses": [{"name": "pytorch", "ready": False, "restartCount": restart, "state": st}]}}
    if preason:
        d["status"]["reason"] = preason
        d["status"]["message"] = msg
    return json.dumps(d, sort_keys=True)


def k8s_job(b, jobname, nodes, S, F, seed, jobid):
    tr = Train(jobid, nodes, 4, S, seed=seed, timeout_ms=600000)
    start_job(tr, S)
    train(tr, S, F, period=2.0, fmt="hf")
    pods = {n: "%s-worker-%d" % (jobname, i) for i, n in enumerate(nodes)}
    return tr, pods


@bundle("kueue-pod-oomkilled")
def kueue_oom(b):
    nodes = ["gke-a3-pool-7c1e", "gke-a3-pool-9f02", "gke-a3-pool-3d55", "gke-a3-pool-b810"]
    S, F = ts("2026-06-24T10:00:00"), ts("2026-06-24T11:34:12")
    tr, pods = k8s_job(b, "sft-gemma", nodes, S, F, 40, "sft-gemma-2mq8x")
    pod_ip = tr.ip[nodes[1]]  # the OOB address NCCL printed for worker-1 at init
    for k in (0, 2, 3):
        for l in range(4):
            peer_remote_error(tr, 4 * k + l, F + sec(1.2 + 0.1 * l + 0.03 * k), 5521, pod_ip, 40200 + 4 * k + l, how="closed")
        tr.agent_fail(nodes[k], F + sec(3 + 0.03 * k), [(l, -6, F + sec(1.6 + 0.1 * l + 0.03 * k)) for l in range(4)])
    for n in nodes:
        p = "logs/%s.log" % pods[n]
        b.write(p, tr.render(n))
        b.source(p, "applog", node=n, pod=pods[n], container="pytorch", namespace="llm-train")
    ev = ["LAST SEEN   TYPE      REASON              OBJECT                                   MESSAGE",
          "94m         Normal    QuotaReserved       workload/pytorchjob-sft-gemma-5b1c2      Quota reserved in ClusterQueue a3-cq, wait time since queued was 0s",
          "94m         Normal    Admitted            workload/pytorchjob-sft-gemma-5b1c2      Admitted by ClusterQueue a3-cq, wait time since reservation was 0s",
          "94m         Normal    Scheduled           pod/sft-gemma-worker-0                   Successfully assigned llm-train/sft-gemma-worker-0 to gke-a3-pool-7c1e",
          "94m         Normal    Scheduled           pod/sft-gemma-worker-1                   Successfully assigned llm-train/sft-gemma-worker-1 to gke-a3-pool-9f02",
          "94m         Normal    Scheduled           pod/sft-gemma-worker-2                   Successfully assigned llm-train/sft-gemma-worker-2 to gke-a3-pool-3d55",
          "94m         Normal    Scheduled           pod/sft-gemma-worker-3                   Successfully assigned llm-train/sft-gemma-worker-3 to gke-a3-pool-b810",
          "12s         Warning   OOMKilling          node/gke-a3-pool-9f02                    Memory cgroup out of memory: Killed process %d (python3) total-vm:412201440kB, anon-rss:201310004kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:400120kB oom_score_adj:-997" % tr.pid[5],
          "10s         Warning   BackOff             pod/sft-gemma-worker-1                   Back-off restarting failed container pytorch in pod sft-gemma-worker-1_llm-train(8c2f6e1a-0d4b-4b7e-9a61-2f1c3d9e7a55)",
          "8s          Normal    Finished            workload/pytorchjob-sft-gemma-5b1c2      Workload 'llm-train/pytorchjob-sft-gemma-5b1c2' is declared finished"]
    b.write("k8s/events.txt", ev)
    b.source("k8s/events.txt", "k8s_event", note="kubectl get events -n llm-train, captured %s" % iso(F + sec(12)))
    b.write("k8s/pods.jsonl", [pod_status(pods[nodes[0]], nodes[0], "Failed", "Error", 1, S, F + sec(3)),
                               pod_status(pods[nodes[1]], nodes[1], "Failed", "OOMKilled", 137, S, F),
                               pod_status(pods[nodes[2]], nodes[2], "Failed", "Error", 1, S, F + sec(3.06)),
                               pod_status(pods[nodes[3]], nodes[3], "Failed", "Error", 1, S, F + sec(3.09))])
    b.source("k8s/pods.jsonl", "k8s_event", note="pod status JSON, one pod per line")
    E = F + sec(8)
    b.workload(id="pytorchjob-sft-gemma-5b1c2", scheduler="kueue", cluster="gke-a3", name="sft-gemma", user="team-nlp", queue="a3-lq",
               state="Failed", exit_code="137", reason="OOMKilled", start=S, end=E, nodes=nodes, ranks=tr.rank_node,
               labels={"kueue.x-k8s.io/queue-name": "a3-lq"})
    b.expected("application.memory_limit", "definitive", nodes[1], affected=[], story="""
      Pod sft-gemma-worker-1 on gke-a3-pool-9f02 was killed by its container memory limit: the node reported
      'Memory cgroup out of memory: Killed process ... (python3)' and the pod status shows terminated reason
      OOMKilled, exit code 137. Its ranks vanished without a traceback and the ranks of workers 0, 2 and 3 failed with
      'Connection closed by remote peer' a second later. The container's memory limit is too small for this job
      (host-side data loading); the node is healthy.""")


@bundle("kueue-evicted-preempted")
def kueue_pre(b):
    nodes = ["a3-node-0412", "a3-node-0413", "a3-node-0414", "a3-node-0415"]
    S, F = ts("2026-07-30T08:10:00"), ts("2026-07-30T09:55:31")
    tr, pods = k8s_job(b, "eval-harness", nodes, S, F, 41, "eval-harness-77kpd")
    sigterm_all(tr, F + sec(1))
    for n in nodes:
        p = "logs/%s.log" % pods[n]
        b.write(p, tr.render(n))
        b.source(p, "applog", node=n, pod=pods[n], container="pytorch", namespace="research")
    wlname = "pytorchjob-eval-harness-0c9e1"
    ev = ["LAST SEEN   TYPE      REASON              OBJECT                                   MESSAGE",
          "5m          Normal    Preempted           workload/%s   Preempted to accommodate a workload (UID: 3b1f9e20-7c4d-4a8e-b5d1-09e2f6c7a311) in the ClusterQueue" % wlname,
          "5m          Normal    EvictedDueToPreempted workload/%s Preempted to accommodate a workload (UID: 3b1f9e20-7c4d-4a8e-b5d1-09e2f6c7a311) in the ClusterQueue" % wlname,
          *["5m          Normal    Killing             pod/%-36s Stopping container pytorch" % pods[n] for n in nodes]]
    b.write("k8s/events.txt", ev)
    b.source("k8s/events.txt", "k8s_event", note="kubectl get events -n research, captured %s" % iso(F + sec(300)))
    wlobj = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": wlname, "namespace": "research"},
             "status": {"conditions": [
                 {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, 8 more needed", "lastTransitionTime": iso(F + sec(2))},
                 {"type": "Admitted", "status": "False", "reason": "NoReservation", "message": "The workload has no reservation", "lastTransitionTime": iso(F)},
                 {"type": "Evicted", "status": "True", "reason": "Preempted", "message": "Preempted to accommodate a workload (UID: 3b1f9e20-7c4d-4a8e-b5d1-09e2f6c7a311) in the ClusterQueue", "lastTransitionTime": iso(F)},
                 {"type": "Preempted", "status": "True", "reason": "InClusterQueue", "message": "Preempted to accommodate a workload (UID: 3b1f9e20-7c4d-4a8e-b5d1-09e2f6c7a311) in the ClusterQueue", "lastTransitionTime": iso(F)},
                 {"type": "Requeued", "status": "True", "reason": "Preempted", "message": "Preempted to accommodate a workload (UID: 3b1f9e20-7c4d-4a8e-b5d1-09e2f6c7a311) in the ClusterQueue", "lastTransitionTime": iso(F)}]}}
    b.write("k8s/workload.json", [json.dumps(wlobj, sort_keys=True)])
    b.source("k8s/workload.json", "k8s_event", note="kubectl get workload -o json")
    b.write("k8s/pods.jsonl", [pod_status(pods[n], n, "Failed", "Error", 143, S, F + sec(6)) for n in nodes])
    b.source("k8s/pods.jsonl", "k8s_event")
    E = F + sec(7)
    b.workload(id=wlname, scheduler="kueue", cluster="h100-east", attempt=0, name="eval-harness", user="team-eval", queue="research-lq",
               state="Evicted", exit_code="143", reason="Preempted", start=S, end=E, nodes=nodes, ranks=tr.rank_node)
    b.expected("scheduler.preempted", "definitive", None, affected=[], story="""
      Kueue preempted the workload to make room for a higher-priority one in the same ClusterQueue: the Workload
      has Evicted=True reason Preempted and Preempted=True reason InClusterQueue ('Preempted to accommodate a
      workload ... in the ClusterQueue'). The pods were stopped, torchrun received SIGTERM and the containers exited
      143. Nothing failed; the workload is requeued and waits for quota.""")


@bundle("succeeded-clean-run")
def success(b):
    nodes = ["gpu-b31", "gpu-b32", "gpu-b33", "gpu-b34"]
    S, F = ts("2026-02-02T06:00:00"), ts("2026-02-02T09:30:00")
    tr = basic(b, 765880, nodes, 4, S, F, 42, "distill-1b", "lmarin", period=2.0)
    tr.add(nodes[0], F + sec(1), "%s - INFO - trainer - training completed: 6265 iterations, final lm loss 2.2741" % pylog_ts(F + sec(1)))
    tr.add(nodes[0], F + sec(40), "%s - INFO - checkpoint - saved final checkpoint to /ckpt/distill-1b/final" % pylog_ts(F + sec(40)))
    for n in nodes:
        i = nodes.index(n)
        for l in range(4):
            r = i * 4 + l
            tr.add(n, F + sec(41 + 0.01 * l), "%s NCCL INFO comm 0x%x rank %d nranks %d cudaDev %d busId %s000 - Destroy COMPLETE" % (tr.nccl_pfx(r), 0x55d0c0000000 + r * 0x1f0000, r, tr.world, l, tr.pci[l]))
        tr.add(n, F + sec(43), tr.elastic(n, F + sec(43), "I", "torch/distributed/elastic/agent/server/api.py:879", "[default] worker group successfully finished. Waiting 300 seconds for other agents to finish."))
        tr.add(n, F + sec(43.1), tr.elastic(n, F + sec(43.1), "I", "torch/distributed/elastic/agent/server/api.py:932", "Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish"))
        tr.add(n, F + sec(43.3), tr.elastic(n, F + sec(43.3), "I", "torch/distributed/elastic/agent/server/api.py:946", "Done waiting for other agents. Elapsed: 0.1993 seconds"))
    write_apps(b, tr, "logs/{node}.log")
    kernels(b, tr, S, F + sec(60), style="dmesgT")
    E = F + sec(45)
    std_sacct(b, tr, "distill-1b", "gpu", S, E, state="COMPLETED", ec="0:0")
    wl(b, tr, "distill-1b", "lmarin", S, E, state="COMPLETED", ec="0:0", reason="None")
    b.expected("none.succeeded", "definitive", None, affected=[], story="""
      The job trained for 3.5 hours, logged 'training completed', saved its final checkpoint, destroyed its NCCL
      communicators and every torchrun agent reported WorkerState.SUCCEEDED; sacct says COMPLETED 0:0. The kernel
      logs only contain routine noise (including the benign nvidia-peermem 'invalid context' message).""")


@bundle("two-gpu-failures-ambiguous")
def ambiguous(b):
    nodes = ["gpu-w01", "gpu-w02", "gpu-w03", "gpu-w04"]
    S, F = ts("2026-11-18T00:30:00"), ts("2026-11-18T04:02:11.400")
    tr = basic(b, 766301, nodes, 4, S, F, 43, "pt-moe-8x", "cyilmaz", period=2.0)
    for n, r, t, msg in [("gpu-w02", 6, F + sec(2.9), "CUDA error: unknown error"), ("gpu-w04", 13, F + sec(2.4), "CUDA error: uncorrectable ECC error encountered")]:
        tr.traceback(r, t, TRAIN_FRAMES[:3], "RuntimeError: %s\n" % msg + "\n".join(CUDA_ASYNC))
        l = r % 4
        others = [x for x in range(4) if x != l]
        tr.agent_fail(n, t + sec(3), [(l, 1, t + sec(0.5))] + [(x, -15, t + sec(2.6)) for x in others], sigterm_locals=others, sigterm_at=t + sec(1))
    end = cascade(tr, 61133, F - sec(0.5), skip_nodes=["gpu-w02", "gpu-w04"])
    write_apps(b, tr, "logs/{node}.log")

    def w02(kl):
        xid_header(kl, F, "81", "GPU-1c0b9e44-5a7f-2e13-88d0-4b6a2f19c7e0", "1654122090417")
        kl.k(F, "NVRM: Xid (PCI:0000:81:00): 79, pid=0, GPU has fallen off the bus.")
        kl.k(F + sec(0.001), "NVRM: GPU 0000:81:00.0: GPU has fallen off the bus.")

    def w04(kl):
        xid_header(kl, F + sec(1.8), "41", "GPU-9d2e41b0-c6a3-7f58-1e0d-a4b3c2917f66", "1654122091188")
        kl.k(F + sec(1.8), "NVRM: Xid (PCI:0000:41:00): 48, pid=%d, name=python3, Ch 00000008, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 2, subpartition 1." % tr.pid[13])
        kl.k(F + sec(2.1), "NVRM: Xid (PCI:0000:41:00): 45, pid=%d, name=python3, Ch 00000008 caused by previous Xid 48" % tr.pid[13])
    kernels(b, tr, S, end, style="syslog", extra={"gpu-w02": w02, "gpu-w04": w04})
    E = end + sec(2)
    std_sacct(b, tr, "pt-moe-8x", "gpu", S, E, step_end=end)
    wl(b, tr, "pt-moe-8x", "cyilmaz", S, E)
    b.expected("gpu.fell_off_bus", "ambiguous", None, affected=["gpu-w02", "gpu-w04"], explained=["nccl.watchdog_timeout"], story="""
      Two independent GPU failures hit the job 1.8 seconds apart: GPU 2 of gpu-w02 fell off the bus (Xid 79) at
      04:02:11.4 and GPU 1 of gpu-w04 reported a double-bit ECC error (Xid 48, then Xid 45) at 04:02:13.2. Each
      killed its own rank (6 and 13) and either alone would have produced the watchdog timeouts on gpu-w01 and
      gpu-w03. The Xid 79 is first, but 1.8 s is within the jitter of log timestamps across hosts, so the evidence
      does not single out one cause: both nodes need action (reboot/RMA gpu-w02's GPU, reset gpu-w04's GPU).""")


@bundle("messy-input-xid79")
def messy(b):
    nodes = ["gpu-m01", "gpu-m02", "gpu-m03", "gpu-m04"]
    S, F = ts("2026-05-27T13:00:00"), ts("2026-05-27T15:12:09.250")
    tr = basic(b, 767044, nodes, 4, S, F, 44, "asr-rnnt", "pkowalski", period=2.0, fmt="hf")
    bad = 5
    tr.traceback(bad, F + sec(3), TRAIN_FRAMES[:3], "RuntimeError: CUDA error: unknown error\n" + "\n".join(CUDA_ASYNC))
    tr.agent_fail("gpu-m02", F + sec(6), [(1, 1, F + sec(3.5)), (0, -15, F + sec(5.5)), (2, -15, F + sec(5.5)), (3, -15, F + sec(5.5))], sigterm_locals=[0, 2, 3], sigterm_at=F + sec(4))
    end = cascade(tr, 3881, F - sec(0.4), skip_nodes=["gpu-m02"])
    # app logs: ANSI colours, CRLF, a junk block, invalid UTF-8, truncated last line
    for n in nodes:
        lines = tr.render(n)
        out = []
        for i, ln in enumerate(lines):
            if "INFO - trainer" in ln:
                ln = ln.replace("INFO", "\x1b[32mINFO\x1b[0m", 1)
            if "NCCL WARN" in ln or "Traceback" in ln or "Error" in ln[:40]:
                ln = "\x1b[1;31m" + ln + "\x1b[0m"
            out.append(ln.encode("utf-8"))
            if i == 25:
                out.append(b"tokenizer: caf\xe9 na\xefve \xff\xfe r\xc3sum\xe9")
            if i == 40:
                out.append(bytes(range(0, 32)) + b"\x00\x00\x7f\x80\x81\xfe\xff" + bytes(range(200, 256)))
                out.append(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x02\x00")
        data = b"\r\n".join(out)
        data = data[: len(data) - 17]  # the file was copied while being written: truncated last line
        p = "logs/%s.log" % n
        b.write(p, None, raw=data)
        b.source(p, "applog", node=n)
    boots = {"gpu-m01": ts("2026-05-20T10:00:00"), "gpu-m02": ts("2026-05-21T08:12:51"),
             "gpu-m03": ts("2026-05-20T10:01:12"), "gpu-m04": ts("2026-05-24T16:40:09")}
    for n in nodes:
        kl = std_kernel(tr, n, "dmesg", S, end, boot=boots[n], n=14)
        if n == "gpu-m02":
            xid_header(kl, F, "41", "GPU-2a9c7e10-44b1-9d3f-c0e8-61f7a2b5d903", "1654023077120")
            kl.block(F + sec(0.0002), ["NVRM: Xid (PCI:0000:41:00): 79, pid=0, GPU has fallen off the bus.",
                                       "NVRM: GPU 0000:41:00.0: GPU has fallen off the bus.",
                                       "NVRM: A GPU crash dump has been created. If possible, please run",
                                       "NVRM: nvidia-bug-report.sh as root to collect this data before",
                                       "NVRM: the NVIDIA kernel module is unloaded."], step=0.0007)
        data = ("\r\n".join(kl.lines()) + "\r\n").encode()
        if n == "gpu-m02":
            data = data.replace(b"NVRM: GPU Board", b"\x1b[33mNVRM: GPU Board", 1).replace(b"\r\n[", b"\x1b[0m\r\n[", 1)
            data += b"\xde\xad\xbe\xef\x00\x01\x02 garbage from a serial console \xc3\x28\r\n[" + str(int((end - boots[n]).total_seconds())).encode() + b".00"
        p = "kernel/dmesg-%s.txt" % n
        b.write(p, None, raw=data)
        b.source(p, "syslog", node=n, boot_time=boots[n])
    E = end + sec(2)
    std_sacct(b, tr, "asr-rnnt", "gpu", S, E, step_end=end)
    wl(b, tr, "asr-rnnt", "pkowalski", S, E)
    b.expected("gpu.fell_off_bus", "definitive", "gpu-m02", root_symptom="gpu.xid.79", affected=["gpu-m02"], explained=["nccl.watchdog_timeout"], story="""
      Same story as the canonical cascade, in dirty files: CRLF line endings, ANSI colour codes around INFO/WARN and
      traceback lines, invalid UTF-8 bytes, a few lines of binary junk (control bytes, a PNG header, serial-console
      garbage) and truncated last lines in both the app logs and the gpu-m02 dmesg. Under the noise the evidence is
      clear: GPU 1 of gpu-m02 (PCI 0000:41:00) fell off the bus at 15:12:09 (Xid 79), rank 5 died with 'CUDA error:
      unknown error', and the ranks on gpu-m01, gpu-m03 and gpu-m04 timed out in the watchdog ten minutes later. The tool must not crash.""")


@bundle("dcgm-metrics-only-xid79")
def dcgm(b):
    nodes = ["gpu-c01", "gpu-c02", "gpu-c03", "gpu-c04"]
    S, F = ts("2026-10-13T16:00:00"), ts("2026-10-13T18:27:44.000")
    tr = basic(b, 768520, nodes, 4, S, F, 45, "code-llm-15b", "sbrown", period=2.0)
    end = cascade(tr, 40410, F - sec(0.6), skip_nodes=["gpu-c03"])
    tr.agent_fail("gpu-c03", end + sec(5), [(l, -15, end + sec(4)) for l in range(4)], sigterm_locals=range(4), sigterm_at=end + sec(3))
    write_apps(b, tr, "logs/{node}.log")
    kernels(b, tr, S, end, style="syslog", skip=("gpu-c03",))
    L = ["# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.", "# TYPE DCGM_FI_DEV_XID_ERRORS gauge"]
    t0 = F - sec(150)
    samples = []
    for k in range(12):
        t = t0 + sec(30 * k)
        for g in range(4):
            pb = "00000000:%s:00.0" % PCI4[g].upper()
            v = 79 if (g == 2 and t >= F) else 0
            samples.append('DCGM_FI_DEV_XID_ERRORS{gpu="%d",UUID="GPU-c03%d-77e1-4b0a-9d2c-5f1e3a8b0c4%d",pci_bus_id="%s",device="nvidia%d",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-c03",instance="gpu-c03:9400"} %d %d'
                           % (g, g, g, pb, g, v, int(t.timestamp() * 1000)))
    L += samples
    L += ["# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).", "# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    for k in range(12):
        t = t0 + sec(30 * k)
        for g in range(4):
            u = 0 if t >= F and g == 2 else (97 if t < F else 0)
            L.append('DCGM_FI_DEV_GPU_UTIL{gpu="%d",pci_bus_id="00000000:%s:00.0",Hostname="gpu-c03",instance="gpu-c03:9400"} %d %d' % (g, PCI4[g].upper(), u, int(t.timestamp() * 1000)))
    b.write("metrics/dcgm.prom", L)
    b.source("metrics/dcgm.prom", "node_metrics", node="gpu-c03", note="dcgm-exporter samples exported from Prometheus")
    E = end + sec(7)
    std_sacct(b, tr, "code-llm-15b", "gpu", S, E)
    wl(b, tr, "code-llm-15b", "sbrown", S, E)
    b.expected("gpu.fell_off_bus", "probable", "gpu-c03", affected=["gpu-c03"], explained=["nccl.watchdog_timeout"], story="""
      The ranks on gpu-c01, gpu-c02 and gpu-c04 timed out in the watchdog on ALLREDUCE SeqNum=40410 at about 18:37:44; gpu-c03's
      ranks never reported it and were only terminated at teardown. No kernel log of gpu-c03 was collected, but its
      dcgm-exporter series show DCGM_FI_DEV_XID_ERRORS switching from 0 to 79 for GPU 2 (00000000:81:00.0) at
      18:27:44, with that GPU's utilisation dropping to 0: the GPU fell off the bus ten minutes before the timeouts.
      The Xid comes only from a metrics gauge (last Xid value, no kernel line), hence probable. Pull gpu-c03's
      kernel log to confirm; drain it.""")
