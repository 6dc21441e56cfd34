// libFuzzer target: arbitrary bytes through the scanner (as log text and as a single observation)
// and the session, with the real rule catalogue. Must never crash, hang or produce invalid JSON.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "attribution/codec.h"
#include "attribution/engine.h"

namespace {

std::shared_ptr<const attribution::RuleSet> load() {
  const char* dir = std::getenv("ATTRIBUTION_RULES_DIR");
  std::string base = dir != nullptr ? dir : "rules";
  std::vector<attribution::RuleText> files;
  for (const char* f : {"gpu_xid_catalog.yaml", "gpu.yaml", "nccl.yaml", "torch.yaml", "cuda.yaml", "python.yaml",
                        "kernel.yaml", "storage.yaml", "slurm.yaml", "kubernetes.yaml", "symptoms.yaml", "refiners.yaml"}) {
    std::ifstream in(base + "/" + f);
    std::stringstream ss;
    ss << in.rdbuf();
    files.push_back({f, ss.str()});
  }
  auto r = attribution::load_rules(files);
  if (!r.ok()) abort();
  return r.rules;
}

std::shared_ptr<const attribution::RuleSet> rules;

}  // namespace

// Compiling the catalogue under ASan takes seconds: do it once, outside the per-input timeout.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  rules = load();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  attribution::ExecutionContext ctx;
  ctx.id = "fuzz";
  ctx.state = size % 2 ? "FAILED" : "TIMEOUT";
  ctx.nodes = {"n1", "n2"};
  ctx.ranks = {{0, "n1"}, {1, "n2"}};
  attribution::Session s(rules, ctx);
  attribution::TextSource src;
  src.name = "fuzz.log";
  src.kind = static_cast<attribution::ObservationKind>(size % 6 == 2 ? 0 : size % 6);
  src.boot_time = 1700000000000000000LL;
  src.default_year = 2026;
  s.ingest_text(src, text);
  attribution::Observation o;
  o.kind = attribution::ObservationKind::kSyslog;
  o.text = std::string(text.substr(0, 4096));
  o.rank = 1;
  s.ingest(o);
  attribution::Verdict v = s.attribute();
  if (nlohmann::json::parse(v.json, nullptr, false).is_discarded()) abort();
  return 0;
}
