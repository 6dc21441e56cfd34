// Durable session state in SQLite (WAL, synchronous=NORMAL): sessions, observation batches,
// connector-report batches and computed verdicts. A batch is committed before the request that
// carried it is acknowledged, and replayed into a fresh attribution::Session at start-up.
//
// Thread-safety: all methods are safe to call concurrently (one connection behind a mutex).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "attribution/model.h"

struct sqlite3;
struct sqlite3_stmt;

namespace attribution::service {

// Compact binary encodings used for the batch blobs (lossless, versioned by a leading byte).
std::string encode_observations(const std::vector<Observation>& observations);
bool decode_observations(std::string_view blob, std::vector<Observation>& out);
std::string encode_reports(const std::vector<ConnectorReport>& reports);
bool decode_reports(std::string_view blob, std::vector<ConnectorReport>& out);

// A raw text chunk of one source (POST .../text), replayed through Session::ingest_text.
struct TextBatch {
  TextSource source;
  uint64_t first_line = 1;
  std::string text;
};
std::string encode_text(const TextBatch& batch);
bool decode_text(std::string_view blob, TextBatch& out);

struct StoredSession {
  std::string id;
  std::string context_json;
  int64_t created_ns = 0;
  int64_t updated_ns = 0;
  bool closed = false;
};

struct StoredVerdict {
  int64_t seq = 0;
  int64_t created_ns = 0;
  uint64_t observations = 0;
  std::string json;
};

enum class BatchKind : int { kObservations = 0, kReports = 1, kText = 2 };

class Store {
 public:
  // Opens (creating if needed) the database at `path`. Returns null and sets `error` on failure.
  static std::unique_ptr<Store> open(const std::string& path, std::string& error);
  ~Store();

  bool create_session(const std::string& id, std::string_view context_json, int64_t now_ns);
  bool append_batch(const std::string& id, BatchKind kind, std::string_view blob, uint64_t count,
                    int64_t now_ns);
  bool add_verdict(const std::string& id, const StoredVerdict& verdict);
  // Deletes the session's data and leaves a tombstone (closed = 1) so later calls can say 410.
  bool close_session(const std::string& id, int64_t now_ns);
  // Removes tombstones closed before `before_ns`.
  bool purge_closed(int64_t before_ns);

  std::vector<StoredSession> sessions();
  bool for_each_batch(const std::string& id,
                      const std::function<void(BatchKind, std::string_view)>& fn);
  std::vector<StoredVerdict> verdicts(const std::string& id);
  // A write probe for /v2/readyz.
  bool writable();
  std::string last_error();

 private:
  Store() = default;
  bool exec(const char* sql);
  std::mutex mu_;
  sqlite3* db_ = nullptr;
  std::string last_error_;
};

}  // namespace attribution::service
