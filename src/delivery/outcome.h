// Classifies one delivery attempt per SPEC §3 "Outcome of one attempt", and turns the verdict
// into the engine's retry input.
#pragma once

#include <boost/json/value.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/retry_policy.h"
#include "delivery/http_response.h"

namespace madeira::delivery {

enum class OutcomeKind { kSuccess, kRetryable, kPermanent, kUnknown };
std::string_view OutcomeKindName(OutcomeKind k);

// An endpoint's `success` predicate: the 2xx body must hold `equals` at `json_pointer`.
struct SuccessCheck {
  std::string json_pointer;
  boost::json::value equals;
};

struct Outcome {
  OutcomeKind kind = OutcomeKind::kUnknown;
  std::optional<int> http_status;
  std::string reason;                       // short and human: "HTTP 404", "timeout", ...
  std::optional<core::Millis> retry_after;  // lower bound for the next delay (429/503 only)
  std::string excerpt;  // first kExcerptBytes of the body, cut on a UTF-8 boundary
};

// Success: 2xx (and the check holds). Retryable: 5xx, 408, 429, timeout, refused, reset, DNS,
// other transport failures (a TLS problem may be fixed by the receiver). Permanent: other 4xx,
// refused by the address guard, an invalid URL. Unknown: 2xx whose body fails the check or does
// not parse, 1xx and 3xx (redirects are never followed).
Outcome Classify(const HttpResponse& response, const std::optional<SuccessCheck>& success,
                 core::Millis now);

// A Retry-After value (delta-seconds or HTTP-date) as a delay from `now` in ms, clamped to
// [0, kMaxRetryAfterMs]; nullopt when it is neither form.
inline constexpr core::Millis kMaxRetryAfterMs = 24 * 3600 * 1000LL;
std::optional<core::Millis> ParseRetryAfter(std::string_view value, core::Millis now);

// The start of `body` as text of at most `limit` bytes: well-formed UTF-8 kept, every other
// byte (NUL included) shown as U+FFFD, no character cut in half. Receivers send any bytes; the
// attempt log, its JSON and PostgreSQL's text columns take only text.
std::string Excerpt(std::string_view body, size_t limit = kExcerptBytes);

// The engine's view of a failed attempt: permanent → no retry, Retry-After → a floor on the
// back-off; error is {"type":"webhook.<kind>","message":reason,"http_status"?}.
core::Failure ToFailure(const Outcome& outcome);

}  // namespace madeira::delivery
