// Signing helpers: sign an event for POST /v1/events, and verify a Standard Webhooks delivery.
#ifndef MADEIRA_SDK_SIGNATURES_H_
#define MADEIRA_SDK_SIGNATURES_H_

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "madeira/errors.h"

namespace madeira::sdk {

// The three headers of a signed event.
struct EventHeaders {
  static constexpr std::string_view kSource = "X-Madeira-Source";
  static constexpr std::string_view kTimestamp = "X-Madeira-Timestamp";
  static constexpr std::string_view kSignature = "X-Madeira-Signature";
  std::string source;
  std::string timestamp;  // decimal Unix seconds
  std::string signature;  // "sha256=" + lower-case hex
};

// Headers for sending body (the raw bytes, sent unchanged) to POST /v1/events as source_id.
// The server accepts timestamps within ±300 s of its clock.
EventHeaders SignEvent(std::string_view source_id, std::string_view secret, std::string_view body,
                       std::chrono::sys_seconds at = std::chrono::floor<std::chrono::seconds>(
                           std::chrono::system_clock::now()));

// "sha256=" + hex HMAC-SHA256(secret, timestamp + "\n" + body).
std::string EventSignature(std::string_view secret, std::string_view timestamp,
                           std::string_view body);

enum class WebhookVerdict { kValid, kBadHeaders, kTimestampOutsideTolerance, kNoMatchingSignature };

class WebhookError : public Error {
 public:
  explicit WebhookError(WebhookVerdict verdict);
  WebhookVerdict verdict() const { return verdict_; }

 private:
  WebhookVerdict verdict_;
};

// Checks Standard Webhooks deliveries: accepted when any "v1," signature in webhook-signature
// matches any secret (constant-time compare) and the timestamp is within tolerance of now.
class WebhookVerifier {
 public:
  // Secrets are "whsec_" + base64, several while rotating; throws Error when one is malformed.
  explicit WebhookVerifier(const std::vector<std::string>& secrets,
                           std::chrono::seconds tolerance = std::chrono::seconds(300));

  // From the webhook-id, webhook-timestamp and webhook-signature header values and raw body.
  WebhookVerdict Check(std::string_view id, std::string_view timestamp, std::string_view signature,
                       std::string_view body,
                       std::chrono::sys_seconds now = std::chrono::floor<std::chrono::seconds>(
                           std::chrono::system_clock::now())) const;
  // Like Check, but throws WebhookError unless the delivery is valid.
  void Verify(std::string_view id, std::string_view timestamp, std::string_view signature,
              std::string_view body,
              std::chrono::sys_seconds now =
                  std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now())) const;

 private:
  std::vector<std::string> keys_;
  std::chrono::seconds tolerance_;
};

}  // namespace madeira::sdk

#endif  // MADEIRA_SDK_SIGNATURES_H_
