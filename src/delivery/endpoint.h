// A webhook endpoint (a subscription): what the API accepts, what the store keeps, and which
// events it receives. One JSON form serves the API and the store; only the secrets differ
// (whole in the store and in the create answer, a prefix everywhere else).
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "core/random.h"
#include "core/retry_policy.h"
#include "delivery/outcome.h"
#include "delivery/rate_limiter.h"
#include "store/store.h"

namespace madeira::delivery {

inline constexpr core::Millis kDefaultEndpointTimeoutMs = 15'000;
inline constexpr core::Millis kMaxEndpointTimeoutMs = 30'000;
inline constexpr int kDefaultMaxInFlight = 50;
inline constexpr int kDefaultWebhookMaxRetries = 10;
inline constexpr size_t kMaxEndpointSecrets = 10;

struct EndpointRetry {
  int max_retries = kDefaultWebhookMaxRetries;
  core::RetryPolicy policy = core::RetryPolicy::WebhookDefaults();
};

struct Endpoint {
  std::string id;
  std::string url;
  std::vector<std::string> secrets;      // "whsec_" + base64, newest first
  std::vector<std::string> event_types;  // globs, e.g. "payment.*"
  std::vector<std::string> sources;      // empty: every source
  std::optional<RateLimit> rate_limit;   // absent: no rate limit
  int max_in_flight = kDefaultMaxInFlight;
  core::Millis timeout_ms = kDefaultEndpointTimeoutMs;
  std::vector<std::pair<std::string, std::string>> headers;
  std::optional<SuccessCheck> success;
  std::optional<boost::json::value> body_template;
  std::optional<EndpointRetry> retry;  // absent: [retry.webhook] from the config
  bool enabled = true;
  std::string disabled_reason;  // why the server disabled it; empty when enabled by hand
  std::optional<core::Millis> failing_since;  // first failure since the last success
  core::Millis created_at = 0;
  core::Millis updated_at = 0;
  // Made from a source's config, not the API: delivers each event to the event's own
  // target_uri (url unused); never stored or listed.
  bool direct = false;

  std::string Queue() const { return QueueFor(id); }
  static std::string QueueFor(std::string_view endpoint_id) {
    return "webhook:" + std::string(endpoint_id);
  }
};

// How secrets appear in an encoded endpoint.
enum class SecretView { kWhole, kPrefix };

// Reads the API's create (base = defaults) or patch (base = the stored endpoint) body over
// `base`. Unknown fields, a bad URL, a rate of 0, a timeout over 30 s ... are kInvalidField /
// kUnknownField / kMissingField naming the field. Secrets absent on create are generated.
core::Result<Endpoint> DecodeEndpoint(const boost::json::value& body, Endpoint base, bool is_create,
                                      core::Random& secret_random);

boost::json::object EncodeEndpoint(const Endpoint& endpoint, SecretView secrets);

// The store's form: the API form with whole secrets and the server-kept state.
store::EndpointRecord ToRecord(const Endpoint& endpoint);
core::Result<Endpoint> FromRecord(const store::EndpointRecord& record);

// The event type matches one of the globs and the source is allowed.
bool Subscribes(const Endpoint& endpoint, std::string_view event_type, std::string_view source);

// "whsec_MfKQ…": enough to tell secrets apart, too little to use one.
std::string SecretPrefix(std::string_view secret);

}  // namespace madeira::delivery
