// attribution-service: the HTTP surface (SPEC §8, api/openapi.yaml) over attribution::Session.
//
// Request path: accept → bounded connection queue (429 when full) → auth → route → work gate for
// ingest/attribute (429 when its queue is full) → body read with size and time limits → simdjson
// decode → SQLite commit → Session::ingest → 2xx. Nothing is acknowledged before it is committed.
//
// Thread-safety: a Service is driven by its own threads; start/stop from one controlling thread.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "attribution/rules.h"
#include "config.h"

namespace attribution::service {

// The OpenAPI document (api/openapi.yaml, embedded at build time) as JSON.
const std::string& openapi_json();

// Constant-time equality of two secrets (compares SHA-256 digests with CRYPTO_memcmp).
bool secret_equal(std::string_view a, std::string_view b);

class Service {
 public:
  Service(Config config, std::shared_ptr<const RuleSet> rules);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Opens the store, replays sessions, binds the socket. Returns false with `error`.
  bool init(std::string& error);
  int port() const;
  // Serves until stop(). Blocking.
  bool run();
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace attribution::service
