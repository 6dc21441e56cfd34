"""Fabric convergence, Kubernetes node-pressure eviction, no-evidence failure and contradictory
scheduler state bundles."""
import json
from common import *  # noqa
from registry import bundle
from b1 import CUDA_ASYNC, slurm_out
from b3 import kernels, wl
from b5 import pod_status


def sigterm_node(tr, node, t, msg="Received Signals.SIGTERM death signal, shutting down workers"):
    """torchrun on one node receives SIGTERM (srun tearing the step down) and forwards it to its workers."""
    tr.add(node, t, tr.elastic(node, t, "W", "torch/distributed/elastic/agent/server/api.py:704", msg))
    i = tr.nodes.index(node)
    for l in range(tr.gpn):
        tr.add(node, t + sec(0.01), tr.elastic(node, t + sec(0.01), "W", "torch/distributed/elastic/multiprocessing/api.py:897",
                                               "Sending process %d closing signal SIGTERM" % tr.pid[i * tr.gpn + l]))


def signal_exception(tr, node, t, sig=15):
    """torchrun re-raises the SignalException after shutting its workers down (torch >= 2.0)."""
    pid = tr.agent_pid[node]
    L = TORCHRUN_TRACEBACK_HEAD + [
         '  File "%s/torch/distributed/launcher/api.py", line 260, in launch_agent' % PY,
         "    result = agent.run()",
         '  File "%s/torch/distributed/elastic/metrics/api.py", line 137, in wrapper' % PY,
         "    result = f(*args, **kwargs)",
         '  File "%s/torch/distributed/elastic/agent/server/api.py", line 696, in run' % PY,
         "    result = self._invoke_run(role)",
         '  File "%s/torch/distributed/elastic/agent/server/api.py", line 855, in _invoke_run' % PY,
         "    time.sleep(monitor_interval)",
         '  File "%s/torch/distributed/elastic/multiprocessing/api.py", line 84, in _terminate_process_handler' % PY,
         '    raise SignalException(f"Process {os.getpid()} got signal: {sigval}", sigval=sigval)',
         "torch.distributed.elastic.multiprocessing.api.SignalException: Process %d got signal: %d" % (pid, sig)]
    tr.add(node, t, "\n".join(L))


def ib_gid(node_idx, hca):
    """Link-local IB GID of one HCA port (fe80:: + port GUID)."""
    return "fe80::a088:c203:%02x:%x%02x" % (0x30 + node_idx, 0x1e0 + hca, 0x40 + node_idx * 4 + hca)


