// The data model of SPEC §3: execution contexts, observations, connector reports.
//
// Plain value types. No I/O. Thread-safety: none needed (values); share const instances freely.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attribution {

// Nanoseconds since the Unix epoch, UTC.
using TimeNs = int64_t;
inline constexpr TimeNs kNoTime = std::numeric_limits<int64_t>::min();
inline constexpr int kNoRank = -1;

enum class ObservationKind : uint8_t {
  kAppLog = 0,
  kSyslog,
  kNodeMetrics,
  kNodeReport,
  kScheduler,
  kK8sEvent,
};
inline constexpr int kObservationKindCount = 6;

std::string_view to_string(ObservationKind kind);
// Accepts the SPEC names (applog, syslog, node_metrics, node_report, scheduler, k8s_event).
std::optional<ObservationKind> parse_observation_kind(std::string_view name);

// One attempt of one workload (SPEC §3).
struct ExecutionContext {
  std::string id;
  std::string scheduler = "static";  // slurm | kueue | kubernetes | static
  std::string cluster;
  int attempt = 0;
  std::string step;
  std::string name;
  std::string user;
  std::string queue;
  std::vector<std::string> nodes;
  std::map<int, std::string> ranks;  // global rank -> node
  TimeNs start = kNoTime;
  TimeNs end = kNoTime;
  std::string state;           // native scheduler state, e.g. "CANCELLED by 1000"
  std::string terminal_state;  // normalized; empty = derive from `state`
  std::string exit_code;       // "1:0" (Slurm) or "137"
  std::string reason;
  std::map<std::string, std::string> labels;
};

// Normalizes a native scheduler state to one of COMPLETED, FAILED, CANCELLED, TIMEOUT,
// PREEMPTED, NODE_FAIL, OUT_OF_MEMORY, EVICTED, RUNNING, PENDING, UNKNOWN.
std::string normalize_terminal_state(std::string_view native_state);

// Where an observation came from: connector/file/stream name and 1-based line (0 = none).
struct SourceRef {
  std::string source;
  uint64_t line = 0;
};

// Describes a stream of log lines (a file, a Loki stream, a pod log): the defaults that apply to
// every line of it. Lines may override node, rank and time from their own prefixes.
struct TextSource {
  std::string name;  // shown in evidence, e.g. "logs/rank3.log"
  ObservationKind kind = ObservationKind::kAppLog;
  std::string node;       // default node ("" = from the line, else unknown)
  int rank = kNoRank;     // default global rank
  std::string gpu;        // default GPU (index or PCI address)
  TimeNs boot_time = kNoTime;  // anchors dmesg seconds-since-boot
  int64_t utc_offset_s = 0;    // offset of zone-less local times (dmesg -T, syslog, glog, Slurm)
  int default_year = 0;        // year for stamps without one (syslog, glog); 0 = from context
  std::string note;            // free text kept with the evidence
};

// One metric sample (node_metrics).
struct MetricSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
  TimeNs t = kNoTime;
};

// One normalized piece of evidence (SPEC §3): either log text or a metric sample.
// `text` is one line, or a block of consecutive lines of one source whose first line is
// `source.line` (lines without a time then take one from an earlier line of the block).
// `observed_at`, when set, is the time of every line of the text (e.g. a Loki entry's timestamp).
// boot_time, utc_offset_s and note carry the source's defaults (see TextSource).
struct Observation {
  ObservationKind kind = ObservationKind::kAppLog;
  std::string node;
  int rank = kNoRank;
  std::string gpu;
  TimeNs observed_at = kNoTime;
  SourceRef source;
  std::string text;
  std::optional<MetricSample> metric;
  TimeNs boot_time = kNoTime;
  int64_t utc_offset_s = 0;
  std::string note;
};

// What a collector says about its run (SPEC §9). status: ok | empty | error.
struct ConnectorReport {
  std::string connector;
  std::string status = "ok";
  std::string reason;
  uint64_t observations = 0;
  uint64_t bytes = 0;
};

}  // namespace attribution
