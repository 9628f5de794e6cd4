// The shared token bucket (Store::TakeTokens) on a real Redis: two stores — two processes —
// drawing from one bucket never get more than rate x elapsed + burst between them. Needs the
// services redis_pg_store_test.cc needs (ctest's redis_pg_services fixture starts them).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "store/conformance/sync.h"
#include "store/redis_pg/redis_conn.h"
#include "store/redis_pg/redis_pg_store.h"
#include "store/redis_pg/test_services_env.h"

namespace madeira::store {
namespace {

using testing::Await;

using redis_pg::test::Env;

class RedisPgRateBucket : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Env("MADEIRA_TEST_REDIS_URL").empty() || Env("MADEIRA_TEST_DATABASE_URL").empty()) {
      GTEST_FAIL() << "MADEIRA_TEST_REDIS_URL and MADEIRA_TEST_DATABASE_URL are not set: run "
                      "through ctest, or `scripts/test-services.sh run DIR build/store_test`";
    }
    options_.redis_url = Env("MADEIRA_TEST_REDIS_URL");
    options_.database_url = Env("MADEIRA_TEST_DATABASE_URL");
    options_.name_space = "t_bucket_" + std::to_string(::getpid());
    for (auto* store : {&a_, &b_}) {
      auto opened = OpenRedisPgStore(options_);
      ASSERT_TRUE(opened) << opened.error().message;
      *store = std::move(*opened);
    }
  }
  void TearDown() override {
    if (a_) a_->Close();
    if (b_) b_->Close();
  }

  static TokenGrant Take(Store& store, const TokenRequest& request) {
    auto grant = Await<TokenGrant>([&](Callback<TokenGrant> cb) { store.TakeTokens(request, cb); });
    EXPECT_TRUE(grant) << grant.error().message;
    return grant ? *grant : TokenGrant{};
  }

  RedisPgOptions options_;
  std::unique_ptr<Store> a_;
  std::unique_ptr<Store> b_;
};

TEST_F(RedisPgRateBucket, TwoStoresNeverGetMoreThanRateTimesElapsedPlusBurst) {
  ASSERT_TRUE(a_->SharesRateLimits());
  // 2/s: after any grant the key lives >= 500 ms of real time, longer than a stalled test step,
  // so Redis expiring it cannot refill the bucket ahead of the simulated clock.
  constexpr double kRate = 2;
  constexpr int kBurst = 4;
  constexpr Millis kT0 = 1'700'000'000'000;
  constexpr Millis kSpan = 60'000;
  TokenRequest request{"webhook:ep_shared", kRate, kBurst, 1, 0, kT0};
  std::vector<Millis> used_at;  // when each granted token may be used (its send time)
  int step = 0;
  for (Millis now = kT0; now <= kT0 + kSpan; now += 37 + (step % 5) * 23, ++step) {
    request.now = now;
    request.wanted = 1 + step % 3;  // both stores always want more than the rate allows
    request.max_wait_ms = (step % 4) * 150;
    TokenGrant g = Take(step % 2 == 0 ? *a_ : *b_, request);
    ASSERT_GE(g.granted, 0);
    ASSERT_LE(g.granted, request.wanted);
    if (g.granted > 0) {
      ASSERT_LE(g.wait_ms, request.max_wait_ms);
    } else {
      ASSERT_GT(g.wait_ms, request.max_wait_ms);
    }
    for (int i = 0; i < g.granted; ++i) used_at.push_back(now + g.wait_ms);
  }
  // Up to any moment, the tokens used between them are within rate x elapsed + burst.
  std::sort(used_at.begin(), used_at.end());
  for (size_t i = 0; i < used_at.size(); ++i) {
    const double bound = kRate * static_cast<double>(used_at[i] - kT0) / 1000.0 + kBurst;
    ASSERT_LE(static_cast<double>(i + 1), bound) << "at +" << used_at[i] - kT0 << " ms";
  }
  // And the demand did get what the rate allows (the bucket is not just refusing).
  EXPECT_GE(static_cast<double>(used_at.size()), kRate * kSpan / 1000 + kBurst - 2);
}

TEST_F(RedisPgRateBucket, SaysWhenTheNextTokenIsDueAndReservesAhead) {
  constexpr Millis kT = 1'000'000;
  TokenRequest request{"webhook:ep_wait", 10, 3, 5, 0, kT};
  TokenGrant first = Take(*a_, request);
  EXPECT_EQ(first.granted, 3);  // the burst, to use at once
  EXPECT_EQ(first.wait_ms, 0);
  request.wanted = 1;
  request.now = kT + 99;
  TokenGrant early = Take(*b_, request);
  EXPECT_EQ(early.granted, 0);
  EXPECT_EQ(early.wait_ms, 1);  // 10/s: the 4th token is due 100 ms after the burst
  request.now = kT + 100;
  TokenGrant due = Take(*b_, request);
  EXPECT_EQ(due.granted, 1);
  EXPECT_EQ(due.wait_ms, 0);
  // Allowed to wait 150 ms, two more are wanted: one is due within that (at +200), not two.
  request.wanted = 2;
  request.max_wait_ms = 150;
  TokenGrant ahead = Take(*a_, request);
  EXPECT_EQ(ahead.granted, 1);
  EXPECT_EQ(ahead.wait_ms, 100);
}

TEST_F(RedisPgRateBucket, UsesRedisClockWithoutNowAndLeavesNoKeyBehind) {
  TokenRequest request{"webhook:ep_clock", 10, 3, 5, 0, std::nullopt};
  TokenGrant first = Take(*a_, request);
  EXPECT_EQ(first.granted, 3);
  request.wanted = 1;
  TokenGrant other = Take(*b_, request);  // the same bucket, from the other store
  if (other.granted == 0) {               // (a token may have been earned in between)
    EXPECT_GT(other.wait_ms, 0);
    EXPECT_LE(other.wait_ms, 100);
  }
  redis_pg::RedisConn admin(redis_pg::ParseRedisUrl(options_.redis_url).value(), 5'000);
  const std::string key = "madeira:" + options_.name_space + ":{webhook:ep_clock}:rate";
  const int64_t ttl = admin.Command({"PTTL", key}).integer;
  EXPECT_GT(ttl, 0);    // expires ...
  EXPECT_LE(ttl, 400);  // ... once the bucket would be full again (3 tokens at 10/s, + 1)
}

TEST_F(RedisPgRateBucket, NothingToLimitGrantsAllWithoutRedis) {
  TokenRequest request{"webhook:ep_none", 0, 1, 7, 0, 1'000};
  EXPECT_EQ(Take(*a_, request).granted, 7);
}

}  // namespace
}  // namespace madeira::store
