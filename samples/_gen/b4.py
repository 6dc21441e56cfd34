"""Application, scheduler, storage, Kubernetes and special-input bundles."""
import json
from common import *  # noqa
from registry import bundle
from b1 import CUDA_ASYNC, TRAIN_FRAMES, slurm_out
from b3 import basic, kernels, wl


def sigterm_all(tr, t, sig=15, msg="Received Signals.SIGTERM death signal, shutting down workers"):
    for n in tr.nodes:
        tr.add(n, t, tr.elastic(n, t, "W", "torch/distributed/elastic/agent/server/api.py:704", msg))
        i = tr.nodes.index(n)
        for l in range(tr.gpn):
            tr.add(n, t + sec(0.01), tr.elastic(n, t + sec(0.01), "W", "torch/distributed/elastic/multiprocessing/api.py:897",
                                                "Sending process %d closing signal SIGTERM" % tr.pid[i * tr.gpn + l]))


@bundle("cuda-oom-real")
def cudaoom(b):
    nodes = ["gpu-t01", "gpu-t02", "gpu-t03", "gpu-t04"]
    S, F = ts("2026-02-16T09:00:00"), ts("2026-02-16T09:06:41.300")
    tr = basic(b, 752210, nodes, 8, S, F, 17, "ft-seq16k", "yzhou", period=6.0)
    r = 3
    tr.traceback(r, F, TRAIN_FRAMES[:3] + [("/workspace/model/attention.py", 212, "forward", "scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale")],
                 "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 3 has a total capacity of 79.10 GiB of which 5.21 GiB is free. "
                 "Process %d has 73.88 GiB memory in use. Of the allocated memory 66.12 GiB is allocated by PyTorch, and 6.91 GiB is reserved by PyTorch but unallocated. "
                 "If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  "
                 "See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)" % tr.pid[r])
    others = [l for l in range(8) if l != 3]
    tr.agent_fail("gpu-t01", F + sec(3.2), [(3, 1, F + sec(0.8))] + [(l, -15, F + sec(2.9)) for l in others], sigterm_locals=others, sigterm_at=F + sec(1.1))
    for k in range(1, len(nodes)):
        for l in range(8):
            peer_remote_error(tr, 8 * k + l, F + sec(1.5 + 0.05 * l + 0.02 * k), 412, "gpu-t01.ai.lan", 47000 + 8 * k + l, how="closed")
        tr.agent_fail(nodes[k], F + sec(4 + 0.02 * k), [(l, -6, F + sec(2.0 + 0.05 * l + 0.02 * k)) for l in range(8)])
    tr.add("gpu-t01", S + sec(20), "%s - INFO - trainer - config: seq_len=16384 micro_batch=2 activation_checkpointing=False" % pylog_ts(S + sec(20)))
    write_apps(b, tr, "logs/{node}.log")
    kernels(b, tr, S, F + sec(10))
    E = F + sec(6)
    std_sacct(b, tr, "ft-seq16k", "gpu", S, E)
    wl(b, tr, "ft-seq16k", "yzhou", S, E)
    b.expected("application.cuda_oom", "definitive", "gpu-t01", affected=[], story="""
      The job was launched with seq_len=16384, micro_batch=2 and activation checkpointing off. Seven minutes in, rank 3
      on gpu-t01 raised torch.OutOfMemoryError: tried to allocate 8.00 GiB on GPU 3 (79.10 GiB total, 5.21 GiB free,
      66.12 GiB allocated by PyTorch) in the attention matmul. A real out-of-memory naming the device and plausible
      sizes; torchrun stopped the other workers and the ranks on gpu-t02, gpu-t03 and gpu-t04 saw the connections close. Reduce the
      micro-batch or enable activation checkpointing; hardware is fine.""")


