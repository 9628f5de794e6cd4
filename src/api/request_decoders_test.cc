#include "api/request_decoders.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace madeira::api {
namespace {

using core::ErrorCode;

// Asserts a decoder result failed with `code`, blaming `field`.
template <class R>
void ExpectError(const R& r, ErrorCode code, std::string_view field = {}) {
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(core::ErrorCodeName(r.error().code), core::ErrorCodeName(code)) << r.error().message;
  EXPECT_EQ(r.error().field, field) << r.error().message;
}

TEST(ParseObjectBodyTest, RejectsMalformedAndNonObjects) {
  ExpectError(ParseObjectBody("{", false), ErrorCode::kInvalidJson);
  ExpectError(ParseObjectBody("[1]", false), ErrorCode::kInvalidJson);
  ExpectError(ParseObjectBody("", false), ErrorCode::kInvalidJson);
  EXPECT_TRUE(ParseObjectBody("", true));
  EXPECT_TRUE(ParseObjectBody("{}", false));
}

TEST(DecodeSubmitTest, PassesTheEnvelopeThrough) {
  auto r = DecodeSubmit(R"({"task_type":"a","payload":{}})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->at("task_type"), "a");
  ExpectError(DecodeSubmit("17"), ErrorCode::kInvalidJson);
}

TEST(DecodeSubmitBatchTest, TakesOneToAThousandTasks) {
  auto r = DecodeSubmitBatch(R"({"tasks":[{"a":1},2]})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->size(), 2u);  // items are judged one by one later
  ExpectError(DecodeSubmitBatch(R"({"tasks":[]})"), ErrorCode::kInvalidField, "tasks");
  ExpectError(DecodeSubmitBatch(R"({})"), ErrorCode::kMissingField, "tasks");
  ExpectError(DecodeSubmitBatch(R"({"tasks":{}})"), ErrorCode::kInvalidField, "tasks");
  ExpectError(DecodeSubmitBatch(R"({"tasks":[],"x":1})"), ErrorCode::kUnknownField, "x");
  std::string big = R"({"tasks":[)";
  for (int i = 0; i < 1001; ++i) big += i ? ",{}" : "{}";
  big += "]}";
  ExpectError(DecodeSubmitBatch(big), ErrorCode::kBatchTooLarge, "tasks");
}

TEST(DecodeLeaseTest, ReadsEveryFieldAndDefaults) {
  auto r = DecodeLease(
      R"({"worker_id":"w1","queues":["orders","mail"],"task_types":{"order.close":[1,2]},)"
      R"("max_tasks":10,"wait_ms":5000,"lease_ms":60000})");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->worker_id, "w1");
  EXPECT_EQ(r->queues, (std::vector<std::string>{"orders", "mail"}));
  EXPECT_EQ(r->task_types.at("order.close"), (std::vector<int>{1, 2}));
  EXPECT_EQ(r->max_tasks, 10);
  EXPECT_EQ(r->wait_ms, 5000);
  EXPECT_EQ(r->lease_ms, 60000);

  auto d = DecodeLease(R"({"worker_id":"w1","queues":["q"]})");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->max_tasks, 1);
  EXPECT_EQ(d->wait_ms, 0);
  EXPECT_FALSE(d->lease_ms);
  EXPECT_TRUE(d->task_types.empty());
}

TEST(DecodeLeaseTest, RejectsEachBadField) {
  ExpectError(DecodeLease(R"({"queues":["q"]})"), ErrorCode::kMissingField, "worker_id");
  ExpectError(DecodeLease(R"({"worker_id":7,"queues":["q"]})"), ErrorCode::kInvalidField,
              "worker_id");
  ExpectError(DecodeLease(R"({"worker_id":"w\u0000","queues":["q"]})"), ErrorCode::kInvalidField,
              "worker_id");
  ExpectError(DecodeLease(R"({"worker_id":"w"})"), ErrorCode::kMissingField, "queues");
  ExpectError(DecodeLease(R"({"worker_id":"w","queues":[]})"), ErrorCode::kInvalidField, "queues");
  ExpectError(DecodeLease(R"({"worker_id":"w","queues":["Bad Name"]})"), ErrorCode::kInvalidField,
              "queues[0]");
  ExpectError(DecodeLease(R"({"worker_id":"w","queues":["q"],"task_types":{"t":[0]}})"),
              ErrorCode::kInvalidField, "task_types.t");
  ExpectError(DecodeLease(R"({"worker_id":"w","queues":["q"],"task_types":{"t":"1"}})"),
              ErrorCode::kInvalidField, "task_types.t");
  ExpectError(DecodeLease(R"({"worker_id":"w","queues":["q"],"max_tasks":0})"),
              ErrorCode::kInvalidField, "max_tasks");
  ExpectError(DecodeLease(R"({"worker_id":"w","queues":["q"],"max_tasks":101})"),
              ErrorCode::kInvalidField, "max_tasks");
  ExpectError(DecodeLease(R"({"worker_id":"w","queues":["q"],"max_tasks":1.5})"),
              ErrorCode::kInvalidField, "max_tasks");
  ExpectError(DecodeLease(R"({"worker_id":"w","queues":["q"],"wait_ms":30001})"),
              ErrorCode::kInvalidField, "wait_ms");
  ExpectError(DecodeLease(R"({"worker_id":"w","queues":["q"],"lease_ms":99})"),
              ErrorCode::kInvalidField, "lease_ms");
  ExpectError(DecodeLease(R"({"worker_id":"w","queues":["q"],"extra":1})"),
              ErrorCode::kUnknownField, "extra");
}

TEST(DecodeAckTest, ResultIsOptionalAnyJson) {
  auto none = DecodeAck("");
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
  auto some = DecodeAck(R"({"result":{"ok":true}})");
  ASSERT_TRUE(some);
  EXPECT_EQ(**some, R"({"ok":true})");
  ExpectError(DecodeAck(R"({"results":1})"), ErrorCode::kUnknownField, "results");
}

TEST(DecodeFailTest, ReadsErrorRetryAndDelay) {
  auto r =
      DecodeFail(R"({"error":{"type":"Timeout","message":"slow","stack":"at x"},"retry":"fast",)"
                 R"("retry_after_ms":500})");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(boost::json::parse(r->error),
            boost::json::parse(R"({"type":"Timeout","message":"slow","stack":"at x"})"));
  EXPECT_EQ(r->retry, core::RetryMode::kFast);
  EXPECT_EQ(r->retry_after_ms, 500);
  auto d = DecodeFail(R"({"error":{"type":"E","message":"m"}})");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->retry, core::RetryMode::kAuto);
}

