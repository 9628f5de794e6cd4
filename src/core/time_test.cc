#include "core/time.h"

#include <gtest/gtest.h>

#include <limits>

namespace madeira::core {
namespace {

constexpr Millis kSpecExample = 1'757'565'900'000;  // 2025-09-11T04:45:00Z

Millis ParseOk(std::string_view text) {
  auto r = ParseRfc3339(text);
  EXPECT_TRUE(r.has_value()) << text;
  return r ? *r : -1;
}

void ExpectRejected(std::string_view text) {
  auto r = ParseRfc3339(text, "schedule_time");
  ASSERT_FALSE(r.has_value()) << text << " was accepted as " << *r;
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidScheduleTime) << text;
  EXPECT_EQ(r.error().field, "schedule_time") << text;
}

TEST(Rfc3339, ParsesZuluAndOffsetsToTheSameInstant) {
  EXPECT_EQ(ParseOk("2025-09-11T04:45:00Z"), kSpecExample);
  EXPECT_EQ(ParseOk("2025-09-11T12:45:00+08:00"), kSpecExample);
  EXPECT_EQ(ParseOk("2025-09-10T23:15:00-05:30"), kSpecExample);
  EXPECT_EQ(ParseOk("2025-09-11t04:45:00z"), kSpecExample);
  EXPECT_EQ(ParseOk("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(ParseOk("1969-12-31T23:59:59Z"), -1000);
}

TEST(Rfc3339, FractionIsTruncatedToMilliseconds) {
  EXPECT_EQ(ParseOk("2025-09-11T04:45:00.1Z"), kSpecExample + 100);
  EXPECT_EQ(ParseOk("2025-09-11T04:45:00.123Z"), kSpecExample + 123);
  EXPECT_EQ(ParseOk("2025-09-11T04:45:00.123999999Z"), kSpecExample + 123);
  EXPECT_EQ(ParseOk("2025-09-11T04:45:00.000000000000000000001Z"), kSpecExample);
  ExpectRejected("2025-09-11T04:45:00.Z");
}

TEST(Rfc3339, RequiresAZoneOffset) {
  ExpectRejected("2025-09-11T04:45:00");
  ExpectRejected("2025-09-11T04:45:00.123");
  ExpectRejected("2025-09-11");
  ExpectRejected("2025-09-11 04:45:00Z");
  ExpectRejected("2025-09-11T04:45Z");
  ExpectRejected("2025-09-11T04:45:00+0800");
  ExpectRejected("2025-09-11T04:45:00+08");
  ExpectRejected("2025-09-11T04:45:00 Z");
  ExpectRejected("2025-09-11T04:45:00ZZ");
  ExpectRejected("");
  ExpectRejected("1757565900000");
}

TEST(Rfc3339, ValidatesCalendarFields) {
  ExpectRejected("2025-13-01T00:00:00Z");
  ExpectRejected("2025-00-01T00:00:00Z");
  ExpectRejected("2025-01-00T00:00:00Z");
  ExpectRejected("2025-02-30T00:00:00Z");
  ExpectRejected("2025-04-31T00:00:00Z");
  ExpectRejected("2025-02-29T00:00:00Z");  // not a leap year
  ExpectRejected("1900-02-29T00:00:00Z");  // century, not a leap year
  EXPECT_EQ(ParseOk("2024-02-29T00:00:00Z"), 1'709'164'800'000);
  EXPECT_EQ(ParseOk("2000-02-29T00:00:00Z"), 951'782'400'000);
  ExpectRejected("2025-09-11T24:00:00Z");
  ExpectRejected("2025-09-11T23:60:00Z");
  ExpectRejected("2016-12-31T23:59:60Z");  // leap seconds are refused
  ExpectRejected("2025-09-11T04:45:00+24:00");
  ExpectRejected("2025-09-11T04:45:00+23:60");
  ExpectRejected("2025-9-11T04:45:00Z");
  ExpectRejected("+2025-09-11T04:45:00Z");
}

TEST(Rfc3339, AcceptsTheWidestOffsets) {
  EXPECT_EQ(ParseOk("2025-09-11T23:59:00+23:59"), ParseOk("2025-09-11T00:00:00Z"));
  EXPECT_EQ(ParseOk("2025-09-11T00:00:00-23:59"), ParseOk("2025-09-11T23:59:00Z"));
}

TEST(Rfc3339, NamesTheFieldItWasGiven) {
  auto r = ParseRfc3339("nope", "since");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().field, "since");
}

TEST(Rfc3339, FormatsUtcWithMilliseconds) {
  EXPECT_EQ(FormatRfc3339(kSpecExample), "2025-09-11T04:45:00.000Z");
  EXPECT_EQ(FormatRfc3339(kSpecExample + 7), "2025-09-11T04:45:00.007Z");
  EXPECT_EQ(FormatRfc3339(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatRfc3339(-1), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(FormatRfc3339(951'868'799'999), "2000-02-29T23:59:59.999Z");
  EXPECT_EQ(FormatRfc3339(253'402'300'799'999), "9999-12-31T23:59:59.999Z");
  EXPECT_EQ(FormatRfc3339(253'402'300'800'000), "10000-01-01T00:00:00.000Z");
}

TEST(Rfc3339, FormatThenParseRoundTrips) {
  for (Millis t : {Millis{0}, kSpecExample + 999, Millis{951'782'400'123}, Millis{-86'400'001},
                   Millis{253'402'300'799'999}}) {
    EXPECT_EQ(ParseOk(FormatRfc3339(t)), t) << FormatRfc3339(t);
  }
}

TEST(Duration, ParsesEveryUnit) {
  EXPECT_EQ(*ParseDuration("250ms"), 250);
  EXPECT_EQ(*ParseDuration("30s"), 30'000);
  EXPECT_EQ(*ParseDuration("15m"), 900'000);
  EXPECT_EQ(*ParseDuration("24h"), 86'400'000);
  EXPECT_EQ(*ParseDuration("90d"), 7'776'000'000);
}

TEST(Duration, RejectsMalformedOrNonPositive) {
  for (std::string_view bad :
       {"", "30", "s", "0s", "-5s", "+5s", "1.5s", "5 s", "5S", "5sec", "5w", "1h30m", " 5s"}) {
    auto r = ParseDuration(bad, "max_delay");
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidField);
    EXPECT_EQ(r.error().field, "max_delay");
  }
}

TEST(Duration, RejectsOverflow) {
  EXPECT_EQ(*ParseDuration("9223372036854775807ms"), std::numeric_limits<Millis>::max());
  EXPECT_FALSE(ParseDuration("9223372036854775808ms"));
  EXPECT_FALSE(ParseDuration("9223372036854776s"));
  EXPECT_FALSE(ParseDuration("106751991167301d"));
  EXPECT_TRUE(ParseDuration("106751991167d"));
  EXPECT_FALSE(ParseDuration("99999999999999999999999999d"));
}

}  // namespace
}  // namespace madeira::core
