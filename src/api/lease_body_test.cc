#include "api/lease_body.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "api/error_table.h"
#include "api/task_json.h"
#include "core/json_text.h"

namespace madeira::api {

using core::AppendJsonString;
using core::IsJsonText;
namespace {

store::Lease SampleLease(std::string payload, std::optional<std::string> key) {
  core::Task t;
  t.spec.task_id = "t1";
  t.spec.task_type = "order.close";
  t.spec.queue = "orders";
  t.spec.payload_version = 3;
  t.spec.payload = std::move(payload);
  t.spec.schedule_time = 1'700'000'000'123;
  t.spec.timeout_ms = 30'000;
  t.spec.max_retries = 5;
  t.spec.priority = 900;
  t.spec.trace_id = "tr \"1\"";
  t.spec.idempotency_key = std::move(key);
  t.retry_count = 2;
  t.attempts = 3;
  return store::Lease{"l1-2a", 7, 1'700'000'030'456, std::move(t)};
}

// The text must say exactly what the value form (LeaseJson) says, whatever the task holds.
TEST(LeaseBodyTest, SaysWhatLeaseJsonSays) {
  std::vector<store::Lease> leases = {
      SampleLease(R"({"order_id":7,"items":[{"sku":"A\u00e9","qty":2.5}],"ok":true,"n":null})",
                  std::nullopt),
      SampleLease(R"({"a":1})", std::string("key\n\t\x01\"\\/é")),
      SampleLease("not json {", std::nullopt),  // stored text that does not parse stays a string
      SampleLease(R"({"a":1} trailing)", std::nullopt),
  };
  boost::json::object expected;
  boost::json::array& out =
      expected.emplace("leases", boost::json::array()).first->value().get_array();
  for (const store::Lease& lease : leases) out.push_back(LeaseJson(lease));
  EXPECT_EQ(boost::json::parse(LeasesBody(leases)), boost::json::value(expected));
  EXPECT_EQ(boost::json::parse(LeasesBody({})), boost::json::parse(R"({"leases":[]})"));
}

// One result per ack, in order: succeeded, or the error as every other answer shows it.
TEST(LeaseBodyTest, AckResultsNameEachLease) {
  std::vector<AckItem> items = {{"l1", std::nullopt}, {"l\"2", std::nullopt}};
  std::vector<core::Result<store::Unit>> acked = {
      store::Unit{}, core::MakeError(core::ErrorCode::kLeaseLost, "lease expired")};
  boost::json::object lost{{"lease_id", "l\"2"}};
  lost["error"] = ErrorObject(acked[1].error());
  boost::json::value expected = {
      {"results",
       boost::json::array{boost::json::object{{"lease_id", "l1"}, {"status", "succeeded"}}, lost}}};
  EXPECT_EQ(boost::json::parse(AckResultsBody(items, acked)), expected);
}

TEST(LeaseBodyTest, EscapesStringsAsTheSerializerDoes) {
  std::string all;
  for (int c = 1; c < 0x80; ++c) all += static_cast<char>(c);
  all += "é€😀";
  std::string text;
  AppendJsonString(text, all);
  EXPECT_EQ(text, boost::json::serialize(boost::json::string(all)));
}

TEST(LeaseBodyTest, KnowsJsonTextFromOtherText) {
  EXPECT_TRUE(IsJsonText(R"({"a":[1,2,{"b":null}]})"));
  EXPECT_TRUE(IsJsonText(" {} "));
  EXPECT_FALSE(IsJsonText(R"({"a":1)"));
  EXPECT_FALSE(IsJsonText(R"({"a":1} {})"));
  EXPECT_FALSE(IsJsonText(""));
}

}  // namespace
}  // namespace madeira::api
