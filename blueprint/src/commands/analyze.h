// `attribution-blueprint analyze BUNDLE`: a workload bundle → a verdict, with the embedded engine
// or through the service (--service-url), which must give the same bytes.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "attribution/engine.h"
#include "bundle/bundle_reader.h"

namespace attribution::blueprint {

// Exit codes (README): 0 verdict produced; 1 error (unreadable bundle, invalid rules, service
// error); 2 usage; 3 verdict produced but a connector failed; 4 no evidence could be read.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitPartial = 3;
inline constexpr int kExitNoData = 4;

struct AnalyzeOptions {
  std::string bundle;
  std::string output = "json";  // json | text
  std::string rules;            // empty = default location
  std::string service_url;      // empty = embedded engine
  std::string token;            // bearer token for the service
  bool keep_session = false;    // leave the session (and verdict) in the service's store
  bool service_stats = false;   // print the client's batch and retry counts to stderr
  unsigned threads = 0;
  size_t chunk_bytes = 2u << 20;
  // false: the caller exits right after, so the session's aggregate (about 110k records for a
  // 16,384-rank storm) is left to the process exit instead of being freed piece by piece (a tenth of
  // such a run). The `analyze` command sets it; library callers and tests keep the default.
  bool free_session = true;
};

struct AnalysisResult {
  Verdict verdict;
  std::vector<ConnectorReport> reports;
  uint64_t bytes = 0;
  uint64_t lines = 0;
};

// Reads the bundle's files into `session` (parallel scan) and returns one connector report per
// `sources:` entry.
std::vector<ConnectorReport> collect_bundle(const Bundle& bundle, Session& session, const AnalyzeOptions& options,
                                            uint64_t& bytes, uint64_t& lines);

// The bundle's evidence as observations (text blocks of whole lines and metric samples), in the
// shape the service ingests.
std::vector<Observation> bundle_observations(const Bundle& bundle, std::vector<ConnectorReport>& reports,
                                             std::string& error);

// The embedded engine on one read bundle: scan its files into a session, add the connector reports,
// attribute. What `analyze` (without --service-url) and `eval` run for each bundle. Consumes the
// bundle: its execution context moves into the session and its file list is released once read,
// before attribution (a 16,384-rank bundle lists 16,384 files and ranks).
AnalysisResult analyze_bundle(Bundle bundle, const std::shared_ptr<const RuleSet>& rules,
                              const AnalyzeOptions& options);

int run_analyze(const AnalyzeOptions& options, std::ostream& out, std::ostream& err);

}  // namespace attribution::blueprint
