#include "connectors/static/static_adapter.h"

#include "bundle/bundle_reader.h"

namespace attribution::blueprint {
namespace {
// The label that carries the bundle directory with the attempt (labels are not part of the verdict).
constexpr const char* kBundleLabel = "attribution.bundle_dir";
}  // namespace

bool StaticAdapter::by_job(const std::string& bundle_dir, std::vector<WorkloadAttempt>& out, std::string& error) {
  Bundle bundle;
  if (!read_bundle(bundle_dir, bundle, error)) return false;
  WorkloadAttempt a;
  a.context = bundle.manifest.context;
  a.context.labels[kBundleLabel] = bundle_dir;
  out.push_back(std::move(a));
  return true;
}

bool StaticAdapter::ended_between(TimeNs from, TimeNs to, std::vector<WorkloadAttempt>& out, std::string& error) {
  for (const auto& dir : bundles_) {
    std::vector<WorkloadAttempt> one;
    if (!by_job(dir, one, error)) return false;
    for (auto& a : one) {
      TimeNs end = a.context.end;
      if (end == kNoTime || ((from == kNoTime || end >= from) && (to == kNoTime || end <= to))) out.push_back(std::move(a));
    }
  }
  return true;
}

std::string StaticAdapter::bundle_dir(const WorkloadAttempt& attempt) {
  auto it = attempt.context.labels.find(kBundleLabel);
  return it == attempt.context.labels.end() ? "" : it->second;
}

AdapterRegistrar static_adapter_registrar("static", [](const YAML::Node& config, std::string& error) -> std::unique_ptr<Adapter> {
  std::vector<std::string> bundles;
  if (config && config["bundles"]) {
    if (!config["bundles"].IsSequence()) {
      error = "adapters.static.bundles: must be a list of bundle directories";
      return nullptr;
    }
    for (const auto& b : config["bundles"]) bundles.push_back(b.as<std::string>(""));
  }
  return std::make_unique<StaticAdapter>(std::move(bundles));
});

}  // namespace attribution::blueprint
