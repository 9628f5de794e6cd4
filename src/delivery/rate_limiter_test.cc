#include "delivery/rate_limiter.h"

#include <gtest/gtest.h>

namespace madeira::delivery {
namespace {

constexpr core::Millis kT0 = 1'700'000'000'000;
using Kind = Admission::Kind;

TEST(EndpointLimiterTest, BurstThenOneTokenPerInterval) {
  EndpointLimiter limiter({.per_second = 2, .burst = 3}, 0, kT0);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.TryAcquire(kT0).admitted());
  Admission a = limiter.TryAcquire(kT0);
  EXPECT_EQ(a.kind, Kind::kRateLimited);
  EXPECT_EQ(a.not_before, kT0 + 500);
  EXPECT_EQ(limiter.TryAcquire(kT0 + 499).kind, Kind::kRateLimited);
  EXPECT_TRUE(limiter.TryAcquire(kT0 + 500).admitted());
  EXPECT_EQ(limiter.TryAcquire(kT0 + 500).not_before, kT0 + 1000);
}

TEST(EndpointLimiterTest, IdleTimeRefillsNoMoreThanTheBurst) {
  EndpointLimiter limiter({.per_second = 10, .burst = 2}, 0, kT0);
  EXPECT_TRUE(limiter.TryAcquire(kT0).admitted());
  EXPECT_TRUE(limiter.TryAcquire(kT0).admitted());
  const core::Millis later = kT0 + 60'000;
  EXPECT_TRUE(limiter.TryAcquire(later).admitted());
  EXPECT_TRUE(limiter.TryAcquire(later).admitted());
  EXPECT_EQ(limiter.TryAcquire(later).kind, Kind::kRateLimited);
}

TEST(EndpointLimiterTest, ClockStepBackwardsEarnsNothing) {
  EndpointLimiter limiter({.per_second = 1, .burst = 1}, 0, kT0);
  EXPECT_TRUE(limiter.TryAcquire(kT0).admitted());
  EXPECT_EQ(limiter.TryAcquire(kT0 - 5000).kind, Kind::kRateLimited);
  EXPECT_TRUE(limiter.TryAcquire(kT0 + 1000).admitted());
}

TEST(EndpointLimiterTest, MaxInFlightCapsConcurrentAttempts) {
  EndpointLimiter limiter({}, 2, kT0);  // no rate limit
  EXPECT_TRUE(limiter.TryAcquire(kT0).admitted());
  EXPECT_TRUE(limiter.TryAcquire(kT0).admitted());
  EXPECT_EQ(limiter.TryAcquire(kT0).kind, Kind::kInFlightFull);
  EXPECT_EQ(limiter.in_flight(), 2);
  limiter.Release();
  EXPECT_TRUE(limiter.TryAcquire(kT0).admitted());
  for (int i = 0; i < 5; ++i) limiter.Release();
  EXPECT_EQ(limiter.in_flight(), 0);
}

TEST(EndpointLimiterTest, InFlightRefusalTakesNoToken) {
  EndpointLimiter limiter({.per_second = 1, .burst = 1}, 1, kT0);
  EXPECT_TRUE(limiter.TryAcquire(kT0).admitted());
  EXPECT_EQ(limiter.TryAcquire(kT0 + 5000).kind, Kind::kInFlightFull);
  limiter.Release();
  EXPECT_TRUE(limiter.TryAcquire(kT0 + 5000).admitted());
}

TEST(EndpointLimiterTest, UpdateCapsTokensToTheNewBurst) {
  EndpointLimiter limiter({.per_second = 1, .burst = 10}, 0, kT0);
  limiter.Update({.per_second = 1, .burst = 1}, 0, kT0);
  EXPECT_TRUE(limiter.TryAcquire(kT0).admitted());
  EXPECT_EQ(limiter.TryAcquire(kT0).kind, Kind::kRateLimited);
}

}  // namespace
}  // namespace madeira::delivery
