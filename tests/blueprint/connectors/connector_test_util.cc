#include "connector_test_util.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "attribution/codec.h"
#include "attribution/edge/rules_dir.h"

namespace attribution::testing {

std::shared_ptr<const RuleSet> source_rules() {
  static std::shared_ptr<const RuleSet> rules = [] {
    std::vector<std::string> errors;
    auto r = edge::load_rules_from(ATTRIBUTION_SOURCE_RULES_DIR, errors);
    if (!r) {
      for (const auto& e : errors) ADD_FAILURE() << e;
    }
    return r;
  }();
  return rules;
}

void SessionSink::text(const TextSource& source, std::string_view block, uint64_t first_line) {
  session_.ingest_text(source, block, first_line);
  text_bytes += block.size();
  sources.push_back(source.name);
}

void SessionSink::observation(const Observation& observation) {
  session_.ingest(observation);
  ++observations;
  kept.push_back(observation);
}

std::string temp_dir(const std::string& tag) {
  std::string tmpl = (std::filesystem::temp_directory_path() / ("attr-" + tag + "-XXXXXX")).string();
  char* d = mkdtemp(tmpl.data());
  return d ? std::string(d) : std::string();
}

void write_file(const std::string& path, const std::string& content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << content;
}

TimeNs rfc3339(const std::string& text) { return parse_rfc3339(text).value; }

}  // namespace attribution::testing
