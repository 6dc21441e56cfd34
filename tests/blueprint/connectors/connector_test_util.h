// Helpers for the connector tests: the source tree's rule set, a sink that feeds a Session.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attribution/engine.h"
#include "connectors/connector.h"

namespace attribution::testing {

std::shared_ptr<const RuleSet> source_rules();

// Feeds a Session, and counts what it got.
class SessionSink : public blueprint::EvidenceSink {
 public:
  explicit SessionSink(Session& session) : session_(session) {}
  void text(const TextSource& source, std::string_view block, uint64_t first_line) override;
  void observation(const Observation& observation) override;
  uint64_t text_bytes = 0;
  uint64_t observations = 0;
  std::vector<Observation> kept;  // every observation (tests inspect them)
  std::vector<std::string> sources;

 private:
  Session& session_;
};

std::string temp_dir(const std::string& tag);
void write_file(const std::string& path, const std::string& content);
TimeNs rfc3339(const std::string& text);

}  // namespace attribution::testing
