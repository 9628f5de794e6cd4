#include "delivery/outcome.h"

#include <curl/curl.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <charconv>

namespace madeira::delivery {
namespace {

namespace json = boost::json;

Outcome Make(OutcomeKind kind, std::string reason) {
  Outcome o;
  o.kind = kind;
  o.reason = std::move(reason);
  return o;
}

std::string StatusReason(int status) { return "HTTP " + std::to_string(status); }

}  // namespace

std::string_view TransportErrorName(TransportError e) {
  switch (e) {
    case TransportError::kNone:
      return "none";
    case TransportError::kTimeout:
      return "timeout";
    case TransportError::kConnectionRefused:
      return "connection_refused";
    case TransportError::kConnectionReset:
      return "connection_reset";
    case TransportError::kDns:
      return "dns";
    case TransportError::kRefusedByGuard:
      return "refused_by_guard";
    case TransportError::kInvalidRequest:
      return "invalid_request";
    case TransportError::kAborted:
      return "aborted";
    case TransportError::kOther:
      return "transport";
  }
  return "transport";
}

std::string_view OutcomeKindName(OutcomeKind k) {
  switch (k) {
    case OutcomeKind::kSuccess:
      return "success";
    case OutcomeKind::kRetryable:
      return "retryable";
    case OutcomeKind::kPermanent:
      return "permanent";
    case OutcomeKind::kUnknown:
      return "unknown";
  }
  return "unknown";
}

Outcome Classify(const HttpResponse& response, const std::optional<SuccessCheck>& success,
                 core::Millis now) {
  switch (response.error) {
    case TransportError::kNone:
      break;
    case TransportError::kRefusedByGuard:
      return Make(OutcomeKind::kPermanent, "target address refused");
    case TransportError::kInvalidRequest:
      return Make(OutcomeKind::kPermanent, "invalid target URL");
    default:
      return Make(OutcomeKind::kRetryable, std::string(TransportErrorName(response.error)));
  }

  const int status = response.status;
  Outcome o;
  o.http_status = status;
  o.excerpt = Excerpt(response.body);
  o.reason = StatusReason(status);
  if (status >= 200 && status < 300) {
    o.kind = OutcomeKind::kSuccess;
    if (!success) return o;
    o.kind = OutcomeKind::kUnknown;
    if (response.body_truncated) {
      o.reason += ", body too large for the success check";
      return o;
    }
    boost::system::error_code ec;
    json::value body = json::parse(response.body, ec);
    if (ec) {
      o.reason += ", body is not JSON";
      return o;
    }
    const json::value* found = body.find_pointer(success->json_pointer, ec);
    if (found == nullptr || *found != success->equals) {
      o.reason += ", success check failed at " + success->json_pointer;
      return o;
    }
    o.kind = OutcomeKind::kSuccess;
    return o;
  }
  if (status >= 500 || status == 408 || status == 429) {
    o.kind = OutcomeKind::kRetryable;
    if ((status == 429 || status == 503) && response.retry_after) {
      o.retry_after = ParseRetryAfter(*response.retry_after, now);
    }
    return o;
  }
  o.kind = status >= 400 ? OutcomeKind::kPermanent : OutcomeKind::kUnknown;
  return o;
}

std::optional<core::Millis> ParseRetryAfter(std::string_view value, core::Millis now) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  core::Millis delay = 0;
  if (value.find_first_not_of("0123456789") == std::string_view::npos) {
    int64_t seconds = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (ec == std::errc::result_out_of_range || seconds > kMaxRetryAfterMs / 1000) {
      return kMaxRetryAfterMs;
    }
    if (ec != std::errc()) return std::nullopt;
    delay = seconds * 1000;
  } else {
    // curl_getdate reads every date form RFC 9110 names (IMF-fixdate, RFC 850, asctime).
    time_t at = curl_getdate(std::string(value).c_str(), nullptr);
    if (at == -1) return std::nullopt;
    // A date past the longest wait (curl reads years up to ~10^9): in milliseconds it would
    // overflow, so it is compared in seconds first.
    if (static_cast<int64_t>(at) > (now + kMaxRetryAfterMs) / 1000 + 1) return kMaxRetryAfterMs;
    delay = static_cast<core::Millis>(at) * 1000 - now;
  }
  return std::clamp<core::Millis>(delay, 0, kMaxRetryAfterMs);
}

namespace {

// The length of the well-formed UTF-8 sequence (RFC 3629) at the start of `s`, 0 if there is
// none. Hand-written: neither Boost nor the standard library offers a check that resumes after
// a bad byte, and the excerpt must keep what follows it.
size_t Utf8SequenceAt(std::string_view s) {
  const auto b = [&](size_t i) { return i < s.size() ? static_cast<uint8_t>(s[i]) : 0u; };
  const auto cont = [&](size_t i) { return (b(i) & 0xC0) == 0x80; };
  const uint8_t c = b(0);
  if (c >= 0x01 && c <= 0x7F) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    const uint8_t lo = c == 0xE0 ? 0xA0 : 0x80,
                  hi = c == 0xED ? 0x9F : 0xBF;  // no overlong, no surrogate
    return b(1) >= lo && b(1) <= hi && cont(2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    const uint8_t lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;  // <= U+10FFFF
    return b(1) >= lo && b(1) <= hi && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;  // NUL (no text column holds it), a stray continuation byte, 0xC0/0xC1, 0xF5..
}

}  // namespace

std::string Excerpt(std::string_view body, size_t limit) {
  // Text first: each bad byte becomes U+FFFD (3 bytes), so `limit` + 3 bytes of body give at
  // least `limit` of text, and a character cut at the body's end falls past the cut below.
  std::string_view head = body.substr(0, limit + 3);
  std::string text;
  text.reserve(head.size());
  for (size_t i = 0; i < head.size();) {
    const size_t n = Utf8SequenceAt(head.substr(i));
    if (n == 0) {
      text += "\xEF\xBF\xBD";
      ++i;
    } else {
      text.append(head.substr(i, n));
      i += n;
    }
  }
  if (text.size() <= limit) return text;
  size_t cut = limit;
  // Step back over continuation bytes (10xxxxxx) so a multi-byte character is not split.
  while (cut > 0 && (static_cast<uint8_t>(text[cut]) & 0xC0) == 0x80) --cut;
  text.resize(cut);
  return text;
}

core::Failure ToFailure(const Outcome& outcome) {
  core::Failure f;
  f.mode =
      outcome.kind == OutcomeKind::kPermanent ? core::RetryMode::kNever : core::RetryMode::kBackoff;
  if (outcome.retry_after) {
    f.retry_after = outcome.retry_after;
    f.retry_after_is_floor = true;
  }
  json::object error{{"type", "webhook." + std::string(OutcomeKindName(outcome.kind))},
                     {"message", outcome.reason}};
  if (outcome.http_status) error["http_status"] = *outcome.http_status;
  f.error = json::serialize(error);
  return f;
}

}  // namespace madeira::delivery
