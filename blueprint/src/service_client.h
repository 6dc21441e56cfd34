// A small client for attribution-service's session API (api/openapi.yaml): create a session,
// stream observations as NDJSON, send connector reports, attribute.
#pragma once

#include <string>
#include <vector>

#include "attribution/model.h"

namespace attribution::blueprint {

class ServiceClient {
 public:
  ServiceClient(std::string base_url, std::string token);
  // Runs the whole exchange; on success `verdict_json` holds the service's verdict bytes.
  bool analyze(const ExecutionContext& context, const std::vector<Observation>& observations,
               const std::vector<ConnectorReport>& reports, std::string& verdict_json, std::string& error);

 private:
  std::string base_url_;
  std::string token_;
};

}  // namespace attribution::blueprint