@bundle("ib-fabric-peer-convergence")
def fabric(b):
    nodes = ["gpu-h31", "gpu-h32", "gpu-h33", "gpu-h34"]
    S, F = ts("2026-11-04T02:14:20"), ts("2026-11-04T08:51:37.640")
    tr = Train(772640, nodes, 4, S, seed=50, timeout_ms=600000)
    start_job(tr, S)
    train(tr, S, F, period=2.2, every=60)
    suspect = "gpu-h33"
    si = nodes.index(suspect)
    sip = tr.ip[suspect]
    seq = 64811
    # ranks whose QPs to gpu-h33 were carrying traffic: its ring neighbours on every rail, plus two tree links
    reporters = {"gpu-h32": [0, 1, 2, 3], "gpu-h34": [0, 1, 2, 3], "gpu-h31": [1, 3]}
    died = {}
    for n in nodes:
        if n not in reporters:
            continue
        i = nodes.index(n)
        for l in reporters[n]:
            r = i * tr.gpn + l
            t = F + sec(tr.rnd.uniform(0.0, 2.6))
            p = tr.nccl_pfx(r)
            direction = "Send" if n == "gpu-h32" or l % 2 else "Recv"
            last = ("NET/IB: Got completion from peer %s<%d> with status=12 opcode=%d len=%d vendor err 129 (%s) localGid %s remoteGids %s hca mlx5_%d"
                    % (sip, 47100 + tr.rnd.randint(0, 900), 0 if direction == "Send" else 129, 0 if direction == "Send" else 524288,
                       direction, ib_gid(i, l), ib_gid(si, l), l))
            tr.add(n, t, "%s transport/net_ib.cc:2244 NCCL WARN %s\n%s NCCL INFO transport/net.cc:1302 -> 6\n%s NCCL INFO proxy.cc:878 -> 6 [Progress Thread]"
                   % (p, last, p, p))
            tr.async_error(r, t + sec(0.3), seq, "remote process exited or there was a network error", last)
            died[r] = t + sec(0.6)
    agent_end = {}
    for n, locs in reporters.items():
        i = nodes.index(n)
        fails = sorted([(l, -6, died[i * tr.gpn + l]) for l in locs], key=lambda f: f[2])
        rest = [l for l in range(tr.gpn) if l not in locs]
        ta = fails[0][2] + sec(1.4)
        tr.agent_fail(n, ta + sec(1.8), fails + [(l, -15, ta + sec(1.5)) for l in rest], sigterm_locals=rest, sigterm_at=ta)
        agent_end[n] = ta + sec(1.8)
    # gpu-h33 logged nothing: its ranks were still inside the ALLREDUCE when srun tore the step down
    first_exit = min(agent_end.values()) + sec(0.4)
    tk = first_exit + sec(0.6)
    sigterm_node(tr, suspect, tk)
    signal_exception(tr, suspect, tk + sec(2.1))
    end = max(agent_end.values()) + sec(3.5)
    for n in nodes:
        b.write("logs/%s-%s.out" % (tr.jobid, n), tr.render(n))
        b.source("logs/%s-%s.out" % (tr.jobid, n), "applog", node=n)
    first_node = min(agent_end, key=agent_end.get)
    task = {n: i for i, n in enumerate(nodes)}
    srun = ["+ srun --kill-on-bad-exit=1 --nodes=4 --ntasks-per-node=1 --output=logs/%j-%N.out torchrun --nnodes=4 --nproc-per-node=4 "
            "--rdzv-backend=c10d --rdzv-endpoint=gpu-h31:29500 pretrain.py --config configs/gpt-30b.yaml",
            "srun: error: %s: task %d: Exited with exit code 1" % (first_node, task[first_node]),
            "srun: Terminating StepId=772640.0",
            "slurmstepd: error: *** STEP 772640.0 ON gpu-h31 CANCELLED AT %s DUE TO TASK FAILURE ***" % slurm_ts(tk)]
    for n in sorted(agent_end, key=agent_end.get)[1:]:
        srun.append("srun: error: %s: task %d: Exited with exit code 1" % (n, task[n]))
    srun += ["srun: error: %s: task %d: Exited with exit code 1" % (suspect, task[suspect]),
             "srun: Force Terminated StepId=772640.0"]
    slurm_out(b, tr.jobid, srun, "gpu-h31")
    for n in nodes:
        kl = std_kernel(tr, n, "syslog", S, end, n=20)
        for h in range(4):
            kl.k(S - sec(3600 * 30 - 0.1 * h), "mlx5_core 0000:%s:00.0 mlx5_%d: Port: 1 Link ACTIVE" % (["1a", "3c", "4d", "5e"][h], h))
        b.write("kernel/syslog-%s" % n, kl.lines())
        b.source("kernel/syslog-%s" % n, "syslog", node=n)
    ib = []
    for h in range(4):
        ib += ["CA 'mlx5_%d'" % h, "\tCA type: MT4129", "\tNumber of ports: 1", "\tFirmware version: 28.39.2048",
               "\tHardware version: 0", "\tNode GUID: 0xa088c20300%02x%x%02x" % (0x30 + si, 0x1e0 + h, 0x40 + si * 4 + h),
               "\tSystem image GUID: 0xa088c2030030e1c0", "\tPort 1:", "\t\tState: Active", "\t\tPhysical state: LinkUp",
               "\t\tRate: 400", "\t\tBase lid: %d" % (1200 + si * 8 + h), "\t\tLMC: 0", "\t\tSM lid: 1",
               "\t\tCapability mask: 0xa751e848", "\t\tPort GUID: 0xa088c20300%02x%x%02x" % (0x30 + si, 0x1e0 + h, 0x40 + si * 4 + h),
               "\t\tLink layer: InfiniBand"]
    b.write("reports/ibstat-gpu-h33.txt", ib)
    b.source("reports/ibstat-gpu-h33.txt", "node_report", node=suspect, note="ibstat on gpu-h33, 20 minutes after the failure")
    E = end + sec(2)
    std_sacct(b, tr, "gpt-30b-pt", "gpu", S, E, step_end=end)
    b.workload(id="772640", scheduler="slurm", cluster="ash2", step="772640.0", name="gpt-30b-pt", user="lwalker", queue="gpu",
               state="FAILED", exit_code="1:0", reason="NonZeroExitCode", start=S, end=E, nodes=nodes, ranks=tr.rank_node)
    b.expected("network.fabric", "probable", suspect, root_symptom="network.peer_unreachable", affected=[suspect], story="""
      Six and a half hours into pretraining, at 08:51:37, ten ranks on three nodes (all four of gpu-h32 and gpu-h34,
      ranks 5 and 7 of gpu-h31) got NET/IB completion status 12 (transport retry counter exceeded, vendor err 129)
      within three seconds, on all four rails, and every one names the same peer: %s, gpu-h33's OOB address.
      gpu-h33 itself logged nothing: no Xid, no OOM kill, no traceback, no kernel message; its four ranks were still
      inside ALLREDUCE SeqNum=64811 when srun (--kill-on-bad-exit) terminated the step after the other nodes' workers
      aborted, and its torchrun only reports that SIGTERM ('SignalException: Process ... got signal: 15', teardown). No node logged a port DOWN or link event, and ibstat on gpu-h33 afterwards shows all four HCA ports
      Active/LinkUp at 400 Gb/s. Retries converging on one live host with its links up point at the fabric path to
      gpu-h33 (its HCAs or leaf-switch ports silently dropping traffic) rather than at a crash; the evidence is
      inferred from the far end, hence probable. Exclude gpu-h33 and have the fabric team read the leaf-switch port
      counters and UFM events for 08:51 UTC.""" % sip)