TEST(DecodeFailTest, RejectsEachBadField) {
  ExpectError(DecodeFail(R"({})"), ErrorCode::kMissingField, "error");
  ExpectError(DecodeFail(R"({"error":"boom"})"), ErrorCode::kInvalidField, "error");
  ExpectError(DecodeFail(R"({"error":{"message":"m"}})"), ErrorCode::kMissingField, "error.type");
  ExpectError(DecodeFail(R"({"error":{"type":"E","message":"m","code":1}})"),
              ErrorCode::kUnknownField, "error.code");
  ExpectError(DecodeFail(R"({"error":{"type":"E","message":"m"},"retry":"later"})"),
              ErrorCode::kInvalidField, "retry");
  ExpectError(DecodeFail(R"({"error":{"type":"E","message":"m"},"retry_after_ms":-1})"),
              ErrorCode::kInvalidField, "retry_after_ms");
}

TEST(DecodeExtendTest, NeedsExtendMsInRange) {
  auto r = DecodeExtend(R"({"extend_ms":30000})");
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, 30000);
  ExpectError(DecodeExtend(R"({})"), ErrorCode::kMissingField, "extend_ms");
  ExpectError(DecodeExtend(R"({"extend_ms":0})"), ErrorCode::kInvalidField, "extend_ms");
  ExpectError(DecodeExtend(R"({"extend_ms":"5"})"), ErrorCode::kInvalidField, "extend_ms");
}

