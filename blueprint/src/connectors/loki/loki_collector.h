// The Loki collector (SPEC §9, FORMATS §9): LogQL stream-selector templates per node or per job,
// /loki/api/v1/query_range with direction=forward, paged under the server's entry limit by moving
// `start` to the last timestamp seen (entries already delivered at that nanosecond are skipped),
// X-Scope-OrgID tenant header, bounded retries, and a line filter pushed down from the rule
// catalogue (pushdown.h). Times are sent as 19-digit nanosecond epochs (Loki reads ≤10 digits as
// seconds and anything longer as nanoseconds, so milliseconds would silently mean 1970).
//
// Config (collector block):
//   type: loki
//   name: loki/syslog                       # report name (default "loki")
//   url: http://loki:3100
//   tenant: team-a                          # X-Scope-OrgID (optional)
//   headers: ["Authorization: Bearer ..."]  # optional extra headers
//   kind: syslog                            # kind of the lines (default applog)
//   query: '{host="{node}", job="varlogs"}' # or queries: [..]; templates of template.h,
//                                           # values quoted for a LogQL string
//   node_label: host                        # stream label naming the node (queries not per node)
//   rank_label: rank                        # stream label naming the global rank (optional)
//   limit: 1000                             # entries per page (≤ max_entries_limit_per_query)
//   max_limit: 5000                         # larger pages when one nanosecond fills a page
//   pushdown: literals                      # literals | patterns | off
//   rules: /etc/attribution/rules           # catalogue for the pushdown (default: the usual one)
//   margin_s: 300                           # widen [start, end] by this much
//   max_entries: 1000000                    # bounds per collect(); beyond: status error
//   max_bytes: 1073741824
//   timeout_ms: 30000
//   retries: 4                              # tries per request (429, 5xx, connection errors)
//   backoff_ms: 200
//   max_backoff_ms: 5000
#pragma once

#include <string>
#include <vector>

#include "connectors/connector.h"
#include "connectors/loki/http_client.h"
#include "connectors/loki/pushdown.h"

namespace attribution::blueprint {

struct LokiCollectorConfig {
  std::string name = "loki";
  std::string url;
  std::string tenant;
  std::vector<std::string> headers;
  ObservationKind kind = ObservationKind::kAppLog;
  std::vector<std::string> queries;
  std::string node_label;
  std::string rank_label;
  int limit = 1000;
  int max_limit = 5000;  // Loki's default max_entries_limit_per_query
  std::string pushdown = "literals";
  std::string rules;
  int64_t margin_s = 300;
  uint64_t max_entries = 1000000;
  uint64_t max_bytes = 1ull << 30;
  long timeout_ms = 30000;
  RetryPolicy retry;
};

bool parse_loki_config(const YAML::Node& config, LokiCollectorConfig& out, std::string& error);

// Counters of the last collect(), for tests and the docs' measurements.
struct LokiStats {
  uint64_t requests = 0;       // HTTP requests, retries included
  uint64_t pages = 0;          // successful query_range responses
  uint64_t bytes_fetched = 0;  // response body bytes
  uint64_t entries = 0;        // log entries delivered
  uint64_t duplicates = 0;     // entries skipped because an earlier page delivered them
  std::string filter;          // the pushed-down line filter stages ("" = none)
  std::vector<std::string> queries;  // the LogQL sent
};

class LokiCollector : public Collector {
 public:
  explicit LokiCollector(LokiCollectorConfig config);
  std::string name() const override { return config_.name; }
  ConnectorReport collect(const WorkloadAttempt& attempt, EvidenceSink& sink) override;
  const LokiStats& stats() const { return stats_; }
  const Pushdown& pushdown() const { return pushdown_; }

 private:
  LokiCollectorConfig config_;
  Pushdown pushdown_;
  std::string pushdown_error_;
  LokiStats stats_;
};

}  // namespace attribution::blueprint
