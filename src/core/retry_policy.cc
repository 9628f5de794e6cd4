#include "core/retry_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace madeira::core {

namespace {

// Far beyond any sane delay (~146 million years) yet safe to add to a timestamp.
constexpr double kDelayCeiling = static_cast<double>(std::numeric_limits<Millis>::max() / 4);

Millis SaturatingAdd(Millis a, Millis b) {
  Millis sum;
  if (__builtin_add_overflow(a, b, &sum)) return std::numeric_limits<Millis>::max();
  return sum;
}

}  // namespace

Millis RetryPolicy::BackoffDelay(int n, Random& random) const {
  const int exponent = std::max(n, 1) - 1;
  // pow overflows to +inf for huge n; min() against max caps it before it reaches an integer.
  double delay = 0;
  if (initial > 0) {
    delay = static_cast<double>(initial) * std::pow(multiplier, exponent);
    if (!(delay <= static_cast<double>(max))) delay = static_cast<double>(max);  // also NaN
  }
  if (jitter > 0) delay *= 1.0 + jitter * (2.0 * random.NextUnit() - 1.0);
  if (!(delay > 0)) return 0;
  return static_cast<Millis>(std::min(delay, kDelayCeiling));
}

std::optional<RetryMode> ParseRetryMode(std::string_view s) {
  if (s == "auto") return RetryMode::kAuto;
  if (s == "fast") return RetryMode::kFast;
  if (s == "backoff") return RetryMode::kBackoff;
  if (s == "never") return RetryMode::kNever;
  return std::nullopt;
}

RetryDecision DecideRetry(const RetryPolicy& policy, const RetryState& state,
                          const Failure& failure, Millis now, Random& random) {
  RetryDecision decision;
  if (failure.mode == RetryMode::kNever || state.retry_count >= state.max_retries) {
    decision.next = TaskStatus::kDead;
    return decision;
  }

  const bool wants_fast =
      failure.mode == RetryMode::kFast ||
      (failure.mode == RetryMode::kAuto && failure.outcome == AttemptOutcome::kLeaseExpired);
  if (wants_fast && state.fast_retries_used < policy.fast_retries &&
      state.fast_in_flight_for_type < policy.fast_retry_concurrency) {
    decision.next = TaskStatus::kPending;
    decision.due = now;
    decision.fast = true;
    return decision;
  }

  // Fast retries taken so far do not advance the back-off curve.
  const int n = std::max(1, state.retry_count + 1 - state.fast_retries_used);
  Millis delay = policy.BackoffDelay(n, random);
  if (failure.retry_after) {
    const Millis asked = std::max<Millis>(0, *failure.retry_after);
    delay = failure.retry_after_is_floor ? std::max(delay, asked) : asked;
  }
  decision.next = TaskStatus::kRetrying;
  decision.due = SaturatingAdd(now, delay);
  return decision;
}

}  // namespace madeira::core
