// Collector `fleet_fabric` (docs/fabric.md §3 "Fleet context"): hands a job's analysis the open
// fleet fabric findings its hosts attach to, as node_report observations the rules turn into
// `fabric.fleet_finding` (context; listed under the verdict's fabric.candidates when the verdict is
// a network one). With `refresh`, it first re-runs the fleet analysis when the stored findings are
// older than that, so `run`/`watch` keep the findings current as runs arrive.
//
//   collectors:
//     - {type: fleet_fabric, db: ./attribution.sqlite, refresh: 10m, since: 7d}   # or postgres: DSN
//
// Never throws; a store without a topology or findings gives status "empty".
#include <fmt/format.h>

#include <chrono>
#include <charconv>

#include "connectors/connector.h"
#include "fabric/store_fabric.h"

namespace attribution::blueprint {
namespace {

bool duration_ns(const std::string& text, int64_t& ns) {
  if (text == "0") {
    ns = 0;
    return true;
  }
  if (text.size() < 2) return false;
  int64_t n = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size() - 1, n);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size() - 1 || n < 0) return false;
  int64_t unit = text.back() == 'd' ? 86400 : text.back() == 'h' ? 3600 : text.back() == 'm' ? 60 : text.back() == 's' ? 1 : 0;
  if (unit == 0) return false;
  ns = n * unit * 1'000'000'000;
  return true;
}

class FleetFabricCollector : public Collector {
 public:
  FleetFabricCollector(std::string db, std::string postgres, int64_t refresh_ns, int64_t since_ns)
      : db_(std::move(db)), postgres_(std::move(postgres)), refresh_ns_(refresh_ns), since_ns_(since_ns) {}
  std::string name() const override { return "fleet_fabric"; }

  ConnectorReport collect(const WorkloadAttempt& attempt, EvidenceSink& sink) override {
    ConnectorReport r;
    r.connector = name();
    try {
      if (!store_) store_ = open_fabric_store(db_, postgres_);
      std::string error;
      auto now = std::chrono::steady_clock::now();
      if (refresh_ns_ > 0 && (!refreshed_ || now - *refreshed_ >= std::chrono::nanoseconds(refresh_ns_))) {
        nlohmann::json doc;
        // A store with runs but no topology yet is not an error for the job.
        if (run_fleet_fabric(*store_, since_ns_, std::nullopt, false, doc, error)) refreshed_ = now;
        error.clear();
      }
      int64_t at = attempt.context.end != kNoTime ? attempt.context.end : INT64_MAX;
      auto lines = fleet_context(*store_, attempt.context.nodes, at, error);
      if (!error.empty()) {
        r.status = "error";
        r.reason = error;
        return r;
      }
      uint64_t n = 0;
      for (const auto& l : lines) {
        Observation o;
        o.kind = ObservationKind::kNodeReport;
        o.node = l.host;
        o.source = {"fleet/fabric-findings", ++n};
        o.text = l.text;
        r.bytes += o.text.size();
        sink.observation(o);
      }
      r.observations = n;
      r.status = n ? "ok" : "empty";
      if (!n) r.reason = "no open fabric finding on a component these hosts attach to";
    } catch (const std::exception& e) {
      r.status = "error";
      r.reason = e.what();
      store_.reset();
    }
    return r;
  }

 private:
  std::string db_, postgres_;
  int64_t refresh_ns_, since_ns_;
  std::unique_ptr<FabricStore> store_;
  std::optional<std::chrono::steady_clock::time_point> refreshed_;
};

CollectorRegistrar fleet_fabric_registrar("fleet_fabric", [](const YAML::Node& c, std::string& error) -> std::unique_ptr<Collector> {
  std::string db = c["db"] ? c["db"].as<std::string>("") : "";
  std::string pg = c["postgres"] ? c["postgres"].as<std::string>("") : "";
  if (db.empty() == pg.empty()) {
    error = "fleet_fabric: give exactly one of 'db' (SQLite file) or 'postgres' (DSN)";
    return nullptr;
  }
  int64_t refresh = 0, since = 7 * 86400 * 1'000'000'000LL;
  if (c["refresh"] && !duration_ns(c["refresh"].as<std::string>(""), refresh)) {
    error = "fleet_fabric.refresh: a duration like 10m, 1h or 0";
    return nullptr;
  }
  if (c["since"] && (!duration_ns(c["since"].as<std::string>(""), since) || since == 0)) {
    error = "fleet_fabric.since: a duration like 7d";
    return nullptr;
  }
  for (const auto& kv : c) {
    std::string k = kv.first.Scalar();
    if (k != "type" && k != "db" && k != "postgres" && k != "refresh" && k != "since") {
      error = fmt::format("fleet_fabric.{}: unknown key (db, postgres, refresh, since)", k);
      return nullptr;
    }
  }
  return std::make_unique<FleetFabricCollector>(db, pg, refresh, since);
});

}  // namespace
}  // namespace attribution::blueprint
