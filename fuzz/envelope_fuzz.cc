// Feeds arbitrary bytes through the producer-facing parsers: ParseJson -> ParseEnvelope, and the
// RFC 3339 / duration parsers on the raw text. Any crash or sanitizer report is a bug.
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/envelope.h"
#include "core/json_text.h"
#include "core/time.h"

namespace {

constexpr madeira::core::Millis kNow = 1'757'565'900'000;  // fixed, like a FakeClock

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace madeira::core;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  (void)ParseRfc3339(text);
  (void)ParseDuration(text);

  auto value = ParseJson(text);
  if (!value) return 0;
  SequenceRandom random({0x0123'4567'89ab'cdefULL, 0xfedc'ba98'7654'3210ULL});
  EnvelopeLimits limits;
  auto spec = ParseEnvelope(*value, limits, kNow, random);
  if (spec) {
    // Invariants a valid spec must hold, whatever the input.
    if (!IsValidTaskId(spec->task_id) || !IsValidName(spec->task_type) ||
        !IsValidName(spec->queue) || spec->payload.size() > limits.max_payload_bytes ||
        spec->schedule_time < kNow || spec->schedule_time > kNow + limits.max_delay ||
        spec->content_hash.size() != 64) {
      __builtin_trap();
    }
    // What is stored and answered is JSON again (1e400 once became `Infinity`), and holds no
    // byte a PostgreSQL text column refuses where it is not escaped.
    if (!IsJsonText(spec->payload) ||
        (spec->idempotency_key && HasControlCharacter(*spec->idempotency_key)) ||
        !IsValidTraceId(spec->trace_id)) {
      __builtin_trap();
    }
  }
  (void)CanonicalJson(*value);
  (void)JsonDepth(*value);
  return 0;
}
