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

TEST(EndpointLimiterTest, AvailableIsWhatTryAcquireWouldAdmit) {
  EndpointLimiter limiter({.per_second = 10, .burst = 4}, 3, kT0);
  EXPECT_EQ(limiter.Available(kT0), 3);  // in-flight cap below the bucket
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.TryAcquire(kT0).admitted());
  EXPECT_EQ(limiter.Available(kT0), 0);
  limiter.Release();
  limiter.Release();
  EXPECT_EQ(limiter.Available(kT0), 1);  // one token left in the bucket of 4
  EXPECT_TRUE(limiter.TryAcquire(kT0).admitted());
  EXPECT_EQ(limiter.Available(kT0), 0);
  EXPECT_EQ(limiter.NextTokenAt(kT0), kT0 + 100);
  EXPECT_EQ(limiter.Available(kT0 + 100), 1);
}

TEST(EndpointLimiterTest, UnlimitedEndpointHasUnboundedAvailability) {
  EndpointLimiter limiter({}, 0, kT0);
  EXPECT_EQ(limiter.Available(kT0), EndpointLimiter::kUnbounded);
  EXPECT_EQ(limiter.NextTokenAt(kT0), kT0);
}

TEST(EndpointLimiterTest, ReservationKeepsTheRateAcrossTheFetchRoundTrip) {
  // burst 1 at 20/s: a reservation taken when the token is there and used 4 ms later (the
  // fetch) must not push the next token 4 ms back (54 ms a send would be 18.5/s).
  EndpointLimiter limiter({.per_second = 20, .burst = 1}, 0, kT0);
  core::Millis t = kT0;
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(limiter.Reserve(1, t), 1) << i;
    limiter.UseReservation(t, t + 4);
    limiter.Release();
    t += 50;
  }
}

TEST(EndpointLimiterTest, StaleReservationIsAdmittedAgainWithinTheBurst) {
  EndpointLimiter limiter({.per_second = 10, .burst = 2}, 0, kT0);
  EXPECT_EQ(limiter.Reserve(5, kT0), 2);    // the whole bucket
  const core::Millis later = kT0 + 20'000;  // the fetch parked on an empty queue
  limiter.UseReservation(kT0, later);
  limiter.UseReservation(kT0, later);
  EXPECT_EQ(limiter.Available(later), 0) << "a send after a quiet spell stays within the burst";
}

TEST(EndpointLimiterTest, CancelledReservationsGiveBackSlotsAndTokens) {
  EndpointLimiter limiter({.per_second = 10, .burst = 3}, 2, kT0);
  EXPECT_EQ(limiter.Reserve(5, kT0), 2);  // in-flight cap 2
  EXPECT_EQ(limiter.in_flight(), 2);
  limiter.CancelReservations(2, kT0);
  EXPECT_EQ(limiter.in_flight(), 0);
  EXPECT_EQ(limiter.Available(kT0), 2);
  EXPECT_EQ(limiter.Reserve(3, kT0), 2);
  limiter.CancelReservations(1, kT0);
  EXPECT_EQ(limiter.Available(kT0), 1);
}

}  // namespace
}  // namespace madeira::delivery
