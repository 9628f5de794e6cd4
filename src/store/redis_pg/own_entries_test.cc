#include "store/redis_pg/own_entries.h"

#include <gtest/gtest.h>

namespace madeira::store::redis_pg {
namespace {

using Verdict = OwnEntries::Verdict;
const OwnEntries::Clock::time_point kT0{};

TEST(OwnEntries, AnEntryCopiedFromTheSubmitIsOnlyAcknowledged) {
  OwnEntries own;
  own.Copied({"1-0", "1-1"});
  EXPECT_EQ(own.Judge("1-0", kT0), Verdict::kPass);
  EXPECT_EQ(own.Judge("1-1", kT0), Verdict::kPass);
  // Read again (its acknowledgement was lost): no longer known, so it waits, then is copied
  // again (harmless).
  EXPECT_EQ(own.Judge("1-0", kT0), Verdict::kWait);
}

TEST(OwnEntries, AnEntryLeftToTheOutboxIsCopied) {
  OwnEntries own;
  own.LeftToOutbox({"2-0"});
  EXPECT_EQ(own.Judge("2-0", kT0), Verdict::kCopy);
}

TEST(OwnEntries, AnEntryReadBeforeTheStoreNamedItWaitsForTheName) {
  OwnEntries own;
  EXPECT_EQ(own.Judge("3-0", kT0), Verdict::kWait);
  EXPECT_EQ(own.Judge("3-0", kT0 + std::chrono::milliseconds(30)), Verdict::kWait);
  own.Copied({"3-0"});
  EXPECT_EQ(own.Judge("3-0", kT0 + std::chrono::milliseconds(60)), Verdict::kPass);
  EXPECT_EQ(own.Judge("4-0", kT0), Verdict::kWait);
  own.LeftToOutbox({"4-0"});
  EXPECT_EQ(own.Judge("4-0", kT0 + std::chrono::milliseconds(5)), Verdict::kCopy);
}

TEST(OwnEntries, AnEntryNeverNamedIsCopiedAfterAWhile) {
  OwnEntries own;
  EXPECT_EQ(own.Judge("5-0", kT0), Verdict::kWait);
  EXPECT_EQ(own.Judge("5-0", kT0 + OwnEntries::kUnnamedWait - std::chrono::milliseconds(1)),
            Verdict::kWait);
  EXPECT_EQ(own.Judge("5-0", kT0 + OwnEntries::kUnnamedWait), Verdict::kCopy);
}

TEST(OwnEntries, OnlyTheNewestNamesAreKept) {
  OwnEntries own;
  std::vector<std::string> ids;
  for (size_t i = 0; i <= OwnEntries::kKept; ++i) ids.push_back(std::to_string(i) + "-0");
  own.Copied(ids);
  // The oldest is forgotten: met later it waits, then is copied again (harmless).
  EXPECT_EQ(own.Judge("0-0", kT0), Verdict::kWait);
  EXPECT_EQ(own.Judge(ids.back(), kT0), Verdict::kPass);
}

}  // namespace
}  // namespace madeira::store::redis_pg