@bundle("k8s-node-pressure-evicted")
def k8s_evicted(b):
    nodes = ["dgx-b017", "dgx-b018", "dgx-b021", "dgx-b022"]
    S, F = ts("2026-11-12T09:30:00"), ts("2026-11-12T14:02:10.652")
    jobname = "mm-pretrain"
    tr = Train("mm-pretrain-7xk2p", nodes, 4, S, seed=51, timeout_ms=600000, ipbase="10.44")
    start_job(tr, S)
    train(tr, S, F, period=2.0, fmt="hf")
    pods = {n: "%s-worker-%d" % (jobname, i) for i, n in enumerate(nodes)}
    bad = "dgx-b021"
    r0 = nodes.index(bad) * tr.gpn  # rank 8: its dataloader shuffle buffer grows without bound
    for k, mins in enumerate([40, 30, 20, 12, 6, 2]):
        t = F - sec(60 * mins + 7)
        rss = 96.0 + 15.3 * k + tr.rnd.uniform(0, 1.5)
        tr.add(bad, t, "[rank%d]:%s - WARNING - dataloader - host RSS %.1f GiB; streaming shuffle buffer holds %.2fM samples (no cap set)"
               % (r0, pylog_ts(t), rss, 1.1 + 0.55 * k))
    # the evicted pod's processes were SIGKILLed (hard eviction, grace period 0): its log just stops.
    nip = tr.ip[bad]
    died = {}
    for n in nodes:
        if n == bad:
            continue
        i = nodes.index(n)
        for l in range(tr.gpn):
            r = i * tr.gpn + l
            t = F + sec(0.9 + tr.rnd.uniform(0, 1.2))
            peer_remote_error(tr, r, t, 120377, nip, 39400 + r, how="closed" if (r % 3) else "reset")
            died[r] = t + sec(0.5)
        tr.agent_fail(n, max(died[i * tr.gpn + l] for l in range(tr.gpn)) + sec(2.2),
                      sorted([(l, -6, died[i * tr.gpn + l]) for l in range(tr.gpn)], key=lambda f: f[2]))
    for n in nodes:
        p = "logs/%s.log" % pods[n]
        b.write(p, tr.render(n))
        b.source(p, "applog", node=n, pod=pods[n], container="pytorch", namespace="llm-train")
    wlname = "pytorchjob-mm-pretrain-3c8d1"
    evict_msg = ("The node was low on resource: memory. Threshold quantity: 100Mi, available: 51200Ki. Container pytorch was using "
                 "188874532Ki, request is 0, has larger consumption of memory. ")
    ago = lambda t: "%dm" % max(1, int(((F + sec(240)) - t).total_seconds() // 60))  # noqa: E731
    ev = ["LAST SEEN   TYPE      REASON                      OBJECT                                MESSAGE",
          "%-11s Normal    QuotaReserved               workload/%s   Quota reserved in ClusterQueue dgx-cq, wait time since queued was 2s" % (ago(S), wlname),
          "%-11s Normal    Admitted                    workload/%s   Admitted by ClusterQueue dgx-cq, wait time since reservation was 0s" % (ago(S), wlname)]
    for n in nodes:
        ev.append("%-11s Normal    Scheduled                   pod/%-30s Successfully assigned llm-train/%s to %s" % (ago(S), pods[n], pods[n], n))
    ev += ["%-11s Warning   EvictionThresholdMet        node/%-29s Attempting to reclaim memory" % (ago(F), bad),
           "%-11s Normal    NodeHasInsufficientMemory   node/%-29s Node %s status is now: NodeHasInsufficientMemory" % (ago(F), bad, bad),
           "%-11s Warning   Evicted                     pod/%-30s %s" % (ago(F), pods[bad], evict_msg.strip()),
           "%-11s Normal    Killing                     pod/%-30s Stopping container pytorch" % (ago(F), pods[bad]),
           "%-11s Normal    NodeHasSufficientMemory     node/%-29s Node %s status is now: NodeHasSufficientMemory" % (ago(F + sec(70)), bad, bad),
           "%-11s Normal    Finished                    workload/%s   Workload 'llm-train/%s' is declared finished" % (ago(F + sec(9)), wlname, wlname)]
    b.write("k8s/events.txt", ev)
    b.source("k8s/events.txt", "k8s_event", note="kubectl get events -n llm-train (pods, workload) plus the node's events, captured %s" % iso(F + sec(240)))
    pl = []
    for n in nodes:
        if n == bad:
            pl.append(pod_status(pods[n], n, "Failed", "Error", 137, S, F, msg=evict_msg, preason="Evicted"))
        else:
            i = nodes.index(n)
            pl.append(pod_status(pods[n], n, "Failed", "Error", 1, S, max(died[i * tr.gpn + l] for l in range(tr.gpn)) + sec(2.4)))
    b.write("k8s/pods.jsonl", pl)
    b.source("k8s/pods.jsonl", "k8s_event", note="pod status JSON, one pod per line")
    wlobj = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": wlname, "namespace": "llm-train"},
             "status": {"admission": {"clusterQueue": "dgx-cq"}, "conditions": [
                 {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "Quota reserved in ClusterQueue dgx-cq", "lastTransitionTime": iso(S - sec(3))},
                 {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "The workload is admitted", "lastTransitionTime": iso(S - sec(3))},
                 {"type": "PodsReady", "status": "True", "reason": "PodsReady", "message": "All pods were ready or succeeded", "lastTransitionTime": iso(S + sec(31))},
                 {"type": "Finished", "status": "True", "reason": "Failed", "message": "PyTorchJob mm-pretrain is failed because 1 Worker replica(s) failed.", "lastTransitionTime": iso(F + sec(9))}]}}
    b.write("k8s/workload.json", [json.dumps(wlobj, sort_keys=True)])
    b.source("k8s/workload.json", "k8s_event", note="kubectl get workload -o json")
    for n in nodes:
        kl = KLog(n, "syslog", rnd=random.Random(n + str(S)))
        kl.noise(S - sec(1800), F + sec(300), 16)
        if n == bad:
            kp = "kubelet[3112]"
            lt = lambda t: "I%s    3112" % glog_ts(t)  # noqa: E731
            kl.k(F - sec(0.231), '%s eviction_manager.go:366] "Eviction manager: attempting to reclaim" resourceName="memory"' % lt(F - sec(0.231)), kp)
            kl.k(F - sec(0.230), '%s eviction_manager.go:377] "Eviction manager: must evict pod(s) to reclaim" resourceName="memory"' % lt(F - sec(0.230)), kp)
            kl.k(F - sec(0.229), '%s eviction_manager.go:395] "Eviction manager: pods ranked for eviction" pods=["llm-train/%s","monitoring/dcgm-exporter-b8q4m","kube-system/node-problem-detector-7xk2d"]'
                 % (lt(F - sec(0.229)), pods[bad]), kp)
            kl.k(F, '%s eviction_manager.go:616] "Eviction manager: pod is evicted successfully" pod="llm-train/%s"' % (lt(F), pods[bad]), kp)
            kl.k(F + sec(0.001), '%s eviction_manager.go:197] "Eviction manager: pods evicted, waiting for pod to be cleaned up" pods=["llm-train/%s"]' % (lt(F + sec(0.001)), pods[bad]), kp)
            kl.k(F + sec(31.2), '%s eviction_manager.go:454] "Eviction manager: pods successfully cleaned up" pods=["llm-train/%s"]' % (lt(F + sec(31.2)), pods[bad]), kp)
        b.write("nodes/journal-%s.log" % n, kl.lines())
        b.source("nodes/journal-%s.log" % n, "syslog", node=n, note="journalctl -k -u kubelet on the node")
    E = F + sec(9)
    b.workload(id=wlname, scheduler="kueue", cluster="dgx-onprem", attempt=0, name=jobname, user="team-mm", queue="dgx-lq",
               state="Failed", exit_code="137", reason="Evicted", start=S, end=E, nodes=nodes, ranks=tr.rank_node,
               labels={"kueue.x-k8s.io/queue-name": "dgx-lq"})
    b.expected("application.memory_limit", "definitive", bad, root_symptom="k8s.pod.evicted_over_request", affected=[], story="""
      Four and a half hours into the run the kubelet on dgx-b021 hit its hard eviction threshold for memory (memory.available
      < 100Mi) and evicted pod mm-pretrain-worker-2: pod status Failed / reason Evicted, 'The node was low on resource:
      memory. Threshold quantity: 100Mi, available: 51200Ki. Container pytorch was using 188874532Ki, request is 0, has
      larger consumption of memory.', with the matching Evicted event and the kubelet's eviction-manager lines in the
      node journal. The pod was the node's largest consumer above its request: rank 8's streaming shuffle buffer grew
      from 96 to 173 GiB of host memory over the last 40 minutes, and the container declared no memory request. Its
      processes were killed without a word; the twelve ranks on the other three pods failed a second later with
      'Connection closed by remote peer' / 'Connection reset by peer' naming dgx-b021 (consequences). The node is
      healthy (NodeHasSufficientMemory a minute later): cap the shuffle buffer and set a memory request/limit. The
      eviction is how the failure surfaced; the kubelet names the container over its request, so it is the workload's
      own memory use (application.memory_limit), not a scheduler decision.""")


@bundle("job-failed-no-evidence")
def no_evidence(b):
    nodes = ["gpu-n31", "gpu-n32", "gpu-n33", "gpu-n34"]
    S, F = ts("2026-09-09T00:05:12"), ts("2026-09-09T05:05:40")
    tr = Train(779015, nodes, 4, S, seed=52, timeout_ms=600000)
    for n in nodes:
        t = S + sec(1.0)
        tr.add(n, t, "%s [launch.sh] task %d on %s: stage 1/3 configs/stage1-base.yaml" % (t.strftime("%Y-%m-%dT%H:%M:%S+00:00"), nodes.index(n), n))
    start_job(tr, S)
    train(tr, S, F, period=2.0, every=60)
    r0 = nodes[0]
    tr.add(r0, F + sec(1), "%s - INFO - trainer - stage 1 finished: 9000 iterations, lm loss 2.2301" % pylog_ts(F + sec(1)))
    tr.add(r0, F + sec(48), "%s - INFO - checkpoint - saved /ckpt/779015/stage1/iter_0009000" % pylog_ts(F + sec(48)))
    for n in nodes:
        i = nodes.index(n)
        for l in range(tr.gpn):
            r = i * tr.gpn + l
            tr.add(n, F + sec(49 + 0.01 * l), "%s NCCL INFO comm 0x%x rank %d nranks %d cudaDev %d busId %s000 - Destroy COMPLETE"
                   % (tr.nccl_pfx(r), 0x55d0c0000000 + r * 0x1f0000, r, tr.world, l, tr.pci[l]))
        tr.add(n, F + sec(50), tr.elastic(n, F + sec(50), "I", "torch/distributed/elastic/agent/server/api.py:879", "[default] worker group successfully finished. Waiting 300 seconds for other agents to finish."))
        tr.add(n, F + sec(50.1), tr.elastic(n, F + sec(50.1), "I", "torch/distributed/elastic/agent/server/api.py:932", "Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish"))
        tr.add(n, F + sec(50.4), tr.elastic(n, F + sec(50.4), "I", "torch/distributed/elastic/agent/server/api.py:946", "Done waiting for other agents. Elapsed: 0.2817 seconds"))
    T = F + sec(51)
    stamp = lambda t: t.strftime("%Y-%m-%dT%H:%M:%S+00:00")  # noqa: E731
    for n in nodes:
        i = nodes.index(n)
        tr.add(n, T, "%s [launch.sh] task %d on %s: stage 2/3 configs/stage2-longctx.yaml" % (stamp(T), i, n))
        if i:
            tr.add(n, T + sec(0.2), "%s [launch.sh] task %d: waiting for task 0 to validate the stage config" % (stamp(T + sec(0.2)), i))
    tc = T + sec(14)
    tr.add(r0, T + sec(0.3), "%s [launch.sh] task 0: checking configs/stage2-longctx.yaml against /ckpt/779015/stage1/iter_0009000" % stamp(T + sec(0.3)))
    tr.add(r0, tc, "%s [launch.sh] task 0: config check failed" % stamp(tc))
    tr.add(r0, tc + sec(0.01), "%s [launch.sh] task 0: exit 1" % stamp(tc + sec(0.01)))
    for n in nodes:
        b.write("logs/%s-%s.out" % (tr.jobid, n), tr.render(n))
        b.source("logs/%s-%s.out" % (tr.jobid, n), "applog", node=n)
    tk = tc + sec(0.4)
    slurm_out(b, tr.jobid, [
        "+ srun --kill-on-bad-exit=1 --nodes=4 --ntasks-per-node=1 --output=logs/%j-%N.out ./launch.sh configs/curriculum.txt",
        "srun: error: gpu-n31: task 0: Exited with exit code 1",
        "srun: Terminating StepId=779015.0",
        "slurmstepd: error: *** STEP 779015.0 ON gpu-n31 CANCELLED AT %s DUE TO TASK FAILURE ***" % slurm_ts(tk),
        "srun: error: gpu-n32: task 1: Terminated",
        "srun: error: gpu-n33: task 2: Terminated",
        "srun: error: gpu-n34: task 3: Terminated",
        "srun: Force Terminated StepId=779015.0"], "gpu-n31")
    end = tk + sec(1)
    boots = {n: ts("2026-09-02T17:40:00") + sec(61 * i) for i, n in enumerate(nodes)}
    kernels(b, tr, S, end, style="dmesg", boots=boots)
    E = end + sec(1)
    std_sacct(b, tr, "curriculum-7b", "gpu", S, E, step_end=end, stepname="launch.sh")
    wl(b, tr, "curriculum-7b", "hbecker", S, E, cluster="c4")
    b.expected("application.exception", "probable", "gpu-n31", affected=[], story="""
      The job is a three-stage curriculum driven by launch.sh inside one srun step. Stage 1 trained for five hours on
      all 16 ranks and finished cleanly (checkpoint saved, NCCL communicators destroyed, every torchrun agent
      SUCCEEDED). The launcher then started stage 2: task 0 on gpu-n31 checked configs/stage2-longctx.yaml against the
      stage 1 checkpoint, printed 'config check failed' and exited 1; srun (--kill-on-bad-exit) terminated the three
      tasks that were waiting for it and sacct records FAILED 1:0. There is no Xid, no OOM kill, no traceback, no NCCL
      or network error and no scheduler reason, and the kernel logs of all four nodes are clean. The only clue is the
      launcher's own one-line message, which says neither what was wrong nor where: the evidence establishes no cause.
      Hand it to the job owner (the check's own output); no node to drain. What the evidence does establish is which
      task failed: srun's 'task 0: Exited with exit code 1' and slurmstepd's 'CANCELLED ... DUE TO TASK FAILURE' say the
      workload's own task 0 on gpu-n31 ended in failure and took the step down, so the verdict is the workload's
      failure at probable quality, with the why left to its owner.""")


@bundle("sacct-completed-task-failed")
def completed_but_failed(b):
    nodes = ["gpu-s21", "gpu-s22", "gpu-s23", "gpu-s24"]
    S, F = ts("2026-10-27T13:40:00"), ts("2026-10-27T16:58:21.409")
    tr = Train(781334, nodes, 4, S, seed=53, timeout_ms=600000)
    start_job(tr, S)
    train(tr, S, F, period=2.4, every=60, fmt="hf")
    bad_node = "gpu-s23"
    r = nodes.index(bad_node) * tr.gpn + 2  # rank 10
    tr.traceback(r, F, [("/workspace/train.py", 212, "<module>", "main(cfg)"),
                        ("/workspace/train.py", 171, "main", "for step, batch in enumerate(loader, start=resume_step):"),
                        ("%s/torch/utils/data/dataloader.py" % PY, 701, "__next__", "data = self._next_data()"),
                        ("%s/torch/utils/data/dataloader.py" % PY, 1465, "_next_data", "return self._process_data(data)"),
                        ("%s/torch/utils/data/dataloader.py" % PY, 1491, "_process_data", "data.reraise()"),
                        ("%s/torch/_utils.py" % PY, 715, "reraise", "raise exception")],
                 "KeyError: Caught KeyError in DataLoader worker process 3.\n"
                 "Original Traceback (most recent call last):\n"
                 '  File "%s/torch/utils/data/_utils/worker.py", line 351, in _worker_loop\n'
                 "    data = fetcher.fetch(index)  # type: ignore[possibly-undefined]\n"
                 '  File "%s/torch/utils/data/_utils/fetch.py", line 52, in fetch\n'
                 "    data = [self.dataset[idx] for idx in possibly_batched_index]\n"
                 '  File "/workspace/data/mixture.py", line 77, in __getitem__\n'
                 '    src = self.sources[rec["source"]]\n'
                 "KeyError: 'wiki_de'" % (PY, PY))
    others = [l for l in range(tr.gpn) if l != 2]
    tr.agent_fail(bad_node, F + sec(3.1), [(2, 1, F + sec(0.6))] + [(l, -15, F + sec(2.8)) for l in others],
                  sigterm_locals=others, sigterm_at=F + sec(1.0))
    seq = 51208
    done = {}
    for n in nodes:
        if n == bad_node:
            continue
        i = nodes.index(n)
        fl = []
        for l in range(tr.gpn):
            rr = i * tr.gpn + l
            t = F + sec(1.2 + tr.rnd.uniform(0, 0.9))
            peer_remote_error(tr, rr, t, seq, "%s.hpc.internal" % bad_node, 44200 + rr, how="reset" if l % 2 else "closed")
            fl.append((l, -6, t + sec(0.5)))
        fl.sort(key=lambda f: f[2])
        done[n] = fl[-1][2] + sec(2.3)
        tr.agent_fail(n, done[n], fl)
    end = max(done.values()) + sec(0.5)
    for n in nodes:
        b.write("logs/%s-%s.out" % (tr.jobid, n), tr.render(n))
        b.source("logs/%s-%s.out" % (tr.jobid, n), "applog", node=n)
    task = {n: i for i, n in enumerate(nodes)}
    out = ["+ srun --nodes=4 --ntasks-per-node=1 --output=logs/%j-%N.out torchrun --nnodes=4 --nproc-per-node=4 --rdzv-backend=c10d "
           "--rdzv-endpoint=gpu-s21:29500 train.py --config configs/mix-v7.yaml",
           "srun: error: %s: task %d: Exited with exit code 1" % (bad_node, task[bad_node]),
           "srun: launch/slurm: _task_finish: Received task exit notification for 1 task of StepId=781334.0 (status=0x0100)."]
    for n in sorted(done, key=done.get):
        out.append("srun: error: %s: task %d: Exited with exit code 1" % (n, task[n]))
    out += ["srun: launch/slurm: _task_finish: Received task exit notification for 3 tasks of StepId=781334.0 (status=0x0100).",
            "+ echo done", "done"]
    slurm_out(b, tr.jobid, out, "gpu-s21")
    kernels(b, tr, S, end, style="iso")
    E = end + sec(1)
    b.write("sacct.txt", sacct(781334, "mix-v7-13b", "gpu", nodes, S, E, [
        ("", None, "COMPLETED", "0:0", None, None), (".batch", "batch", "COMPLETED", "0:0", ["gpu-s21"], None),
        (".extern", "extern", "COMPLETED", "0:0", None, None), (".0", "torchrun", "FAILED", "1:0", None, end)]))
    b.source("sacct.txt", "scheduler")
    b.write("scontrol-show-job.txt", scontrol(781334, "mix-v7-13b", "ekaya", 1000, "COMPLETED", "None", "0:0", S, E, nodes,
                                              gpn=4, derived="1:0"))
    b.source("scontrol-show-job.txt", "scheduler", note="scontrol show job right after the job ended")
    wl(b, tr, "mix-v7-13b", "ekaya", S, E, state="COMPLETED", ec="0:0", reason="None", cluster="c4")
    b.expected("application.exception", "probable", bad_node, root_symptom="python.exception.KeyError", affected=[], story="""
      Slurm says the job COMPLETED with exit code 0:0, because the batch script ran 'srun ... torchrun ...; echo done'
      and its last command succeeded; the step itself is FAILED 1:0 in sacct and scontrol shows DerivedExitCode=1:0.
      The logs tell what happened: after three hours and twenty minutes rank 10 on gpu-s23 raised 'KeyError: Caught
      KeyError in DataLoader worker process 3' (original error KeyError: 'wiki_de' in data/mixture.py: a record of
      the v7 mix names a source the dataset does not define). Torchrun's ChildFailedError on gpu-s23 names rank 10
      (exitcode 1) and srun reported 'gpu-s23: task 2: Exited with exit code 1' first; the ranks on the other three
      nodes then failed with 'Connection reset by peer' / 'Connection closed by remote peer' naming gpu-s23. A bug in
      the workload's data mix, not the infrastructure; the scheduler's COMPLETED contradicts the logs, hence
      probable.""")
