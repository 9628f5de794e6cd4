// The few OpenSSL primitives webhook signing needs, behind string-typed helpers.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace madeira::delivery {

using Sha256Digest = std::array<unsigned char, 32>;

Sha256Digest HmacSha256(std::string_view key, std::string_view message);

// Standard base64 with padding (RFC 4648 §4).
std::string Base64Encode(std::string_view bytes);
// Strict: padded input only, no whitespace or URL-safe alphabet; nullopt when malformed.
std::optional<std::string> Base64Decode(std::string_view text);

// Constant-time comparison; false when the lengths differ (lengths are not secret).
bool EqualConstantTime(std::string_view a, std::string_view b);

}  // namespace madeira::delivery
