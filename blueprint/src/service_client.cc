#include "service_client.h"

#include <fmt/format.h>
#include <httplib.h>

#include <cctype>
#include <nlohmann/json.hpp>

#include "attribution/codec.h"

namespace attribution::blueprint {
namespace {

std::string percent_encode(const std::string& in) {
  std::string out;
  for (unsigned char c : in) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

}  // namespace

ServiceClient::ServiceClient(std::string base_url, std::string token)
    : base_url_(std::move(base_url)), token_(std::move(token)) {
  while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
}

bool ServiceClient::analyze(const ExecutionContext& context, const std::vector<Observation>& observations,
                            const std::vector<ConnectorReport>& reports, std::string& verdict_json,
                            std::string& error) {
  httplib::Client cli(base_url_);
  cli.set_connection_timeout(10);
  cli.set_read_timeout(300);
  cli.set_write_timeout(300);
  httplib::Headers headers;
  if (!token_.empty()) headers.emplace("Authorization", "Bearer " + token_);
  auto fail = [&](const char* what, const httplib::Result& res) {
    if (!res) {
      error = fmt::format("service {}: {} failed: {}", base_url_, what, httplib::to_string(res.error()));
    } else {
      error = fmt::format("service {}: {} answered {}: {}", base_url_, what, res->status, res->body.substr(0, 500));
    }
    return false;
  };
  std::string body = "{\"context\":" + context_to_json(context) + "}";
  auto res = cli.Post("/v2/sessions", headers, body, "application/json");
  if (!res || res->status / 100 != 2) return fail("create session", res);
  auto created = nlohmann::json::parse(res->body, nullptr, false);
  if (created.is_discarded() || !created.contains("id") || !created["id"].is_string()) {
    error = "service: create session returned no id";
    return false;
  }
  std::string id = created["id"].get<std::string>();
  std::string path = "/v2/sessions/" + id;
  std::string batch;
  auto flush = [&]() -> bool {
    if (batch.empty()) return true;
    auto r = cli.Post(path + "/observations", headers, batch, "application/x-ndjson");
    batch.clear();
    if (!r || r->status / 100 != 2) return fail("add observations", r);
    auto j = nlohmann::json::parse(r->body, nullptr, false);
    if (!j.is_discarded() && j.contains("rejected") && j["rejected"].is_array() && !j["rejected"].empty()) {
      error = fmt::format("service rejected observations: {}", j["rejected"].dump().substr(0, 500));
      return false;
    }
    return true;
  };
  for (const auto& o : observations) {
    if (!o.metric) {
      // Log text goes as raw bytes (POST .../text), so binary junk and invalid UTF-8 reach the
      // engine unchanged, exactly as when the embedded engine reads the file.
      if (!flush()) return false;
      std::string q = "?source=" + percent_encode(o.source.source) + "&kind=" + std::string(to_string(o.kind)) +
                      "&first_line=" + std::to_string(o.source.line == 0 ? 1 : o.source.line);
      if (!o.node.empty()) q += "&node=" + percent_encode(o.node);
      if (o.rank != kNoRank) q += "&rank=" + std::to_string(o.rank);
      if (!o.gpu.empty()) q += "&gpu=" + percent_encode(o.gpu);
      if (!o.note.empty()) q += "&note=" + percent_encode(o.note);
      if (o.boot_time != kNoTime) q += "&boot_time=" + percent_encode(format_rfc3339_ns(o.boot_time));
      if (o.utc_offset_s != 0) q += "&utc_offset_s=" + std::to_string(o.utc_offset_s);
      auto r = cli.Post(path + "/text" + q, headers, o.text, "text/plain");
      if (!r || r->status / 100 != 2) return fail("add text", r);
      continue;
    }
    batch += observation_to_json(o);
    batch += '\n';
    if (batch.size() > (4u << 20) && !flush()) return false;
  }
  if (!flush()) return false;
  nlohmann::json reps = nlohmann::json::array();
  for (const auto& r : reports) {
    reps.push_back({{"connector", r.connector}, {"status", r.status}, {"reason", r.reason},
                    {"observations", r.observations}, {"bytes", r.bytes}});
  }
  res = cli.Post(path + "/connector_reports", headers, reps.dump(), "application/json");
  if (!res || res->status / 100 != 2) return fail("add connector reports", res);
  res = cli.Post(path + "/attribute", headers, "", "application/json");
  if (!res || res->status / 100 != 2) return fail("attribute", res);
  verdict_json = res->body;
  while (!verdict_json.empty() && (verdict_json.back() == '\n')) verdict_json.pop_back();
  cli.Delete(path, headers);
  return true;
}

}  // namespace attribution::blueprint
