#include "core/ids.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>

namespace madeira::core {
namespace {

TEST(UuidV7, HasTheRfc9562Layout) {
  SequenceRandom random({0xffff'ffff'ffff'ffffULL});
  const std::string id = MakeUuidV7(0x0189'0a5d'ac96, random);
  // Timestamp, version 7, all-ones random bits, variant 0b10.
  EXPECT_EQ(id, "01890a5d-ac96-7fff-bfff-ffffffffffff");

  SequenceRandom zeros({0});
  EXPECT_EQ(MakeUuidV7(0x0189'0a5d'ac96, zeros), "01890a5d-ac96-7000-8000-000000000000");
}

TEST(UuidV7, IsLowerCaseHexWithDashes) {
  SystemRandom random;
  const std::regex shape("^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(std::regex_match(MakeUuidV7(1'757'565'900'000, random), shape));
  }
}

TEST(UuidV7, SortsByCreationTime) {
  SystemRandom random;
  const std::string earlier = MakeUuidV7(1'757'565'900'000, random);
  const std::string later = MakeUuidV7(1'757'565'900'001, random);
  EXPECT_LT(earlier, later);
}

TEST(UuidV7, IsUniqueWithinOneMillisecond) {
  SystemRandom random;
  std::set<std::string> seen;
  for (int i = 0; i < 10'000; ++i) seen.insert(MakeUuidV7(1'757'565'900'000, random));
  EXPECT_EQ(seen.size(), 10'000u);
}

TEST(Token, Is32HexChars) {
  SequenceRandom random({0x0123'4567'89ab'cdefULL, 0xfedc'ba98'7654'3210ULL});
  EXPECT_EQ(MakeToken(random), "0123456789abcdeffedcba9876543210");

  SystemRandom system;
  const std::regex shape("^[0-9a-f]{32}$");
  EXPECT_TRUE(std::regex_match(MakeToken(system), shape));
  EXPECT_NE(MakeToken(system), MakeToken(system));
}

}  // namespace
}  // namespace madeira::core

namespace madeira::core {
namespace {

TEST(OrderedToken, Is32HexCharsAndSortsByTime) {
  SystemRandom random;
  const std::string earlier = MakeOrderedToken(1'700'000'000'000, random);
  const std::string later = MakeOrderedToken(1'700'000'000'001, random);
  EXPECT_EQ(earlier.size(), 32u);
  EXPECT_EQ(earlier.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_LT(earlier, later);
}

TEST(OrderedToken, IsUniqueWithinOneMillisecond) {
  SystemRandom random;
  std::set<std::string> seen;
  for (int i = 0; i < 10'000; ++i) seen.insert(MakeOrderedToken(1'700'000'000'000, random));
  EXPECT_EQ(seen.size(), 10'000u);
}

}  // namespace
}  // namespace madeira::core
