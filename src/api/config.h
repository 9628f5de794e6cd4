// What the HTTP layer is configured with: bearer tokens with scopes, and transport limits.
// Kept apart from http_server.h so auth and tests need no Asio.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/clock.h"

namespace madeira::api {

enum class Scope { kProducer, kWorker, kAdmin };

struct ApiToken {
  std::string name;
  std::string sha256_hex;  // lowercase hex sha256 of the token; the token itself is never kept
  std::vector<Scope> scopes;
};

struct ApiConfig {
  std::vector<ApiToken> tokens;  // empty: auth off
  size_t max_body_bytes = 1 << 20;
  size_t max_header_bytes = 16 << 10;
  core::Millis read_timeout_ms = 10000;
};

}  // namespace madeira::api
