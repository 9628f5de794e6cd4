#include "core/retry_policy.h"

#include <gtest/gtest.h>

#include <limits>

namespace madeira::core {
namespace {

constexpr Millis kNow = 1'757'565'900'000;

// Next64 values whose NextUnit() is exactly 0, 0.5 and just under 1.
constexpr uint64_t kUnitZero = 0;
constexpr uint64_t kUnitHalf = uint64_t{1} << 63;
constexpr uint64_t kUnitMax = ~uint64_t{0};

TEST(Backoff, NoJitterAtMidpoint) {
  SequenceRandom half({kUnitHalf});
  const RetryPolicy policy = RetryPolicy::TaskDefaults();
  EXPECT_EQ(policy.BackoffDelay(1, half), 30'000);
  EXPECT_EQ(policy.BackoffDelay(2, half), 60'000);
  EXPECT_EQ(policy.BackoffDelay(3, half), 120'000);
  EXPECT_EQ(policy.BackoffDelay(6, half), 960'000);
}

TEST(Backoff, CappedAtMax) {
  SequenceRandom half({kUnitHalf});
  const RetryPolicy policy = RetryPolicy::TaskDefaults();
  EXPECT_EQ(policy.BackoffDelay(7, half), 30 * 60'000);  // 1 920 000 would exceed 30 min
  EXPECT_EQ(policy.BackoffDelay(100, half), 30 * 60'000);
  EXPECT_EQ(policy.BackoffDelay(std::numeric_limits<int>::max(), half), 30 * 60'000);
}

TEST(Backoff, JitterBounds) {
  const RetryPolicy policy = RetryPolicy::TaskDefaults();
  SequenceRandom low({kUnitZero});
  EXPECT_EQ(policy.BackoffDelay(1, low), 24'000);  // -20 %
  SequenceRandom high({kUnitMax});
  const Millis top = policy.BackoffDelay(1, high);
  EXPECT_LE(top, 36'000);  // +20 %
  EXPECT_GE(top, 35'999);
  SequenceRandom high_capped({kUnitMax});
  EXPECT_LE(policy.BackoffDelay(50, high_capped), 36 * 60'000);
}

TEST(Backoff, WebhookDefaultsStartAtOneMinute) {
  SequenceRandom half({kUnitHalf});
  EXPECT_EQ(RetryPolicy::WebhookDefaults().BackoffDelay(1, half), 60'000);
  EXPECT_EQ(RetryPolicy::WebhookDefaults().BackoffDelay(2, half), 120'000);
}

TEST(Backoff, NeverNegative) {
  RetryPolicy policy;
  policy.jitter = 1.5;  // a misconfiguration must not produce a delay in the past
  SequenceRandom low({kUnitZero});
  EXPECT_EQ(policy.BackoffDelay(1, low), 0);
  policy.initial = 0;
  SequenceRandom half({kUnitHalf});
  EXPECT_EQ(policy.BackoffDelay(1000, half), 0);
}

TEST(Backoff, NBelowOneIsTheFirstRetry) {
  SequenceRandom half({kUnitHalf});
  EXPECT_EQ(RetryPolicy::TaskDefaults().BackoffDelay(0, half), 30'000);
  EXPECT_EQ(RetryPolicy::TaskDefaults().BackoffDelay(-5, half), 30'000);
}

TEST(RetryMode, ParsesTheWireNames) {
  EXPECT_EQ(ParseRetryMode("auto"), RetryMode::kAuto);
  EXPECT_EQ(ParseRetryMode("fast"), RetryMode::kFast);
  EXPECT_EQ(ParseRetryMode("backoff"), RetryMode::kBackoff);
  EXPECT_EQ(ParseRetryMode("never"), RetryMode::kNever);
  EXPECT_FALSE(ParseRetryMode("Fast"));
  EXPECT_FALSE(ParseRetryMode(""));
}

RetryDecision Decide(const RetryState& state, const Failure& failure,
                     const RetryPolicy& policy = RetryPolicy::TaskDefaults()) {
  SequenceRandom half({kUnitHalf});
  return DecideRetry(policy, state, failure, kNow, half);
}

Failure FailWith(RetryMode mode, AttemptOutcome outcome = AttemptOutcome::kFailed) {
  Failure f;
  f.mode = mode;
  f.outcome = outcome;
  return f;
}

TEST(DecideRetry, MaxRetriesThreeAllowsFourAttempts) {
  for (int retry_count = 0; retry_count < 3; ++retry_count) {
    const RetryDecision d =
        Decide({.retry_count = retry_count, .max_retries = 3}, FailWith(RetryMode::kAuto));
    EXPECT_EQ(d.next, TaskStatus::kRetrying) << retry_count;
  }
  EXPECT_EQ(Decide({.retry_count = 3, .max_retries = 3}, FailWith(RetryMode::kAuto)).next,
            TaskStatus::kDead);
}

TEST(DecideRetry, ZeroMaxRetriesIsDeadAtOnce) {
  EXPECT_EQ(Decide({.retry_count = 0, .max_retries = 0}, FailWith(RetryMode::kFast)).next,
            TaskStatus::kDead);
}

TEST(DecideRetry, NeverIsDead) {
  EXPECT_EQ(Decide({.retry_count = 0, .max_retries = 3}, FailWith(RetryMode::kNever)).next,
            TaskStatus::kDead);
}

TEST(DecideRetry, BackoffGrowsWithRetryCount) {
  const RetryDecision first = Decide({.retry_count = 0}, FailWith(RetryMode::kAuto));
  EXPECT_EQ(first.next, TaskStatus::kRetrying);
  EXPECT_FALSE(first.fast);
  EXPECT_EQ(first.due, kNow + 30'000);
  EXPECT_EQ(Decide({.retry_count = 2}, FailWith(RetryMode::kBackoff)).due, kNow + 120'000);
}

TEST(DecideRetry, FastRetryIsImmediate) {
  const RetryDecision d = Decide({.retry_count = 0}, FailWith(RetryMode::kFast));
  EXPECT_EQ(d.next, TaskStatus::kPending);
  EXPECT_TRUE(d.fast);
  EXPECT_EQ(d.due, kNow);
}

TEST(DecideRetry, LeaseExpiryTakesTheFastTierUnderAuto) {
  EXPECT_TRUE(
      Decide({.retry_count = 0}, FailWith(RetryMode::kAuto, AttemptOutcome::kLeaseExpired)).fast);
  EXPECT_FALSE(Decide({.retry_count = 0}, FailWith(RetryMode::kAuto)).fast);
  EXPECT_FALSE(
      Decide({.retry_count = 0}, FailWith(RetryMode::kBackoff, AttemptOutcome::kLeaseExpired))
          .fast);
}

TEST(DecideRetry, FastBudgetExhaustedFallsToBackoff) {
  EXPECT_TRUE(Decide({.retry_count = 1, .fast_retries_used = 1}, FailWith(RetryMode::kFast)).fast);
  const RetryDecision d = Decide({.retry_count = 2, .max_retries = 5, .fast_retries_used = 2},
                                 FailWith(RetryMode::kFast));
  EXPECT_FALSE(d.fast);
  EXPECT_EQ(d.next, TaskStatus::kRetrying);
  // Two fast retries did not advance the curve: this is back-off retry 1.
  EXPECT_EQ(d.due, kNow + 30'000);
}

TEST(DecideRetry, FastConcurrencyFullFallsThrough) {
  EXPECT_TRUE(Decide({.fast_in_flight_for_type = 4}, FailWith(RetryMode::kFast)).fast);
  const RetryDecision d = Decide({.fast_in_flight_for_type = 5}, FailWith(RetryMode::kFast));
  EXPECT_FALSE(d.fast);
  EXPECT_EQ(d.next, TaskStatus::kRetrying);
  EXPECT_EQ(d.due, kNow + 30'000);
}

TEST(DecideRetry, WorkerRetryAfterReplacesTheDelay) {
  Failure f = FailWith(RetryMode::kAuto);
  f.retry_after = 5'000;
  EXPECT_EQ(Decide({.retry_count = 2}, f).due, kNow + 5'000);
  f.retry_after = 3'600'000;
  EXPECT_EQ(Decide({.retry_count = 0}, f).due, kNow + 3'600'000);
}

TEST(DecideRetry, ReceiverRetryAfterIsAFloor) {
  Failure f = FailWith(RetryMode::kAuto);
  f.retry_after_is_floor = true;
  f.retry_after = 5'000;
  EXPECT_EQ(Decide({.retry_count = 0}, f).due, kNow + 30'000);
  f.retry_after = 90'000;
  EXPECT_EQ(Decide({.retry_count = 0}, f).due, kNow + 90'000);
}

TEST(DecideRetry, RetryAfterDoesNotOverflowTheClock) {
  Failure f = FailWith(RetryMode::kAuto);
  f.retry_after = std::numeric_limits<Millis>::max();
  EXPECT_EQ(Decide({.retry_count = 0}, f).due, std::numeric_limits<Millis>::max());
}

}  // namespace
}  // namespace madeira::core