@bundle("cuda-oom-after-watchdog-timeout")
def oomafter(b):
    nodes = ["gpu-k01", "gpu-k02", "gpu-k03", "gpu-k04"]
    S, F = ts("2026-06-19T03:10:00"), ts("2026-06-19T05:44:18.020")
    tr = basic(b, 753877, nodes, 4, S, F, 18, "ppo-rlhf", "fmoreau", timeout_ms=600000, period=5.0, fmt="hf")
    seq = 18204
    t_enq = F - sec(0.6)
    for n in ("gpu-k01", "gpu-k02", "gpu-k04"):
        i = nodes.index(n)
        fl = []
        for l in range(4):
            r = i * 4 + l
            t = t_enq + sec(600.05 + 0.01 * l)
            tr.add(n, t - sec(0.001), tr.c10(r, t - sec(0.001), "E", "ProcessGroupNCCL.cpp:607",
                   "[Rank %d] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=%d, OpType=ALLGATHER, NumelIn=41943040, NumelOut=503316480, Timeout(ms)=600000) ran for 600044 milliseconds before timing out." % (r, seq)))
            tr.traceback(r, t + sec(1.5), [("/app/rlhf/ppo.py", 388, "train_loop", "except dist.DistBackendError:"),
                                           ("/app/rlhf/ppo.py", 391, "train_loop", "emergency_save(model, optimizer)  # gather full state on rank GPU"),
                                           ("/app/rlhf/ckpt.py", 57, "emergency_save", "full = {k: v.full_tensor() for k, v in model.state_dict().items()}")],
                         "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB. GPU %d has a total capacity of 79.10 GiB of which 1.44 MiB is free. "
                         "Including non-PyTorch memory, this process has 79.09 GiB memory in use. Of the allocated memory 77.80 GiB is allocated by PyTorch, and 402.11 MiB is reserved by PyTorch but unallocated." % l)
            fl.append((l, 1, t + sec(2)))
        tr.agent_fail(n, t_enq + sec(606), fl)
    pci = "41"

    def k03(kl):
        xid_header(kl, F, pci, "GPU-77a0c3e9-2b1d-4e8f-9c60-d5a2e1f30b97", "1653121098811")
        kl.k(F, "NVRM: Xid (PCI:0000:%s:00): 109, pid=%d, name=python3, Ch 00000010, errorString CTX SWITCH TIMEOUT, Info 0x5c00c" % (pci, tr.pid[9]))
        kl.k(F + sec(0.2), "NVRM: Xid (PCI:0000:%s:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)" % pci)
    tr.agent_fail("gpu-k03", t_enq + sec(640), [(1, -9, t_enq + sec(639)), (0, -15, t_enq + sec(639.5)), (2, -15, t_enq + sec(639.5)), (3, -15, t_enq + sec(639.5))])
    end = t_enq + sec(641)
    write_apps(b, tr, "logs/{node}.log")
    kernels(b, tr, S, end, style="iso", extra={"gpu-k03": k03})
    E = end + sec(1)
    std_sacct(b, tr, "ppo-rlhf", "gpu", S, E, step_end=end)
    wl(b, tr, "ppo-rlhf", "fmoreau", S, E)
    b.expected("gpu.hardware", "definitive", "gpu-k03", affected=["gpu-k03"], explained=["nccl.watchdog_timeout"], story="""
      The many 'CUDA out of memory. Tried to allocate 2.00 MiB' tracebacks on gpu-k01, gpu-k02 and gpu-k04 are a symptom: they
      come from the job's emergency_save handler, which ran after the ALLGATHER SeqNum=18204 timed out and tried to
      gather the full model on an already full GPU. The timeout itself started on gpu-k03, whose GPU 1 (PCI 0000:41:00,
      rank 9) hit Xid 109 (context switch timeout) ten minutes earlier, followed by Xid 154 'GPU Reset Required'; its
      ranks never reached the collective and were killed at teardown. Reset or drain gpu-k03.""")


