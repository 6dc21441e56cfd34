// The Prometheus collector (SPEC §9, FORMATS §10): PromQL query_range templates over the
// attempt's window (e.g. DCGM exporter Xid/ECC/row-remap series, node_exporter InfiniBand
// counters) → node_metrics observations. The node of a series comes from a configured label
// (Hostname, node, instance — "host:port" instances lose the port); the metric extractors of the
// rule catalogue then classify the samples.
//
// Config (collector block):
//   type: prometheus
//   name: prometheus/dcgm            # report name (default "prometheus")
//   url: http://prometheus:9090
//   headers: ["Authorization: Bearer ..."]
//   tenant: team-a                    # X-Scope-OrgID (Mimir/Cortex/Thanos), optional
//   queries:                          # default: the DCGM series the rules read, by node_label
//     - 'DCGM_FI_DEV_XID_ERRORS{Hostname=~"{nodes_regex}"}'
//   node_label: Hostname              # or node / instance
//   step_s: 30
//   margin_s: 300
//   changes_only: true                # per series, only the first sample and each change of value
//   max_samples: 1000000
//   timeout_ms / retries / backoff_ms / max_backoff_ms
#pragma once

#include <string>
#include <vector>

#include "connectors/connector.h"
#include "connectors/loki/http_client.h"

namespace attribution::blueprint {

struct PrometheusCollectorConfig {
  std::string name = "prometheus";
  std::string url;
  std::vector<std::string> headers;
  std::string tenant;
  std::vector<std::string> queries;
  std::string node_label = "Hostname";
  double step_s = 30;
  int64_t margin_s = 300;
  bool changes_only = true;
  uint64_t max_samples = 1000000;
  long timeout_ms = 30000;
  RetryPolicy retry;
};

bool parse_prometheus_config(const YAML::Node& config, PrometheusCollectorConfig& out, std::string& error);

class PrometheusCollector : public Collector {
 public:
  explicit PrometheusCollector(PrometheusCollectorConfig config) : config_(std::move(config)) {}
  std::string name() const override { return config_.name; }
  ConnectorReport collect(const WorkloadAttempt& attempt, EvidenceSink& sink) override;

 private:
  PrometheusCollectorConfig config_;
};

}  // namespace attribution::blueprint
