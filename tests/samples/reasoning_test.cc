// Reasoning on partial evidence (issue #10 §4), with the shipped rule catalogue and small synthetic
// inputs written from the producers' formats (not copied from tests/real/): one-domain victim
// evidence, Xid cause chains, app-or-hardware Xids, Slurm step teardown, the rank that never
// arrived, CUDA error semantics, the culprit node from context, and node-pressure evictions.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "attribution/codec.h"
#include "attribution/engine.h"
#include "catalogue.h"
#include "attribution/edge/rules_dir.h"

namespace attribution::blueprint {
namespace {

using nlohmann::json;

using testing::catalogue;

struct Input {
  TextSource source;
  std::string text;
};

TextSource applog(const std::string& name, int rank = kNoRank, const std::string& node = "") {
  TextSource s;
  s.name = name;
  s.kind = ObservationKind::kAppLog;
  s.rank = rank;
  s.node = node;
  return s;
}

TextSource syslog(const std::string& name, const std::string& node) {
  TextSource s;
  s.name = name;
  s.kind = ObservationKind::kSyslog;
  s.node = node;
  return s;
}

TextSource k8s(const std::string& name) {
  TextSource s;
  s.name = name;
  s.kind = ObservationKind::kK8sEvent;
  return s;
}

json attribute(const std::vector<Input>& inputs, ExecutionContext ctx) {
  Session s(catalogue(), std::move(ctx));
  for (const auto& in : inputs) s.ingest_text(in.source, in.text);
  return json::parse(s.attribute().json);
}

ExecutionContext failed_job(std::vector<std::string> nodes = {}) {
  ExecutionContext c;
  c.id = "77";
  c.scheduler = "static";
  c.state = "FAILED";
  c.nodes = std::move(nodes);
  return c;
}

std::string node_of(const json& v) { return v["root_cause"].is_null() || v["root_cause"]["node"].is_null() ? "" : v["root_cause"]["node"].get<std::string>(); }

// 1. Every recognised symptom is a consequence, and all point at the network.
TEST(Reasoning, OneDomainVictimEvidenceIsProbable) {
  std::vector<Input> in;
  for (int r : {1, 5, 9}) {
    in.push_back({applog("rank" + std::to_string(r) + ".log", r),
                  "n" + std::to_string(r) + ":4101:4190 [1] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion "
                  "from peer 10.20.0." + std::to_string(r + 10) + "<41234> with error 12, opcode 0, len 0, vendor err 129 (Recv)\n"
                  "n" + std::to_string(r) + ":4101:4190 [1] NCCL INFO transport/net.cc:1146 -> 6\n"});
  }
  json v = attribute(in, failed_job());
  EXPECT_EQ(v["domain"], "network");
  EXPECT_EQ(v["quality"]["level"], "probable");
  EXPECT_EQ(v["root_cause"]["symptom"], "inferred.victim_domain");
  std::string reasons = v["quality"]["reasons"].dump();
  EXPECT_NE(v["root_cause"]["label"].get<std::string>().find("Alternatives"), std::string::npos);
}

TEST(Reasoning, VictimEvidenceInTwoDomainsStaysInsufficient) {
  std::vector<Input> in = {
      {applog("rank1.log", 1),
       "transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> with error 12, opcode 0, len 0, vendor err 129\n"},
      {syslog("dmesg-a.txt", "a"), "[ 100.0] NVRM: Xid (PCI:0000:3b:00): 45, pid=311, name=python3, Ch 00000010\n"},
  };
  json v = attribute(in, failed_job({"a", "b"}));
  EXPECT_EQ(v["quality"]["level"], "insufficient");
}

// 2. "caused by previous Xid N": the earlier Xid is implied even when its line is missing.
TEST(Reasoning, Xid45NamesTheMissingEarlierXid) {
  std::vector<Input> in = {
      {syslog("dmesg-a.txt", "a"),
       "[ 5000.100] NVRM: Xid (PCI:0000:3b:00): 45, pid=2211, name=python3, Ch 00000008, caused by previous Xid 48\n"
       "[ 5000.101] NVRM: Xid (PCI:0000:3b:00): 45, pid=2211, name=python3, Ch 00000009, caused by previous Xid 48\n"},
  };
  json v = attribute(in, failed_job({"a", "b"}));
  EXPECT_EQ(v["root_cause"]["symptom"], "gpu.xid.48");
  EXPECT_EQ(v["outcome"], "gpu.memory_ecc");
  EXPECT_EQ(v["quality"]["level"], "probable");
  EXPECT_EQ(node_of(v), "a");
}

// An application-class Xid never explains a later hardware Xid on the same GPU.
TEST(Reasoning, AppXidNeverExplainsLaterHardwareXid) {
  std::vector<Input> in = {
      {syslog("dmesg-a.txt", "a"),
       "[ 5000.000] NVRM: Xid (PCI:0000:3b:00): 13, pid=2211, name=python3, Graphics SM Warp Exception on (GPC 1, TPC 0, SM 0): Out Of Range Address\n"
       "[ 5002.000] NVRM: Xid (PCI:0000:3b:00): 48, pid=2211, name=python3, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 3, subpartition 0.\n"},
  };
  json v = attribute(in, failed_job({"a"}));
  EXPECT_EQ(v["root_cause"]["symptom"], "gpu.xid.48");
  EXPECT_EQ(v["domain"], "gpu");
  bool thirteen_explained_by_48 = false;
  for (const auto& e : v["explained"]) {
    if (e["id"] == "gpu.xid.13" && e["explained_by"] == "gpu.xid.48") thirteen_explained_by_48 = true;
  }
  EXPECT_TRUE(thirteen_explained_by_48) << v["explained"].dump();
}

// 3. App-or-hardware Xids are never definitive application on their own.
TEST(Reasoning, LoneXid13IsAtMostProbableApplication) {
  std::vector<Input> in = {
      {syslog("dmesg-a.txt", "a"),
       "[ 5000.000] NVRM: Xid (PCI:0000:3b:00): 13, pid=2211, name=python3, Graphics SM Warp Exception on (GPC 1, TPC 0, SM 0): Illegal Instruction Encoding\n"},
  };
  json v = attribute(in, failed_job({"a"}));
  EXPECT_EQ(v["domain"], "application");
  EXPECT_EQ(v["quality"]["level"], "probable");
}

// The node's other GPUs are the comparison: here the job ran four ranks (four GPUs) on node a and only
// one GPU faulted. Without them (a node of which nothing names a second GPU) the Xid keeps its own
// reading: two runs of one program on a one-GPU machine say nothing about the GPU (held-out batch 29).
TEST(Reasoning, SameGpuFaultingInTwoProcessesIsTheGpu) {
  std::vector<Input> in = {
      {syslog("dmesg-a.txt", "a"),
       "[ 5000.000] NVRM: Xid (PCI:0000:3b:00): 13, pid=2211, name=python3, Graphics SM Warp Exception on (GPC 1, TPC 0, SM 0): Out Of Range Address\n"
       "[ 9000.000] NVRM: Xid (PCI:0000:3b:00): 13, pid=4790, name=python3, Graphics SM Warp Exception on (GPC 4, TPC 1, SM 1): Out Of Range Address\n"},
  };
  ExecutionContext four_gpus = failed_job({"a"});
  for (int r = 0; r < 4; ++r) four_gpus.ranks[r] = "a";
  json v = attribute(in, four_gpus);
  EXPECT_EQ(v["domain"], "gpu");
  EXPECT_EQ(v["outcome"], "gpu.hardware");
  EXPECT_EQ(v["quality"]["level"], "probable");
  EXPECT_EQ(node_of(v), "a");

  json alone = attribute(in, failed_job({"a"}));
  EXPECT_NE(alone["outcome"], "gpu.hardware") << alone.dump();
}

TEST(Reasoning, EveryGpuOfANodeFaultingIsSoftware) {
  std::string text;
  for (const char* pci : {"0000:18:00", "0000:3b:00", "0000:86:00", "0000:af:00"})
    text += std::string("[ 5000.000] NVRM: Xid (PCI:") + pci + "): 13, pid=2211, name=python3, Graphics SM Warp Exception on (GPC 1, TPC 0, SM 0): Out Of Range Address\n";
  json v = attribute({{syslog("dmesg-a.txt", "a"), text}}, failed_job({"a"}));
  EXPECT_EQ(v["domain"], "application");
}

// 4. Slurm step teardown.
TEST(Reasoning, TaskFailureTeardownNamesTheMissingTask) {
  std::vector<Input> in = {
      {applog("slurm-881.out"),
       "srun: error: node-a: tasks 0-5,7: Terminated\n"
       "srun: error: node-b: tasks 8-15: Terminated\n"
       "slurmstepd: error: *** STEP 881.0 ON node-a CANCELLED AT 2026-03-01T10:00:00 DUE TO TASK FAILURE ***\n"},
  };
  ExecutionContext c = failed_job({"node-a", "node-b"});
  c.scheduler = "slurm";
  json v = attribute(in, c);
  EXPECT_EQ(v["domain"], "application");
  EXPECT_EQ(v["outcome"], "application.exception");
  EXPECT_EQ(v["quality"]["level"], "probable");
  EXPECT_EQ(v["root_cause"]["rank"], 6);
  EXPECT_EQ(node_of(v), "node-a");
}

TEST(Reasoning, TaskFailureContradictsCompleted) {
  std::vector<Input> in = {
      {applog("slurm-881.out"),
       "slurmstepd: error: *** STEP 881.0 ON node-a CANCELLED AT 2026-03-01T10:00:00 DUE TO TASK FAILURE ***\n"},
  };
  ExecutionContext c = failed_job({"node-a"});
  c.state = "COMPLETED";
  c.exit_code = "0:0";
  json v = attribute(in, c);
  EXPECT_NE(v["outcome"], "none.succeeded");
  EXPECT_NE(v["quality"]["level"], "definitive");
}

TEST(Reasoning, PlainStepCancelIsAProbableCancellation) {
  std::vector<Input> in = {
      {applog("slurm-882.out"),
       "step 100 loss 2.1\nslurmstepd: error: *** STEP 882.0 ON node-a CANCELLED AT 2026-03-01T10:00:00 ***\n"},
  };
  ExecutionContext c = failed_job({"node-a", "node-b"});
  c.scheduler = "slurm";
  json v = attribute(in, c);
  EXPECT_EQ(v["outcome"], "scheduler.cancelled");
  EXPECT_EQ(v["quality"]["level"], "probable");
  EXPECT_TRUE(v["root_cause"]["node"].is_null());
}

// 5. The rank that never arrived, with no world size known.
TEST(Reasoning, BarrierRankThatNeverArrivedWithoutRankMap) {
  std::vector<Input> in;
  std::string all;
  all += "[rank0]: Saving model checkpoint to /ckpt/checkpoint-2000\n";
  for (int r = 1; r < 8; ++r) {
    all += "[rank" + std::to_string(r) + "]:[E1107 10:31:00.000000000 ProcessGroupNCCL.cpp:616] [Rank " + std::to_string(r) +
           "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4001, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
           "Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n";
  }
  in.push_back({applog("train.log", kNoRank, "host-0"), all});
  json v = attribute(in, failed_job());
  EXPECT_EQ(v["outcome"], "application.stuck_rank");
  EXPECT_EQ(v["quality"]["level"], "probable");
  EXPECT_EQ(v["root_cause"]["rank"], 0);
}

TEST(Reasoning, OneRanksBarrierTimeoutIsAStuckRankButNamesNone) {
  std::vector<Input> in = {
      {applog("rank3.log", 3),
       "[E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, "
       "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600044 milliseconds before timing out.\n"},
  };
  json v = attribute(in, failed_job());
  EXPECT_EQ(v["outcome"], "application.stuck_rank");
  EXPECT_EQ(v["quality"]["level"], "probable");
  EXPECT_TRUE(v["root_cause"]["rank"].is_null());  // one rank's log says nothing about which other rank
}

TEST(Reasoning, LargeCollectiveTimeoutAloneIsInsufficient) {
  std::vector<Input> in = {
      {applog("rank3.log", 3),
       "[E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, "
       "OpType=ALLREDUCE, NumelIn=160672064, NumelOut=160672064, Timeout(ms)=600000) ran for 600044 milliseconds "
       "before timing out.\n"},
  };
  json v = attribute(in, failed_job());
  EXPECT_EQ(v["outcome"], "unknown.collective_hang");
  EXPECT_EQ(v["quality"]["level"], "insufficient");
}

std::string watchdog_line(int rank, const std::string& group, int seq, const std::string& op, const std::string& numel) {
  return "[rank" + std::to_string(rank) + "]:[E814 13:15:55.540449524 ProcessGroupNCCL.cpp:607] [" + group + "Rank " +
         std::to_string(rank) + "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=" + std::to_string(seq) +
         ", OpType=" + op + ", NumelIn=" + numel + ", NumelOut=" + numel + ", Timeout(ms)=600000) ran for 600036 "
         "milliseconds before timing out.\n";
}

// The verdict on one merged log in which two ranks report their watchdog timeouts.
json two_ranks_timed_out(const std::string& rank0_line, const std::string& rank1_line) {
  return attribute({{applog("train.log", kNoRank, "host-0"), rank0_line + rank1_line}}, failed_job());
}

TEST(Reasoning, RanksTimedOutInDifferentOperationsAtOneSeqNumDiverged) {
  json v = two_ranks_timed_out(watchdog_line(0, "", 357826, "_ALLGATHER_BASE", "50823168"),
                               watchdog_line(1, "", 357826, "ALLREDUCE", "1"));
  EXPECT_EQ(v["outcome"], "application.stuck_rank");
  EXPECT_EQ(v["quality"]["level"], "probable");
  EXPECT_TRUE(v["root_cause"]["rank"].is_null());  // which rank strayed, the lines do not say
}

TEST(Reasoning, RanksTimedOutInOneAllReduceOfDifferentSizesDiverged) {
  json v = two_ranks_timed_out(watchdog_line(0, "", 3437, "ALLREDUCE", "4311252"),
                               watchdog_line(1, "", 3437, "ALLREDUCE", "1"));
  EXPECT_EQ(v["outcome"], "application.stuck_rank");
}

TEST(Reasoning, RanksTimedOutInTheSameCollectiveAreNotDivergent) {
  json v = two_ranks_timed_out(watchdog_line(0, "", 2521, "ALLREDUCE", "160672064"),
                               watchdog_line(1, "", 2521, "ALLREDUCE", "160672064"));
  EXPECT_EQ(v["outcome"], "unknown.collective_hang");
  EXPECT_EQ(v["quality"]["level"], "insufficient");
}

TEST(Reasoning, OneSeqNumInTwoProcessGroupsIsNotADivergence) {
  // SeqNums count per process group: a data-parallel group's ALLREDUCE and a tensor-parallel group's ALLGATHER can
  // share a number without being the same collective.
  json v = two_ranks_timed_out(watchdog_line(0, "PG 1 ", 77, "ALLREDUCE", "4096"),
                               watchdog_line(1, "PG 2 ", 77, "_ALLGATHER_BASE", "8192"));
  EXPECT_NE(v["outcome"], "application.stuck_rank");
}

// 6. CUDA error semantics.
TEST(Reasoning, DeterministicCudaErrorIsApplication) {
  std::vector<Input> in = {
      {applog("rank0.log", 0),
       "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
       "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n"},
  };
  json v = attribute(in, failed_job({"a"}));
  EXPECT_EQ(v["domain"], "application");
}

TEST(Reasoning, NvlsInvalidArgumentPointsAtFabricState) {
  std::vector<Input> in = {
      {applog("rank0.log", 0, "a"),
       "a:1234:1301 [0] transport/nvls.cc:155 NCCL WARN Cuda failure 1 'invalid argument'\n"},
  };
  json v = attribute(in, failed_job({"a"}));
  EXPECT_EQ(v["domain"], "gpu");
}

// 7. The culprit node from context.
TEST(Reasoning, SingleNodeJobNamesItsNode) {
  std::vector<Input> in = {
      {applog("rank3.log", 3),
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.10 GiB "
       "of which 1.06 GiB is free.\n"},
  };
  json v = attribute(in, failed_job({"dgx-07"}));
  EXPECT_EQ(v["outcome"], "application.cuda_oom");
  EXPECT_EQ(node_of(v), "dgx-07");
}

TEST(Reasoning, SrunLineOfTheSameEventNamesTheNode) {
  std::vector<Input> in = {
      {applog("slurm-9.out"),
       "Traceback (most recent call last):\n  File \"train.py\", line 10, in <module>\n"
       "KeyError: 'input_ids'\n"
       "srun: error: gpu-c: task 9: Exited with exit code 1\n"},
  };
  json v = attribute(in, failed_job({"gpu-a", "gpu-b", "gpu-c"}));
  EXPECT_EQ(v["outcome"], "application.exception");
  EXPECT_EQ(node_of(v), "gpu-c");
}

// What real logs do to text: launcher prefixes, ANSI colours, widened and trailing blanks.
TEST(Reasoning, PrefixesColoursAndBlanksDoNotHideACause) {
  const char* lines[] = {
      "\x1b[36m(RayWorkerWrapper pid=11934, ip=10.1.2.3)\x1b[0m torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.   \n",
      "[trainer3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.10 GiB\n",
      "gpu-a07:1234:5678 [3] torch.OutOfMemoryError: CUDA  out of memory.  Tried to allocate 2.00 GiB.\r\n",
      "[1,3]<stderr>:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n",
  };
  for (const char* line : lines) {
    json v = attribute({{applog("rank3.log", 3), line}}, failed_job({"gpu-a07"}));
    EXPECT_EQ(v["outcome"], "application.cuda_oom") << line;
  }
}

// 8. Kubernetes node-pressure evictions are routed to the pressure.
TEST(Reasoning, EvictionWithContainerOverRequestIsMemoryLimit) {
  std::vector<Input> in = {
      {k8s("events.txt"),
       "3m  Warning  Evicted  pod/w-1  The node was low on resource: memory. Threshold quantity: 100Mi, available: 48Mi. "
       "Container pytorch was using 61273580Ki, request is 32Gi, has larger consumption of memory.\n"},
  };
  json v = attribute(in, failed_job({"n1", "n2"}));
  EXPECT_EQ(v["outcome"], "application.memory_limit");
}

TEST(Reasoning, EvictionForNodeMemoryIsHostOom) {
  std::vector<Input> in = {
      {k8s("events.txt"), "3m  Warning  Evicted  pod/w-1  The node was low on resource: memory. Threshold quantity: 100Mi, available: 48Mi.\n"},
  };
  EXPECT_EQ(attribute(in, failed_job({"n1", "n2"}))["outcome"], "node.host_oom");
}

TEST(Reasoning, EvictionForDiskIsDiskFull) {
  std::vector<Input> in = {
      {k8s("events.txt"), "3m  Warning  Evicted  pod/w-1  The node had condition: [DiskPressure].\n"},
  };
  EXPECT_EQ(attribute(in, failed_job({"n1", "n2"}))["outcome"], "storage.disk_full");
}

TEST(Reasoning, TaintManagerEvictionIsTheNodesCondition) {
  std::vector<Input> in = {
      {k8s("events.txt"), "1m  Normal  TaintManagerEviction  pod/trainer-2  Marking for deletion Pod default/trainer-2\n"},
  };
  json v = attribute(in, failed_job({"n1", "n2"}));
  EXPECT_EQ(v["outcome"], "node.unreachable");
  EXPECT_EQ(v["quality"]["level"], "probable");
}

TEST(Reasoning, PriorityPreemptionStaysPreempted) {
  std::vector<Input> in = {
      {k8s("events.txt"), "2m  Normal  Preempted  pod/trainer-2  Preempted by infer/llm-serve-7f9 on node n2\n"},
  };
  EXPECT_EQ(attribute(in, failed_job({"n1", "n2"}))["outcome"], "scheduler.preempted");
}

// A crash whose innermost frame is in the GPU driver's library is the driver's (probable: a bad pointer
// the program passed in crashes there too); the same frames in a hang's dump, with no crash report above
// them, say nothing.
TEST(Reasoning, CrashInsideTheDriverLibraryIsTheDriver) {
  std::vector<Input> in = {
      {applog("gdb.txt"),
       "[New Thread 0x7fff95489700 (LWP 7488)]\n"
       "Thread 1 \"python\" received signal SIGSEGV, Segmentation fault.\n"
       "0x00007fffe958f5ca in ?? () from /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
       "(gdb) bt\n"
       "#0  0x00007fffe958f5ca in ?? () from /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
       "#1  0x00007fffb3535ec4 in ?? () from /usr/local/cuda/lib64/libcudnn.so.8\n"},
  };
  json v = attribute(in, failed_job({"a"}));
  EXPECT_EQ(v["outcome"], "gpu.driver");
  EXPECT_EQ(v["quality"]["level"], "probable");
  EXPECT_EQ(v["root_cause"]["symptom"], "gpu.crash_in_driver_library");
}

TEST(Reasoning, CrashInsideTheProgramUnderADriverFrameIsTheProgram) {
  std::vector<Input> in = {
      {applog("gdb.txt"),
       "Program received signal SIGSEGV, Segmentation fault.\n"
       "0x00007f5997af198b in ?? () from /usr/local/cuda/lib64/libcudnn.so.8\n"
       "(gdb) bt\n"
       "#0  0x00007f5997af198b in ?? () from /usr/local/cuda/lib64/libcudnn.so.8\n"
       "#1  0x00007f59b9efca20 in ?? () from /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"},
  };
  json v = attribute(in, failed_job({"a"}));
  EXPECT_EQ(v["domain"], "application");
}

TEST(Reasoning, DriverFramesInAHangDumpAreNotACause) {
  std::vector<Input> in = {
      {applog("gdb-attach.txt"),
       "(gdb) thread apply all bt\n"
       "Thread 3 (Thread 0x7f0d11 (LWP 9001)):\n"
       "#0  0x00007f2ec2acdad0 in ioctl () from /lib/x86_64-linux-gnu/libc.so.6\n"
       "#1  0x00007f2ebd0320e8 in ?? () from /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
       "Thread 1 (Thread 0x7f0d00 (LWP 9000)):\n"
       "#0  0x00007f2ebd0320e8 in ?? () from /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"},
  };
  json v = attribute(in, failed_job({"a"}));
  EXPECT_NE(v["domain"], "gpu");
}

}  // namespace
}  // namespace attribution::blueprint
