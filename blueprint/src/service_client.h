// A small client for attribution-service's session API (api/openapi.yaml): create a session,
// stream observations (raw text per source, metric samples as NDJSON), send connector reports,
// attribute.
//
// Nothing is sent twice and nothing is lost when the service sheds load, a replica dies or the
// store restarts:
//   - every request carries an Idempotency-Key derived from the job's content (context,
//     evidence, reports), so a retried request — or the whole exchange re-run after the blueprint
//     itself restarted — finds what the service already stored instead of storing it again: the
//     same session, each batch once, the verdict computed once;
//   - 429, 502, 503, 504 and connection errors are retried with exponential backoff (with
//     jitter) that waits at least the Retry-After the service sent, up to `max_attempts` per
//     request; other answers fail at once.
// Thread-safety: one ServiceClient per thread.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "attribution/model.h"

namespace attribution::blueprint {

struct RetryPolicy {
  int max_attempts = 8;                                    // per request, first try included
  std::chrono::milliseconds initial_backoff{200};          // doubled after each retry...
  std::chrono::milliseconds max_backoff{10000};            // ...up to this
  std::chrono::milliseconds max_retry_after{60000};        // a longer Retry-After is capped
};

class ServiceClient {
 public:
  ServiceClient(std::string base_url, std::string token, RetryPolicy retry = {});
  // Keep the session (and its verdict) in the service after attributing, instead of closing it:
  // the service's store then records the job as done, and re-running it returns the stored verdict.
  void keep_session(bool keep) { keep_session_ = keep; }

  // Runs the whole exchange; on success `verdict_json` holds the service's verdict bytes.
  bool analyze(const ExecutionContext& context, const std::vector<Observation>& observations,
               const std::vector<ConnectorReport>& reports, std::string& verdict_json, std::string& error);

  // Requests retried so far by this client (429/503/connection errors), for progress reports and tests.
  int retries() const { return retries_; }
  // Evidence batches (text, observation and report requests) sent — each counted once however
  // often it was retried — and acknowledged (2xx), of which `replayed` were already stored.
  int batches_sent() const { return batches_sent_; }
  int batches_acknowledged() const { return batches_acknowledged_; }
  int batches_replayed() const { return batches_replayed_; }

  // The key of the job's session: "bp-" + 32 hex digits of a content hash of the context,
  // every observation (in order, with its source) and every connector report.
  static std::string job_key(const ExecutionContext& context, const std::vector<Observation>& observations,
                             const std::vector<ConnectorReport>& reports);

 private:
  std::string base_url_;
  std::string token_;
  RetryPolicy retry_;
  bool keep_session_ = false;
  int retries_ = 0;
  int batches_sent_ = 0, batches_acknowledged_ = 0, batches_replayed_ = 0;
};

}  // namespace attribution::blueprint
