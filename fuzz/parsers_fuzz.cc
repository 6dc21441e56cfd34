// libFuzzer target: the text parsers that face untrusted input — rule files, bundle manifests,
// context/observation JSON and Prometheus text. Errors are fine; crashes and hangs are not.
#include <cstdint>
#include <string>

#include "attribution/codec.h"
#include "attribution/rules.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 5) {
    case 0: (void)attribution::load_rules({{"fuzz.yaml", text}}); break;
    case 1: (void)attribution::parse_bundle_manifest(text, "workload.yaml"); break;
    case 2: (void)attribution::context_from_json(text); break;
    case 3: (void)attribution::observation_from_json(text); break;
    default: (void)attribution::parse_metrics_text(text); break;
  }
  return 0;
}
