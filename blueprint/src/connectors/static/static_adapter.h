// The static adapter: each workload is a bundle directory (SPEC §7). by_job() takes a bundle
// directory; ended_between() returns the configured bundles whose end falls in the range.
// The run pipeline reads the bundle's own `sources:` (bundle_dir()), then any configured collectors.
#pragma once

#include <string>
#include <vector>

#include "connectors/connector.h"

namespace attribution::blueprint {

class StaticAdapter : public Adapter {
 public:
  explicit StaticAdapter(std::vector<std::string> bundles = {}) : bundles_(std::move(bundles)) {}
  std::string name() const override { return "static"; }
  bool by_job(const std::string& bundle_dir, std::vector<WorkloadAttempt>& out, std::string& error) override;
  bool ended_between(TimeNs from, TimeNs to, std::vector<WorkloadAttempt>& out, std::string& error) override;
  // The bundle directory an attempt came from ("" when unknown), from the attempt's label "attribution.bundle_dir".
  static std::string bundle_dir(const WorkloadAttempt& attempt);

 private:
  std::vector<std::string> bundles_;
};

}  // namespace attribution::blueprint