@bundle("python-exception-rank0")
def pyexc(b):
    nodes = ["gpu-u01", "gpu-u02", "gpu-u03", "gpu-u04"]
    S, F = ts("2026-04-09T12:00:05"), ts("2026-04-09T13:21:07.772")
    tr = basic(b, 755102, nodes, 8, S, F, 19, "instruct-mix", "nsato", period=2.5, fmt="hf")
    tr.traceback(0, F, [("/workspace/train.py", 140, "<module>", "main()"),
                        ("/workspace/train.py", 118, "main", "for step, batch in enumerate(loader):"),
                        ("%s/torch/utils/data/dataloader.py" % PY, 701, "__next__", "data = self._next_data()"),
                        ("%s/torch/utils/data/dataloader.py" % PY, 757, "_next_data", "data = self._dataset_fetcher.fetch(index)  # may raise StopIteration"),
                        ("/workspace/data/collate.py", 44, "collate", "ids = [ex[\"input_ids\"] for ex in batch]")],
                 "KeyError: 'input_ids'")
    others = list(range(1, 8))
    tr.agent_fail("gpu-u01", F + sec(3.0), [(0, 1, F + sec(0.5))] + [(l, -15, F + sec(2.6)) for l in others], sigterm_locals=others, sigterm_at=F + sec(0.9))
    for k in range(1, len(nodes)):
        for l in range(8):
            peer_remote_error(tr, 8 * k + l, F + sec(1.3 + 0.03 * l + 0.02 * k), 9731, "gpu-u01.ai.lan", 52010 + 8 * k + l, how="reset")
        tr.agent_fail(nodes[k], F + sec(4.1 + 0.02 * k), [(l, -6, F + sec(1.8 + 0.03 * l + 0.02 * k)) for l in range(8)])
    write_apps(b, tr, "logs/{node}.log")
    kernels(b, tr, S, F + sec(10))
    E = F + sec(6)
    std_sacct(b, tr, "instruct-mix", "gpu", S, E)
    wl(b, tr, "instruct-mix", "nsato", S, E)
    b.expected("application.exception", "definitive", "gpu-u01", affected=[], story="""
      After 80 minutes of training, rank 0 on gpu-u01 raised KeyError: 'input_ids' in the data collator: one shard of
      the instruction mix has records without the tokenized field. Torchrun's ChildFailedError on gpu-u01 names rank 0
      (exitcode 1) and it sent SIGTERM to the seven sibling workers; the 24 ranks on gpu-u02, gpu-u03 and gpu-u04 then
      failed with 'Connection reset by peer' remote errors. A bug in the workload's data, not in the infrastructure.""")


def straggler_common(b, name, jobid, nodes, S, F, seed, missing, seq, numel=None, op="ALLREDUCE", saving=False, user="vkumar"):
    tr = basic(b, jobid, nodes, 4, S, F, seed, name, user, period=3.0)
    if saving:
        tr.add(nodes[0], F - sec(2), "%s - INFO - checkpoint - saving checkpoint at iteration 20000 to /shared/ckpt/%s/iter_0020000 (rank 0 gathers full state dict, 141.2 GB)" % (pylog_ts(F - sec(2)), name))
    t_enq = F
    for r in range(tr.world):
        if r == missing:
            continue
        t = t_enq + sec(tr.timeout_ms / 1000 + tr.rnd.uniform(0.01, 0.2))
        tr.watchdog(r, t, seq, op=op, numel=numel, last_enq=seq, last_comp=seq - 1)
    end = t_enq + sec(tr.timeout_ms / 1000 + 4)
    for n in nodes:
        i = nodes.index(n)
        fl = [(l, -6, t_enq + sec(tr.timeout_ms / 1000 + 1)) for l in range(4) if i * 4 + l != missing]
        if len(fl) < 4:
            fl.append((missing % 4, -15, end - sec(0.5)))
        tr.agent_fail(n, end, fl)
    return tr, end


@bundle("straggler-missing-seqnum")
def straggler(b):
    nodes = ["gpu-l01", "gpu-l02", "gpu-l03", "gpu-l04"]
    S, F = ts("2026-07-02T06:00:00"), ts("2026-07-02T08:31:55.000")
    tr, end = straggler_common(b, "pt-3b-code", 756630, nodes, S, F, 20, 11, 70215)
    write_apps(b, tr, "logs/{node}.log")
    kernels(b, tr, S, end, style="syslog")
    E = end + sec(1)
    std_sacct(b, tr, "pt-3b-code", "gpu", S, E)
    wl(b, tr, "pt-3b-code", "vkumar", S, E)
    b.expected("application.stuck_rank", "probable", "gpu-l03", affected=[], explained=["nccl.watchdog_timeout"], story="""
      Fifteen of sixteen ranks report the same watchdog timeout on ALLREDUCE SeqNum=70215 (last completed 70214);
      rank 11 on gpu-l03 never reports that sequence number, so it is the rank that did not reach the collective.
      No kernel log shows a GPU, network or host error on any node, and rank 11 left no traceback, so why it
      stalled (data loader, a hang in its own code) is inferred from the missing sequence number only. Look at rank
      11 (py-spy / flight recorder) on the next occurrence.""")


