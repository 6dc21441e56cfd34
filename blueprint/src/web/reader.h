// Read-only queries over the verdict store (docs/store.md) behind the dashboard's JSON API
// (docs/dashboard.md). The SQLite reader opens the file read-only; a PostgreSQL reader can
// implement the same interface.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace attribution::blueprint::web {

// Filters of the runs list; empty strings mean "any".
struct RunFilter {
  std::string outcome, domain, quality, node, cluster, q;  // q: job id (substring) search
  std::optional<int64_t> from_ns, to_ns;                   // end time window [from, to)
};

// Keyset paging position: the (end_ns, id) of the last row shown; end_ns empty = a run without
// an end time (they sort after every dated run).
struct PageCursor {
  std::optional<int64_t> end_ns;
  int64_t id = 0;
};
std::string format_cursor(const PageCursor& c);
bool parse_cursor(const std::string& text, PageCursor& c);

// RFC 3339 (or YYYY-MM-DD, or integer ns since the epoch) → ns since the epoch.
bool parse_time_ns(const std::string& text, int64_t& ns);

class StoreReader {
 public:
  virtual ~StoreReader() = default;
  virtual std::string describe() const = 0;
  // {"runs":[...], "next_cursor": "..."|null}
  virtual nlohmann::json list_runs(const RunFilter& f, const std::optional<PageCursor>& after, int limit) = 0;
  // {"total": N, "by_domain": {...}} (by_domain ignores f.domain), plus by_quality for f.
  virtual nlohmann::json counts(const RunFilter& f) = 0;
  // One run's columns (without the verdict); nullopt when unknown. `verdict_json` gets the raw bytes.
  virtual std::optional<nlohmann::json> get_run(int64_t id, std::string* verdict_json) = 0;
  // Distinct outcome/domain/quality/cluster values, for the filter menus.
  virtual nlohmann::json facets() = 0;
  // Nodes and GPUs implicated by failed runs in the window, repeat offenders first.
  virtual nlohmann::json fleet(const RunFilter& f, int limit) = 0;
};

// Opens `path` read-only; throws std::runtime_error naming the file when it is not a verdict store.
std::unique_ptr<StoreReader> open_sqlite_reader(const std::string& path, int connections);
// PostgreSQL store (libpq DSN); sessions are read-only. Throws when unreachable or without support.
std::unique_ptr<StoreReader> open_postgres_reader(const std::string& dsn, int connections);

}  // namespace attribution::blueprint::web
