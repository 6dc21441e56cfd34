// libFuzzer target: the fabric topology inputs (ibnetdiscover output and the topology YAML,
// docs/fabric.md §1), then the resolver and the JSON round trip of what they build. Errors are
// fine; crashes, hangs and a document that does not read back are not.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fabric/resolve.h"
#include "fabric/topology.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  attribution::fabric::TopologyBuilder b;
  std::vector<attribution::fabric::InputError> errors;
  bool ok = data[0] % 2 ? b.add_ibnetdiscover("fuzz.ibnd", text, errors) : b.add_file("fuzz", text, errors);
  attribution::fabric::Topology t;
  if (!ok || !b.build(t, errors)) return 0;
  attribution::fabric::Topology back;
  std::string error;
  if (!attribution::fabric::Topology::from_json(t.to_json(), back, error) || back.to_json() != t.to_json()) std::abort();
  attribution::fabric::TopologyIndex index(t);
  std::vector<int> out;
  for (const auto& h : t.hosts) {
    index.crossed({h.host}, out);
    index.touched({h.host, {{"hca", "mlx5_0"}, {"hca_port", "1"}, {"peer", h.host}}}, out);
  }
  return 0;
}
