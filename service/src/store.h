// Durable session state: sessions, evidence batches, computed verdicts and idempotency keys.
// Two implementations behind one interface:
//   - SQLite (default, embedded, single node): DATA_DIR/sessions.db, WAL, synchronous=NORMAL.
//   - PostgreSQL (`--store postgres://...`): shared by every replica, so any replica serves any
//     request of any session. A bounded pool of libpq connections; a request that finds every
//     connection busy for `pool_wait_ms` gets kBusy (503 + Retry-After), never a hang; broken
//     connections (a restarted server) are dropped and re-opened on the next request.
// A batch is committed before the request that carried it is acknowledged. Batches of a session
// are numbered 1, 2, ... under the session's row lock, so every replica replays them in the same
// order. An idempotency key (the client's batch id) makes a retried append, session creation or
// attribution return what the first one stored.
//
// Thread-safety: every method may be called from any thread at any time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "attribution/model.h"

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
  int64_t batches = 0;        // batches stored; the last one's number
  uint64_t observations = 0;  // observations and text lines stored
  uint64_t reports = 0;       // connector reports stored
  int64_t verdicts = 0;       // verdicts stored; the last one's seq
};

struct StoredVerdict {
  int64_t seq = 0;
  int64_t created_ns = 0;
  uint64_t observations = 0;
  std::string json;
};

enum class BatchKind : int { kObservations = 0, kReports = 1, kText = 2 };

enum class StoreStatus {
  kOk,        // done (a new row)
  kReplayed,  // the idempotency key was seen before: `out` holds what the first request stored
  kNotFound,  // no such session
  kClosed,    // the session is closed
  kLimit,     // the batch would take the session past max_observations (nothing stored)
  kBusy,      // no connection free in time, or a lock wait timed out: retry later
  kError,     // the store failed (unreachable, restarted, disk): nothing of the call is stored
};

struct StoreOptions {
  size_t pool_size = 8;     // PostgreSQL connections
  int pool_wait_ms = 2000;  // wait for a free connection before kBusy
};

struct BatchAck {
  int64_t batch_no = 0;
  uint64_t session_observations = 0;
  std::string ack;  // the acknowledgement body sent the first time
};

class Store {
 public:
  // `spec`: "" or "sqlite:PATH" (SQLite; "" means `default_sqlite_path`), or a
  // postgres:// / postgresql:// libpq URI. Creates the schema if needed. Null + `error` on failure.
  static std::unique_ptr<Store> open(const std::string& spec, const std::string& default_sqlite_path,
                                     const StoreOptions& options, std::string& error);
  virtual ~Store() = default;

  // True when other processes write the same store (PostgreSQL): sessions must be read from it.
  virtual bool shared() const = 0;
  // "sqlite:/path" or "postgres://host:port/db" (never a password).
  virtual std::string describe() const = 0;

  // Creates session `id`. With a non-empty `key`, an open session created earlier with the same
  // key is returned instead (kReplayed; compare its context). `out` holds the stored session.
  virtual StoreStatus create_session(const std::string& id, std::string_view context_json, int64_t now_ns,
                                     const std::string& key, StoredSession& out) = 0;
  // kOk (closed sessions included, `closed` set) or kNotFound.
  virtual StoreStatus get_session(const std::string& id, StoredSession& out) = 0;
  // Open sessions, oldest first, at most `limit`; `total` counts all open ones.
  virtual StoreStatus list_sessions(size_t limit, std::vector<StoredSession>& out, uint64_t& total) = 0;

  // Appends one batch of `count` items in one transaction under the session's row lock. A `key`
  // seen before for this session: kReplayed with the stored acknowledgement. An observation batch
  // that would exceed `max_observations`: kLimit (out.session_observations = what is stored).
  // Otherwise the batch is numbered, the counters raised, `make_ack(session observations after
  // it)` stored with it, and kOk.
  virtual StoreStatus append_batch(const std::string& id, BatchKind kind, std::string_view blob, uint64_t count,
                                   const std::string& key, int64_t now_ns, uint64_t max_observations,
                                   const std::function<std::string(uint64_t)>& make_ack, BatchAck& out) = 0;
  // Calls `fn(batch_no, kind, blob)` for the session's batches numbered above `after`, in order.
  virtual StoreStatus batches_after(const std::string& id, int64_t after,
                                    const std::function<void(int64_t, BatchKind, std::string_view)>& fn) = 0;

  // Stores a verdict as the session's next seq. A `key` seen before for this session: kReplayed
  // with the verdict stored then. `out` holds the stored verdict.
  virtual StoreStatus add_verdict(const std::string& id, const std::string& key, int64_t now_ns,
                                  uint64_t observations, const std::string& json, StoredVerdict& out) = 0;
  // The verdict stored under `key` (kOk) or kNotFound.
  virtual StoreStatus find_verdict(const std::string& id, const std::string& key, StoredVerdict& out) = 0;
  virtual StoreStatus verdicts(const std::string& id, std::vector<StoredVerdict>& out) = 0;

  // Deletes the session's data and leaves a tombstone (closed) so later calls can say 410.
  // kNotFound, kClosed (already closed) or kOk.
  virtual StoreStatus close_session(const std::string& id, int64_t now_ns) = 0;
  // Closes open sessions idle since before `before_ns`; `closed` gets their ids.
  virtual StoreStatus close_idle(int64_t before_ns, std::vector<std::string>& closed) = 0;
  // Removes tombstones closed before `before_ns`.
  virtual bool purge_closed(int64_t before_ns) = 0;

  // A write probe for /v2/readyz (PostgreSQL: on a connection of its own, not from the pool).
  virtual bool writable() = 0;
  // The error of this thread's last failed call.
  static std::string last_error();
};

// Sets the calling thread's store error (for implementations).
void set_store_error(std::string message);

}  // namespace attribution::service
