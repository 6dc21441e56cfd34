// Request-body decoding for ingest endpoints, with simdjson (DOM): observation batches (JSON array
// or NDJSON), Loki push-format streams, Prometheus query results, connector reports.
//
// Partial acceptance: each item that cannot be decoded is reported with its 0-based index (array
// element, NDJSON line, or running index over Loki values / Prometheus samples) and a reason; the
// others are returned. A body that cannot be split into items at all sets `fatal`.
//
// Thread-safety: reentrant (each call owns its parser).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attribution/model.h"

namespace simdjson::dom {
class element;
}

namespace attribution::service {

struct IngestOptions {
  size_t max_line_bytes = 256 * 1024;  // longer texts are truncated (and counted)
  size_t max_items = 1000000;          // items beyond this are rejected with "too many items"
};

struct Rejection {
  size_t index = 0;
  std::string reason;
};

struct IngestResult {
  std::vector<Observation> observations;
  std::vector<Rejection> rejected;
  uint64_t truncated = 0;
  size_t items = 0;        // items seen (accepted + rejected)
  std::string fatal_code;  // "malformed_json" | "invalid_utf8" | "invalid_body"
  std::string fatal;       // message; empty when the body was split into items
};

// JSON array of observation objects, or NDJSON (one object per line; blank lines skipped).
// The format is detected from the first non-blank byte ('[' = array).
IngestResult parse_observations(std::string_view body, const IngestOptions& options);

// Loki push body {"streams":[{"stream":{labels},"values":[["<ns>","line"],...]}]} (or a Loki
// query_range response {"data":{"result":[...]}}). Node from the labels node/hostname/host/
// instance; kind from the label `kind`, else `default_kind` when non-empty, else syslog when the
// job/filename/source label names a kernel/syslog stream, else applog.
IngestResult parse_loki(std::string_view body, const IngestOptions& options,
                        std::string_view default_kind);

// Prometheus query / query_range response (resultType matrix or vector). Each sample becomes a
// node_metrics observation; the metric name comes from __name__, the node from the hostname label
// (Hostname/hostname/node/host/instance).
IngestResult parse_prometheus(std::string_view body, const IngestOptions& options);

// Decodes one observation object. Returns false with `reason` set.
bool decode_observation(const simdjson::dom::element& element, const IngestOptions& options,
                        Observation& out, bool& truncated, std::string& reason);

struct ReportsResult {
  std::vector<ConnectorReport> reports;
  std::vector<Rejection> rejected;
  std::string fatal_code;
  std::string fatal;
};
// JSON array of {connector, status, reason, observations, bytes} (a single object is accepted too).
ReportsResult parse_connector_reports(std::string_view body);

// One-shot body {"context": {...}, "observations": [...], "connector_reports": [...]}.
struct OneShotRequest {
  std::string context_json;  // minified context object, for attribution::context_from_json
  IngestResult ingest;
  ReportsResult reports;
};
OneShotRequest parse_one_shot(std::string_view body, const IngestOptions& options);

// Truncates `text` to at most `max` bytes on a UTF-8 boundary. Returns true if it was cut.
bool truncate_utf8(std::string& text, size_t max);

}  // namespace attribution::service
