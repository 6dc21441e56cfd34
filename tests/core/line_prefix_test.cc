#include <gtest/gtest.h>

#include "attribution/codec.h"
#include "line_prefix.h"

namespace attribution::detail {
namespace {

std::string at(std::string_view line, TextSource src = {}, int year = 2026) {
  LinePrefix p = parse_line_prefix(line, src, year);
  return p.t == kNoTime ? "none" : format_rfc3339(p.t);
}

TEST(LinePrefix, DmesgRelativeNeedsBootTime) {
  TextSource src;
  EXPECT_EQ(at("[1084456.074562] NVRM: Xid (PCI:0000:09:00): 79, pid=0", src), "none");
  src.boot_time = parse_rfc3339("2026-01-01T00:00:00Z").value;
  EXPECT_EQ(at("[  100.500000] NVRM: Xid", src), "2026-01-01T00:01:40.500Z");
}

TEST(LinePrefix, DmesgT) {
  TextSource src;
  src.utc_offset_s = 3600;
  EXPECT_EQ(at("[Wed Jan 27 23:04:35 2021] NVRM: Xid (PCI:0000:09:00): 79", src), "2021-01-27T22:04:35.000Z");
  EXPECT_EQ(at("[Wed Jan  7 03:04:35 2021] x", {}), "2021-01-07T03:04:35.000Z");
}

TEST(LinePrefix, SyslogWithoutYearTakesHost) {
  TextSource src;
  src.kind = ObservationKind::kSyslog;
  LinePrefix p = parse_line_prefix("May 18 19:02:39 gpu-b kernel: NVRM: Xid", src, 2026);
  EXPECT_EQ(format_rfc3339(p.t), "2026-05-18T19:02:39.000Z");
  EXPECT_EQ(p.host, "gpu-b");
  EXPECT_EQ(at("May  5 01:02:03 h kernel: x"), "2026-05-05T01:02:03.000Z");
  EXPECT_EQ(at("May 18 19:02:39 gpu-b kernel: x", {}, 0), "none");  // no year known
}

TEST(LinePrefix, IsoShapes) {
  EXPECT_EQ(at("2026-10-01T03:12:44.120Z some line"), "2026-10-01T03:12:44.120Z");
  EXPECT_EQ(at("[2022-05-27T10:42:30.509] sched: Allocate JobId=127441"), "2022-05-27T10:42:30.509Z");
  EXPECT_EQ(at("kern:     err: [2026-07-25T14:23:17.527285605Z]: NVRM: Xid"), "2026-07-25T14:23:17.527Z");
  TextSource syslog;
  syslog.kind = ObservationKind::kSyslog;
  LinePrefix p = parse_line_prefix("2026-05-01T10:00:00.000000+00:00 gpu-c kernel: NVRM: x", syslog, 2026);
  EXPECT_EQ(p.host, "gpu-c");
}

TEST(LinePrefix, GlogAndRankTags) {
  LinePrefix p = parse_line_prefix(
      "[rank1]:[E1002 18:16:40.662329700 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught", {}, 2026);
  EXPECT_EQ(format_rfc3339(p.t), "2026-10-02T18:16:40.662Z");
  EXPECT_EQ(p.rank, 1);
  EXPECT_EQ(at("E0612 01:14:57.061000 3908386 torch/distributed/elastic/multiprocessing/api.py:914] failed"),
            "2026-06-12T01:14:57.061Z");
  EXPECT_EQ(at("[rank0]:[E321 02:07:08.465150152 ProcessGroupNCCL.cpp:1664] x"), "2026-03-21T02:07:08.465Z");
}

TEST(LinePrefix, OpenMpiTagOutput) {
  LinePrefix p = parse_line_prefix(
      "2019-06-02T16:13:44.884Z: [1,12]<stdout>:node-000057:815:864 [0] transport/net_ib.cu:80 NCCL WARN x", {}, 2026);
  EXPECT_EQ(p.rank, 12);
  EXPECT_EQ(p.host, "node-000057");
  EXPECT_EQ(format_rfc3339(p.t), "2019-06-02T16:13:44.884Z");
  p = parse_line_prefix("[1,3]<stderr>:Traceback (most recent call last):", {}, 2026);
  EXPECT_EQ(p.rank, 3);
  p = parse_line_prefix("[1,3]<stdin>: x", {}, 2026);
  EXPECT_EQ(p.rank, kNoRank);
}

TEST(LinePrefix, GrepFileNamePrefix) {
  LinePrefix p = parse_line_prefix(
      "prefill-2.log:[2025-09-17 15:16:23] prefill-2:311:405 [0] transport/net_ib.cc:199 NCCL WARN x", {}, 2026);
  EXPECT_EQ(p.host, "prefill-2");
  EXPECT_EQ(format_rfc3339(p.t), "2025-09-17T15:16:23.000Z");
  p = parse_line_prefix("gpu-a07:1234:5678 [3] NCCL WARN x", {}, 2026);
  EXPECT_EQ(p.host, "gpu-a07");  // a host prefix is not a file name
}

TEST(LinePrefix, NcclHostSrunLabelAnsiAndRay) {
  LinePrefix p = parse_line_prefix("gpu-a07:1234:5678 [3] transport/net_ib.cc:839 NCCL WARN NET/IB", {}, 2026);
  EXPECT_EQ(p.host, "gpu-a07");
  p = parse_line_prefix("12: gpu-a07:1234:5678 [3] NCCL WARN x", {}, 2026);
  EXPECT_EQ(p.rank, 12);
  EXPECT_EQ(p.host, "gpu-a07");
  // A clock time before a bracket is not NCCL's host:pid:tid.
  EXPECT_EQ(parse_line_prefix("00:04:58 [1,2]<stderr>:bin/test: symbol lookup error: x", {}, 2026).host, "");
  EXPECT_EQ(parse_line_prefix("10:21:33 [INFO] starting", {}, 2026).host, "");
  EXPECT_EQ(parse_line_prefix("node17:42:7 [0] NCCL INFO x", {}, 2026).host, "node17");
  EXPECT_EQ(at("\x1b[31m2026-01-01T00:00:01Z\x1b[0m error"), "2026-01-01T00:00:01.000Z");
  EXPECT_EQ(at("(RayWorkerWrapper pid=92234, ip=172.19.24.110) 2026-01-01T00:00:02Z x"), "2026-01-01T00:00:02.000Z");
}

TEST(LinePrefix, NoTimeAndJunkNeverCrash) {
  EXPECT_EQ(at("Traceback (most recent call last):"), "none");
  EXPECT_EQ(at(""), "none");
  EXPECT_EQ(at("["), "none");
  EXPECT_EQ(at("[rank"), "none");
  EXPECT_EQ(at("[99999999999999999999999.1]"), "none");
  std::string junk;
  for (int i = 0; i < 512; ++i) junk += static_cast<char>((i * 37) & 0xff);
  (void)at(junk);
}

TEST(LinePrefix, NormalizeGpu) {
  EXPECT_EQ(normalize_gpu("00000000:9B:00.0"), "0000:9b:00");
  EXPECT_EQ(normalize_gpu("0000:9b:00"), "0000:9b:00");
  EXPECT_EQ(normalize_gpu("PCI:0000:09:00"), "0000:09:00");
  EXPECT_EQ(normalize_gpu("3"), "3");
}

}  // namespace
}  // namespace attribution::detail
