// Inbound event authentication for POST /v1/events (SPEC §3): a source signs
// timestamp + "\n" + raw body with its secret; anything wrong is one answer, bad_signature.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/error.h"

namespace madeira::delivery {

inline constexpr std::string_view kSourceHeader = "X-Madeira-Source";
inline constexpr std::string_view kSourceTimestampHeader = "X-Madeira-Timestamp";
inline constexpr std::string_view kSourceSignatureHeader = "X-Madeira-Signature";
inline constexpr int64_t kSourceToleranceSeconds = 300;

// "sha256=" + lower-case hex HMAC-SHA256(secret, timestamp + "\n" + body): what a source sends.
std::string SignSourceEvent(std::string_view secret, std::string_view timestamp_header,
                            std::string_view body);

// Checks the two headers as received against every secret of the source (several while
// rotating). The timestamp must be decimal seconds within ±tolerance of `now`. Every failure
// (missing, malformed, stale, mismatched) is the same kBadSignature error, so a caller cannot
// learn which part was wrong.
core::Result<void> VerifySourceEvent(std::string_view timestamp_header,
                                     std::string_view signature_header, std::string_view body,
                                     const std::vector<std::string>& secrets, core::Millis now,
                                     int64_t tolerance_seconds = kSourceToleranceSeconds);

}  // namespace madeira::delivery