@bundle("barrier-timeout-checkpoint-save")
def barrier(b):
    nodes = ["gpu-m11", "gpu-m12", "gpu-m13", "gpu-m14"]
    S, F = ts("2026-09-14T00:00:10"), ts("2026-09-14T16:40:02.000")
    tr, end = straggler_common(b, "lm-30b-ckpt", 757001, nodes, S, F, 21, 0, 40019, numel=1, saving=True, user="gbianchi")
    write_apps(b, tr, "logs/{node}.log")
    kernels(b, tr, S, end, style="syslog")
    E = end + sec(1)
    std_sacct(b, tr, "lm-30b-ckpt", "gpu", S, E)
    wl(b, tr, "lm-30b-ckpt", "gbianchi", S, E)
    b.expected("application.stuck_rank", "probable", "gpu-m11", affected=[], explained=["nccl.watchdog_timeout"], story="""
      Rank 0 logged 'saving checkpoint at iteration 20000 ... 141.2 GB' at 16:40:00 and never logged completion. The
      other fifteen ranks entered the next collective, a 1-element ALLREDUCE (NumelIn=1, a barrier) with SeqNum=40019,
      and all timed out after 600000 ms; rank 0 never reports that sequence number. A barrier timing out while one
      rank is busy saving a large checkpoint to shared storage is the workload's own straggler, not a fabric
      problem: raise the timeout around checkpointing or save asynchronously/sharded.""")


@bundle("nccl-timeouts-only-no-evidence")
def hang(b):
    nodes = ["gpu-v01", "gpu-v02", "gpu-v03", "gpu-v04"]
    S, F = ts("2026-10-21T14:00:00"), ts("2026-10-21T19:13:37.000")
    tr = basic(b, 758843, nodes, 4, S, F, 22, "ssl-vit-g", "kolsen", period=2.0, timeout_ms=1800000)
    end = cascade(tr, 57501, F)
    write_apps(b, tr, "logs/{node}.log")
    E = end + sec(1)
    std_sacct(b, tr, "ssl-vit-g", "gpu", S, E, step_end=end)
    wl(b, tr, "ssl-vit-g", "kolsen", S, E)
    b.expected("unknown.collective_hang", "insufficient", None, story="""
      All sixteen ranks report the same watchdog timeout (ALLREDUCE SeqNum=57501, Timeout 1800000 ms, last completed
      57500), so every rank enqueued the collective and none is a straggler. There are no kernel/driver logs, no
      metrics and nothing in the application output besides the timeouts. The hang happened inside NCCL (network or
      GPU) but the evidence does not say where: the kernel logs (dmesg/journal) and IB port counters of gpu-v01 to
      gpu-v04 for 18:43-19:14 UTC would settle it.""")


def sched_end(b, name, jobid, nodes, S, F, seed, user, reason_line, state, ec, reason, outcome, story, sacct_rows=None, extra=None):
    tr = basic(b, jobid, nodes, 4, S, F, seed, name, user, period=2.2)
    sigterm_all(tr, F + sec(0.3))
    for n in nodes:
        i = nodes.index(n)
        tr.add(n, F + sec(5.2), tr.elastic(n, F + sec(5.2), "I", "torch/distributed/elastic/multiprocessing/api.py:932", "Waiting for worker processes to terminate"))
    write_apps(b, tr, "logs/{node}.log")
    slurm_out(b, jobid, reason_line(tr), nodes[0])
    kernels(b, tr, S, F + sec(30))
    E = F + sec(8)
    b.write("sacct.txt", sacct(jobid, name, "gpu", nodes, S, E, sacct_rows))
    b.source("sacct.txt", "scheduler")
    b.write("scontrol-show-job.txt", scontrol(jobid, name, user, 1000, state, reason, ec, S, E, nodes, gpn=4, timelimit="1-00:00:00" if state == "TIMEOUT" else "2-00:00:00"))
    b.source("scontrol-show-job.txt", "scheduler")
    wl(b, tr, name, user, S, E, state=state, ec=ec, reason=reason)
    b.expected(outcome, "definitive", None, affected=[], story=story)


