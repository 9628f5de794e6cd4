// Feeds arbitrary bytes through the webhook parsers: an endpoint body (create, and a patch
// over a valid endpoint), a stored delivery payload, the source signature headers, a
// receiver's Retry-After, and templates. Any crash or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/envelope.h"
#include "core/random.h"
#include "delivery/endpoint.h"
#include "delivery/outcome.h"
#include "delivery/payload_template.h"
#include "delivery/source_signature.h"
#include "delivery/standard_webhooks.h"
#include "delivery/webhook_service.h"

namespace {

constexpr madeira::core::Millis kNow = 1'757'565'900'000;  // fixed, like a FakeClock

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace madeira;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  core::SequenceRandom random({0x0123'4567'89ab'cdefULL, 0xfedc'ba98'7654'3210ULL});

  (void)delivery::ParseRetryAfter(text, kNow);
  (void)delivery::VerifySourceEvent(text, text, text, {"k1"}, kNow);
  (void)delivery::DecodeDeliveryPayload(text);

  auto value = core::ParseJson(text);
  if (!value) return 0;
  auto created = delivery::DecodeEndpoint(*value, delivery::Endpoint{}, true, random);
  if (created) {
    // Invariants a valid endpoint must hold, whatever the input.
    if (created->url.empty() || created->secrets.empty() || created->event_types.empty() ||
        created->timeout_ms < 1 || created->timeout_ms > delivery::kMaxEndpointTimeoutMs ||
        (created->rate_limit && !(created->rate_limit->per_second > 0))) {
      __builtin_trap();
    }
    for (const auto& s : created->secrets) {
      if (!delivery::DecodeSecret(s)) __builtin_trap();
    }
    created->id = "ep_fuzz";
    auto back = delivery::FromRecord(delivery::ToRecord(*created));
    if (!back) __builtin_trap();  // what the store keeps always reads back
  }
  auto base =
      delivery::DecodeEndpoint(*core::ParseJson(R"({"url":"http://x/","event_types":["*"]})"),
                               delivery::Endpoint{}, true, random);
  if (base) (void)delivery::DecodeEndpoint(*value, *base, false, random);
  if (delivery::ValidateTemplate(*value)) {
    (void)delivery::RenderBody(*value, delivery::MakeEventObject("e", "t", "s", *value, "tr"));
  }
  return 0;
}
