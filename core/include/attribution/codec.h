// Text codecs shared by the service and the blueprint: RFC 3339 times, ExecutionContext and
// Observation as JSON, workload bundle manifests (SPEC §7), Prometheus text exposition.
//
// Pure functions of their input; errors name the field (and line for YAML/text input).
// Thread-safety: all functions are reentrant.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "attribution/model.h"

namespace attribution {

// A parse result: value when `error` is empty.
template <class T>
struct Parsed {
  T value{};
  std::string error;
  bool ok() const { return error.empty(); }
};

// RFC 3339 / ISO 8601 ("2024-05-01T10:00:00Z", "...T10:00:00.123+02:00", "2024-05-01 10:00:00").
// A time without zone is taken as UTC plus `utc_offset_s`.
Parsed<TimeNs> parse_rfc3339(std::string_view text, int64_t utc_offset_s = 0);
// "2024-05-01T10:00:00.123456789Z" trimmed to milliseconds: "2024-05-01T10:00:00.123Z".
std::string format_rfc3339(TimeNs t);
// Full precision: "2024-05-01T10:00:00.123456789Z" (round-trips through parse_rfc3339).
std::string format_rfc3339_ns(TimeNs t);

// ExecutionContext ⇄ JSON (field names of SPEC §3/§7: id, scheduler, cluster, attempt, step, name,
// user, queue, nodes, ranks {"0": "node"}, start, end, state, terminal_state, exit_code, reason,
// labels). Errors name the field, e.g. "workload.start: not an RFC 3339 time".
Parsed<ExecutionContext> context_from_json(std::string_view json);
std::string context_to_json(const ExecutionContext& context);

// Observation ⇄ JSON: {"kind":"syslog","node":"n1","rank":3,"gpu":"0","observed_at":"RFC3339",
// "source":{"source":"file","line":12},"text":"...", "boot_time":"RFC3339", "utc_offset_s":3600,
// "note":"..."} or with "metric":{"name","labels","value"} instead of "text".
Parsed<Observation> observation_from_json(std::string_view json);
std::string observation_to_json(const Observation& observation);

// One `sources:` entry of a workload bundle.
struct BundleSource {
  std::string path;  // file or glob, relative to the bundle
  int manifest_line = 0;
  TextSource defaults;  // kind, node, rank, gpu, boot_time, timezone offset, note
  std::string timezone;  // as written (resolved to an offset by the caller, which owns the tz db)
  int local_rank = kNoRank;
};

struct BundleManifest {
  ExecutionContext context;
  std::vector<BundleSource> sources;
};

// Parses workload.yaml text. `name` is used in errors ("bundle/workload.yaml:12:5: ...").
Parsed<BundleManifest> parse_bundle_manifest(std::string_view yaml_text, std::string_view name);

// Prometheus text exposition (0.0.4) with optional millisecond timestamps, or a query_range /
// query JSON response ({"status":"success","data":{"resultType":"matrix",...}}). Malformed lines
// are reported in `errors` ("line 12: ...") and skipped.
struct MetricParse {
  std::vector<MetricSample> samples;
  std::vector<std::string> errors;
};
MetricParse parse_metrics_text(std::string_view text);

}  // namespace attribution