@bundle("slurm-time-limit")
def timelimit(b):
    S = ts("2026-05-11T08:00:00")
    F = S + sec(86400)
    sched_end(b, "vq-tokenizer", 760012, ["gpu-w11", "gpu-w12", "gpu-w13", "gpu-w14"], S, F, 23, "amueller",
              lambda tr: ["slurmstepd: error: *** JOB 760012 ON gpu-w11 CANCELLED AT %s DUE TO TIME LIMIT ***" % slurm_ts(F),
                          "slurmstepd: error: *** STEP 760012.0 ON gpu-w11 CANCELLED AT %s DUE TO TIME LIMIT ***" % slurm_ts(F),
                          "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
                          *["srun: error: %s: task %d: Terminated" % (n, i) for i, n in enumerate(tr.nodes)],
                          "srun: Force Terminated StepId=760012.0"],
              "TIMEOUT", "0:0", "TimeLimit", "scheduler.time_limit",
              """The job ran for exactly its 1-day time limit. Slurm printed 'CANCELLED AT ... DUE TO TIME LIMIT' for the
              job and step, torchrun received SIGTERM and stopped all workers, and sacct/scontrol say TIMEOUT /
              Reason=TimeLimit. Training was healthy until then. Resubmit from the last checkpoint or request more time.""",
              sacct_rows=[("", None, "TIMEOUT", "0:0", None, None), (".batch", "batch", "CANCELLED", "0:15", ["gpu-w11"], None),
                          (".extern", "extern", "COMPLETED", "0:0", None, None), (".0", "torchrun", "CANCELLED", "0:15", None, None)])


@bundle("slurm-preempted")
def preempted(b):
    S, F = ts("2026-03-03T19:20:00"), ts("2026-03-03T23:48:10")
    sched_end(b, "sweep-lr-4", 761450, ["gpu-x01", "gpu-x02", "gpu-x03", "gpu-x04"], S, F, 24, "jpark",
              lambda tr: ["slurmstepd: error: *** JOB 761450 ON gpu-x01 CANCELLED AT %s DUE TO PREEMPTION ***" % slurm_ts(F),
                          "slurmstepd: error: *** STEP 761450.0 ON gpu-x01 CANCELLED AT %s DUE TO PREEMPTION ***" % slurm_ts(F),
                          "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
                          *["srun: error: %s: task %d: Terminated" % (n, i) for i, n in enumerate(tr.nodes)]],
              "PREEMPTED", "0:0", "Preempted", "scheduler.preempted",
              """The job ran in the low-priority 'scavenger' QOS and was preempted after 4.5 hours: slurmstepd printed
              'CANCELLED AT ... DUE TO PREEMPTION', torchrun forwarded SIGTERM to all workers, and sacct records
              PREEMPTED. Nothing failed; the scheduler took the nodes back for a higher-priority job.""",
              sacct_rows=[("", None, "PREEMPTED", "0:0", None, None), (".batch", "batch", "CANCELLED", "0:15", ["gpu-x01"], None),
                          (".extern", "extern", "COMPLETED", "0:0", None, None), (".0", "torchrun", "CANCELLED", "0:15", None, None)])


@bundle("slurm-user-scancel")
def cancelled(b):
    S, F = ts("2026-01-27T10:05:00"), ts("2026-01-27T11:12:44")
    sched_end(b, "debug-run", 762118, ["gpu-y11", "gpu-y12", "gpu-y13", "gpu-y14"], S, F, 25, "asharma",
              lambda tr: ["slurmstepd: error: *** JOB 762118 ON gpu-y11 CANCELLED AT %s ***" % slurm_ts(F),
                          "slurmstepd: error: *** STEP 762118.0 ON gpu-y11 CANCELLED AT %s ***" % slurm_ts(F),
                          "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
                          *["srun: error: %s: task %d: Terminated" % (n, i) for i, n in enumerate(tr.nodes)]],
              "CANCELLED", "0:0", "None", "scheduler.cancelled",
              """The owner (uid 1000) cancelled the job with scancel after about an hour: sacct says 'CANCELLED by 1000',
              the step was 'CANCELLED AT ...' without a 'DUE TO' reason, and torchrun shut the workers down on SIGTERM.
              Training was healthy up to that point; no infrastructure problem.""",
              sacct_rows=[("", None, "CANCELLED by 1000", "0:0", None, None), (".batch", "batch", "CANCELLED", "0:15", ["gpu-y11"], None),
                          (".extern", "extern", "COMPLETED", "0:0", None, None), (".0", "torchrun", "CANCELLED", "0:15", None, None)])


