#include "delivery/circuit_breaker.h"

#include <gtest/gtest.h>

namespace madeira::delivery {
namespace {

constexpr core::Millis kT0 = 1'700'000'000'000;

TEST(CircuitBreakerTest, OpensAfterConsecutiveFailures) {
  CircuitBreaker breaker({.failure_threshold = 3, .cool_down = 10'000});
  breaker.RecordFailure(kT0);
  breaker.RecordFailure(kT0);
  breaker.RecordSuccess();  // resets the streak
  breaker.RecordFailure(kT0);
  breaker.RecordFailure(kT0);
  EXPECT_EQ(breaker.state(), CircuitBreaker::State::kClosed);
  EXPECT_TRUE(breaker.Allow(kT0).allowed);
  breaker.RecordFailure(kT0);
  EXPECT_EQ(breaker.state(), CircuitBreaker::State::kOpen);
  CircuitBreaker::Decision d = breaker.Allow(kT0 + 1);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_at, kT0 + 10'000);
}

TEST(CircuitBreakerTest, HalfOpenLetsExactlyOneProbe) {
  CircuitBreaker breaker({.failure_threshold = 1, .cool_down = 10'000});
  breaker.RecordFailure(kT0);
  EXPECT_FALSE(breaker.Allow(kT0 + 9'999).allowed);
  EXPECT_TRUE(breaker.Allow(kT0 + 10'000).allowed);
  EXPECT_EQ(breaker.state(), CircuitBreaker::State::kHalfOpen);
  EXPECT_FALSE(breaker.Allow(kT0 + 10'001).allowed);
  EXPECT_FALSE(breaker.Allow(kT0 + 50'000).allowed);
  breaker.RecordSuccess();
  EXPECT_EQ(breaker.state(), CircuitBreaker::State::kClosed);
  EXPECT_TRUE(breaker.Allow(kT0 + 50'001).allowed);
  EXPECT_TRUE(breaker.Allow(kT0 + 50'001).allowed);
}

TEST(CircuitBreakerTest, FailedProbeReopensForAnotherCoolDown) {
  CircuitBreaker breaker({.failure_threshold = 1, .cool_down = 10'000});
  breaker.RecordFailure(kT0);
  ASSERT_TRUE(breaker.Allow(kT0 + 10'000).allowed);
  breaker.RecordFailure(kT0 + 10'500);
  EXPECT_EQ(breaker.state(), CircuitBreaker::State::kOpen);
  EXPECT_FALSE(breaker.Allow(kT0 + 20'000).allowed);
  EXPECT_TRUE(breaker.Allow(kT0 + 20'500).allowed);
  EXPECT_EQ(CircuitStateName(breaker.state()), "half_open");
}

TEST(CircuitBreakerTest, AnUnusedProbeIsHandedBack) {
  CircuitBreaker breaker({.failure_threshold = 1, .cool_down = 10'000});
  breaker.RecordFailure(kT0);
  EXPECT_TRUE(breaker.Allow(kT0 + 10'000).allowed);   // the probe permit...
  EXPECT_FALSE(breaker.Allow(kT0 + 10'001).allowed);  // ...is exclusive
  breaker.CancelProbe();                              // nothing was sent with it
  EXPECT_TRUE(breaker.Allow(kT0 + 10'002).allowed);
  EXPECT_EQ(breaker.state(), CircuitBreaker::State::kHalfOpen);
}

}  // namespace
}  // namespace madeira::delivery