TEST(DecodeAckBatchTest, ReadsItemsAndNamesTheBadOne) {
  auto r = DecodeAckBatch(R"({"acks":[{"lease_id":"a"},{"lease_id":"b","result":3}]})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[1].lease_id, "b");
  EXPECT_EQ((*r)[1].result, "3");
  ExpectError(DecodeAckBatch(R"({"acks":[]})"), ErrorCode::kInvalidField, "acks");
  ExpectError(DecodeAckBatch(R"({"acks":[{"lease_id":"a"},{}]})"), ErrorCode::kMissingField,
              "acks[1].lease_id");
  ExpectError(DecodeAckBatch(R"({"acks":[1]})"), ErrorCode::kInvalidField, "acks[0]");
}

TEST(DecodeHeartbeatTest, ChecksKnownFieldsAndToleratesExtras) {
  auto r = DecodeHeartbeat(
      R"({"worker_id":"w","language":"go","sdk_version":"1.2","queues":["q"],"pid":7})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->language, "go");
  EXPECT_EQ(r->queues, std::vector<std::string>{"q"});
  ExpectError(DecodeHeartbeat(R"({"language":"go"})"), ErrorCode::kMissingField, "worker_id");
  ExpectError(DecodeHeartbeat(R"({"worker_id":"w","queues":[1]})"), ErrorCode::kInvalidField,
              "queues[0]");
}

TEST(DecodeEmptyTest, TakesNothingOrAnEmptyObject) {
  EXPECT_TRUE(DecodeEmpty(""));
  EXPECT_TRUE(DecodeEmpty("{}"));
  ExpectError(DecodeEmpty(R"({"reason":"x"})"), ErrorCode::kUnknownField, "reason");
}

TEST(DecodeReplayTest, ReadsEdits) {
  auto r = DecodeReplay(R"({"payload":{"a":1},"payload_version":2,"max_retries":5})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->payload, R"({"a":1})");
  EXPECT_EQ(r->payload_version, 2);
  EXPECT_EQ(r->max_retries, 5);
  EXPECT_TRUE(DecodeReplay(""));
  ExpectError(DecodeReplay(R"({"payload":[1]})"), ErrorCode::kInvalidField, "payload");
  ExpectError(DecodeReplay(R"({"max_retries":101})"), ErrorCode::kInvalidField, "max_retries");
  ExpectError(DecodeReplay(R"({"retry_count":0})"), ErrorCode::kUnknownField, "retry_count");
}

TEST(DecodeDeadBulkTest, TakesIdsOrAFilter) {
  auto ids = DecodeDeadBulk(R"({"task_ids":["a","b"],"max_retries":1})", true);
  ASSERT_TRUE(ids) << ids.error().message;
  EXPECT_EQ(ids->selector.task_ids, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(ids->edits.max_retries, 1);
  auto filter =
      DecodeDeadBulk(R"({"filter":{"queue":"orders","since":"2025-09-11T12:45:00+08:00"}})", false);
  ASSERT_TRUE(filter) << filter.error().message;
  EXPECT_EQ(filter->selector.filter.queue, "orders");
  EXPECT_TRUE(filter->selector.filter.since.has_value());
}

TEST(DecodeDeadBulkTest, RejectsEachBadShape) {
  ExpectError(DecodeDeadBulk(R"({})", false), ErrorCode::kMissingField, "task_ids");
  ExpectError(DecodeDeadBulk(R"({"task_ids":["a"],"filter":{}})", false), ErrorCode::kInvalidField,
              "filter");
  ExpectError(DecodeDeadBulk(R"({"task_ids":[]})", false), ErrorCode::kInvalidField, "task_ids");
  ExpectError(DecodeDeadBulk(R"({"task_ids":["a b"]})", false), ErrorCode::kInvalidField,
              "task_ids[0]");
  ExpectError(DecodeDeadBulk(R"({"task_ids":["a"],"max_retries":1})", false),
              ErrorCode::kUnknownField, "max_retries");
  ExpectError(DecodeDeadBulk(R"({"filter":{"since":"yesterday"}})", false),
              ErrorCode::kInvalidField, "filter.since");
  ExpectError(DecodeDeadBulk(R"({"filter":{"state":"dead"}})", false), ErrorCode::kUnknownField,
              "filter.state");
}

}  // namespace
}  // namespace madeira::api