@bundle("lustre-eviction-io-error")
def lustre(b):
    nodes = ["gpu-o01", "gpu-o02", "gpu-o03", "gpu-o04"]
    S, F = ts("2026-08-04T01:00:00"), ts("2026-08-04T04:17:09.000")
    tr = basic(b, 763300, nodes, 8, S, F, 26, "asr-pretrain", "rdubois", period=1.6)
    r = 12
    tr.traceback(r, F + sec(101), [("/work/asr/train.py", 201, "<module>", "main()"),
                                   ("/work/asr/train.py", 170, "main", "batch = next(it)"),
                                   ("/work/asr/data.py", 88, "__iter__", "with open(shard_path, \"rb\") as f:")],
                 "OSError: [Errno 5] Input/output error: '/lustre/scratch/asr/shards/train-00713.tar'")
    others = [l for l in range(8) if l != 4]
    tr.agent_fail("gpu-o02", F + sec(104), [(4, 1, F + sec(101.5))] + [(l, -15, F + sec(103.5)) for l in others], sigterm_locals=others, sigterm_at=F + sec(102))
    for k in (0, 2, 3):
        for l in range(8):
            peer_remote_error(tr, 8 * k + l, F + sec(102.6 + 0.02 * l + 0.01 * k), 33012, "gpu-o02.hpc.local", 45100 + 8 * k + l, how="closed")
        tr.agent_fail(nodes[k], F + sec(105 + 0.01 * k), [(l, -6, F + sec(103 + 0.02 * l + 0.01 * k)) for l in range(8)])
    write_apps(b, tr, "logs/{node}.log")

    def o02(kl):
        kl.k(F, "LNet: 2431:0:(o2iblnd_cb.c:3174:kiblnd_check_conns) Timed out tx for 172.31.126.87@o2ib: 12 seconds")
        kl.k(F + sec(0.1), "Lustre: 2449:0:(client.c:2141:ptlrpc_expire_one_request) @@@ Request sent has timed out for slow reply: [sent 1785809817/real 1785809817]  req@ffff9b2e1c5d0700 x1790198182041824/t0(0) o4->scratch-OST0012-osc-ffff9b1f4a3c8000@172.31.126.87@o2ib:6/4 lens 488/448 e 0 to 1 dl 1785809829 ref 2 fl Rpc:X/0/ffffffff rc 0/-1")
        kl.k(F + sec(0.1), "Lustre: scratch-OST0012-osc-ffff9b1f4a3c8000: Connection to scratch-OST0012 (at 172.31.126.87@o2ib) was lost; in progress operations using this service will wait for recovery to complete")
        kl.k(F + sec(45), "Lustre: 2449:0:(client.c:2141:ptlrpc_expire_one_request) Skipped 24 previous similar messages")
        kl.k(F + sec(100), "LustreError: 167-0: scratch-OST0012-osc-ffff9b1f4a3c8000: This client was evicted by scratch-OST0012; in progress operations using this service will fail.")
        kl.k(F + sec(100.2), "LustreError: 2449:0:(ldlm_resource.c:1125:ldlm_resource_complain) scratch-OST0012-osc-ffff9b1f4a3c8000: namespace resource [0x2c0000401:0x1a2b3:0x0].0x0 (ffff9b2f0a1e3c00) refcount nonzero (1) after lock cleanup; forcing cleanup.")
        kl.k(F + sec(100.5), "Lustre: scratch-OST0012-osc-ffff9b1f4a3c8000: Connection restored to 172.31.126.87@o2ib (at 172.31.126.87@o2ib)")
    kernels(b, tr, S, F + sec(120), style="syslog", extra={"gpu-o02": o02})
    E = F + sec(107)
    std_sacct(b, tr, "asr-pretrain", "gpu", S, E)
    wl(b, tr, "asr-pretrain", "rdubois", S, E)
    b.expected("storage.filesystem", "definitive", "gpu-o02", affected=[], story="""
      At 04:17:09 gpu-o02 lost its connection to Lustre OST scratch-OST0012 (LNet tx timeout to 172.31.126.87@o2ib,
      ptlrpc requests timing out) and 100 seconds later the OST evicted the client ('This client was evicted by
      scratch-OST0012; in progress operations using this service will fail'). Rank 12, reading a training shard from
      that OST, immediately failed with OSError [Errno 5] Input/output error; torchrun stopped gpu-o02 and the ranks on gpu-o01,
      gpu-o03 and gpu-o04 saw the peer connections close. The application exception is a consequence of the storage eviction;
      check the OSS / LNet router serving 172.31.126.87.""")


