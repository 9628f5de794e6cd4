// What one outbound HTTP attempt produced, as the sender reports it and the classifier reads it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "core/clock.h"

namespace madeira::delivery {

// Why no usable response arrived. kNone means `status` is the receiver's answer.
enum class TransportError {
  kNone,
  kTimeout,            // the per-request timeout passed (connect or transfer)
  kConnectionRefused,  // nothing listening, or the connection could not be made
  kConnectionReset,    // reset or closed before a complete response
  kDns,                // the host name did not resolve
  kRefusedByGuard,     // the address curl would connect to is not an allowed target
  kInvalidRequest,     // malformed URL or a scheme other than http/https
  kAborted,            // the sender stopped before the attempt finished
  kOther,              // anything else libcurl reports (TLS failures, ...)
};

std::string_view TransportErrorName(TransportError e);

inline constexpr size_t kExcerptBytes = 1024;

struct HttpResponse {
  TransportError error = TransportError::kNone;
  std::string error_detail;  // libcurl's message, for logs and the attempt record
  int status = 0;            // 0 when no response arrived
  std::string body;          // up to SenderOptions::max_body_bytes
  bool body_truncated = false;
  std::optional<std::string> retry_after;  // the Retry-After header as sent
  core::Millis duration_ms = 0;
};

}  // namespace madeira::delivery
