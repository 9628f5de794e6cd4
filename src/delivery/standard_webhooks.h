// Standard Webhooks signing (https://www.standardwebhooks.com): the headers Madeira puts on
// every outbound delivery so receivers can check who sent it and that nothing was altered.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/random.h"

namespace madeira::delivery {

inline constexpr std::string_view kSecretPrefix = "whsec_";
inline constexpr int64_t kSignatureToleranceSeconds = 300;

// Header names of the scheme.
inline constexpr std::string_view kWebhookIdHeader = "webhook-id";
inline constexpr std::string_view kWebhookTimestampHeader = "webhook-timestamp";
inline constexpr std::string_view kWebhookSignatureHeader = "webhook-signature";

// The HMAC key inside a secret: base64-decoded text after `whsec_`. kInvalidField when the
// prefix is missing, the base64 is malformed or the key is empty.
core::Result<std::string> DecodeSecret(std::string_view secret);

// A new secret: `whsec_` + base64 of 24 bytes from `random`. Give it a CSPRNG-backed Random
// (OpenSslRandom below); core::SystemRandom is a seeded Mersenne Twister.
std::string GenerateSecret(core::Random& random);

// The webhook-signature header value: "v1,BASE64" per secret, space-separated, in the order of
// `secrets` (several while rotating). Each is HMAC-SHA256(key, id + "." + timestamp + "." + body).
core::Result<std::string> Sign(std::string_view msg_id, int64_t timestamp_seconds,
                               std::string_view body, const std::vector<std::string>& secrets);

// A receiver's check, for tests and the SDK vectors: true when |now - timestamp| <= tolerance
// and any v1 signature in `signature_header` matches any of `secrets`.
bool Verify(std::string_view msg_id, int64_t timestamp_seconds, std::string_view body,
            std::string_view signature_header, const std::vector<std::string>& secrets,
            int64_t now_seconds, int64_t tolerance_seconds = kSignatureToleranceSeconds);

// core::Random over OpenSSL's RAND_bytes, for secrets.
class OpenSslRandom final : public core::Random {
 public:
  uint64_t Next64() override;
};

}  // namespace madeira::delivery