@bundle("disk-full-checkpoint-save")
def diskfull(b):
    nodes = ["gpu-z01", "gpu-z02", "gpu-z03", "gpu-z04"]
    S, F = ts("2026-12-12T04:00:00"), ts("2026-12-12T10:00:31.000")
    tr = basic(b, 764215, nodes, 8, S, F, 27, "mm-13b", "oeze", period=2.0)
    tr.add("gpu-z01", F - sec(27), "%s - INFO - checkpoint - saving iteration 10800 to /raid/ckpt/mm-13b/iter_0010800 (local NVMe staging, upload to object store afterwards)" % pylog_ts(F - sec(27)))
    tr.traceback(0, F, [("/workspace/train.py", 301, "main", "save_checkpoint(model, optim, step)"),
                        ("/workspace/ckpt.py", 74, "save_checkpoint", "torch.save(state, path)"),
                        ("%s/torch/serialization.py" % PY, 850, "save", "_save(obj, opened_zipfile, pickle_module, pickle_protocol, _disable_byteorder_record)"),
                        ("%s/torch/serialization.py" % PY, 1114, "_save", "zip_file.write_record(name, storage, num_bytes)")],
                 "RuntimeError: [enforce fail at inline_container.cc:783] . PytorchStreamWriter failed writing file data/1913: file write failed\n"
                 "\n"
                 "During handling of the above exception, another exception occurred:\n"
                 "\n"
                 "OSError: [Errno 28] No space left on device")
    others = list(range(1, 8))
    tr.agent_fail("gpu-z01", F + sec(3), [(0, 1, F + sec(0.6))] + [(l, -15, F + sec(2.7)) for l in others], sigterm_locals=others, sigterm_at=F + sec(1))
    for k in range(1, len(nodes)):
        for l in range(8):
            tr.watchdog(8 * k + l, F - sec(1) + sec(600.1 + 0.01 * l + 0.005 * k), 21603, numel=1)
        tr.agent_fail(nodes[k], F + sec(603 + 0.01 * k), [(l, -6, F + sec(600 + 0.01 * l + 0.005 * k)) for l in range(8)])
    write_apps(b, tr, "logs/{node}.log")
    kernels(b, tr, S, F + sec(610))
    b.write("reports/df-gpu-z01.txt", ["Filesystem      Size  Used Avail Use% Mounted on",
                                       "/dev/md0         28T   28T     0 100% /raid",
                                       "/dev/nvme0n1p2  1.8T  412G  1.3T  25% /",
                                       "tmpfs           1.0T   12G 1012G   2% /dev/shm"])
    b.source("reports/df-gpu-z01.txt", "node_report", node="gpu-z01", note="df -h after the failure")
    E = F + sec(605)
    std_sacct(b, tr, "mm-13b", "gpu", S, E)
    wl(b, tr, "mm-13b", "oeze", S, E)
    b.expected("storage.disk_full", "definitive", "gpu-z01", affected=["gpu-z01"], explained=["nccl.watchdog_timeout"], story="""
      Rank 0 was staging checkpoint iteration 10800 on gpu-z01's local /raid when torch.save failed with 'file
      write failed' / OSError [Errno 28] No space left on device; df shows /raid at 100% (28T used), filled by earlier
      checkpoints that were never cleaned up after upload. Torchrun stopped gpu-z01; the ranks on gpu-z02, gpu-z03 and gpu-z04,
      waiting in the post-save barrier, timed out ten minutes later. Free /raid on gpu-z01 (and fix the cleanup) before reuse.""")
