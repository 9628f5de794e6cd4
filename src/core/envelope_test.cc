#include "core/envelope.h"

#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>
#include <string>

#include "core/digest.h"
#include "core/time.h"

namespace madeira::core {
namespace {

namespace json = boost::json;

constexpr Millis kNow = 1'757'565'900'000;  // 2025-09-11T04:45:00Z

// The minimal valid envelope, with `extra` members spliced in (e.g. R"("priority":5)").
std::string Body(const std::string& extra = "", const std::string& payload = R"({"a":1})") {
  std::string body =
      R"({"task_type":"order.close_timeout","payload_version":1,"payload":)" + payload;
  if (!extra.empty()) body += "," + extra;
  return body + "}";
}

Result<TaskSpec> Parse(const std::string& text, const EnvelopeLimits& limits = {}) {
  auto value = ParseJson(text);
  EXPECT_TRUE(value.has_value()) << text;
  if (!value) return value.error();
  SequenceRandom random({0x0123'4567'89ab'cdefULL, 0xfedc'ba98'7654'3210ULL});
  return ParseEnvelope(*value, limits, kNow, random);
}

TaskSpec Accepted(const std::string& text, const EnvelopeLimits& limits = {}) {
  auto r = Parse(text, limits);
  EXPECT_TRUE(r.has_value()) << text << " -> " << (r ? "" : r.error().message);
  return r ? *r : TaskSpec{};
}

void ExpectError(const std::string& text, ErrorCode code, const std::string& field,
                 const EnvelopeLimits& limits = {}) {
  auto r = Parse(text, limits);
  ASSERT_FALSE(r.has_value()) << text;
  EXPECT_EQ(ErrorCodeName(r.error().code), ErrorCodeName(code)) << text;
  EXPECT_EQ(r.error().field, field) << text;
  EXPECT_FALSE(r.error().message.empty());
}

std::string PayloadOfSize(size_t bytes) {
  // {"s":"xxx..."} is 8 bytes of framing around the string.
  return R"({"s":")" + std::string(bytes - 8, 'x') + R"("})";
}

TEST(ParseJson, RejectsMalformedText) {
  for (const char* bad :
       {"", "{", "{\"a\":}", "{} {}", "{'a':1}", "[1,]", "{\"a\":1,}", "/*c*/{}", "\"\xff\""}) {
    auto r = ParseJson(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidJson);
  }
}

// A number beyond a double would be stored and answered as `Infinity` (not JSON): refused.
TEST(ParseJson, RefusesNumbersBeyondADouble) {
  for (const char* bad : {R"({"a":1e400})", R"({"a":[1,{"b":-1e400}]})", "1e309"}) {
    auto r = ParseJson(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidJson);
    EXPECT_NE(r.error().message.find("double"), std::string::npos) << r.error().message;
  }
  // The largest doubles, the smallest (underflow to 0 is a number), and integers beyond 2^64
  // (parsed as doubles) are numbers still.
  for (const char* good : {R"({"a":1.7976931348623157e308})", R"({"a":-1.7976931348623157e308})",
                           R"({"a":1e-400})", R"({"a":100000000000000000000000})"}) {
    EXPECT_TRUE(ParseJson(good)) << good;
  }
}

TEST(ParseJson, BoundsNesting) {
  EXPECT_TRUE(ParseJson(std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']')));
  auto r = ParseJson(std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']'));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidJson);
  EXPECT_FALSE(ParseJson(std::string(100'000, '[')));
}

TEST(Envelope, MinimalBodyGetsEveryDefault) {
  const TaskSpec spec = Accepted(Body());
  EXPECT_EQ(spec.task_type, "order.close_timeout");
  EXPECT_EQ(spec.queue, "default");
  EXPECT_EQ(spec.payload_version, 1);
  EXPECT_EQ(spec.payload, R"({"a":1})");
  EXPECT_EQ(spec.schedule_time, kNow);
  EXPECT_EQ(spec.timeout_ms, 30'000);
  EXPECT_EQ(spec.max_retries, 3);
  EXPECT_EQ(spec.priority, 100);
  EXPECT_FALSE(spec.idempotency_key.has_value());
  EXPECT_EQ(spec.task_id.size(), 36u);
  EXPECT_EQ(spec.task_id.substr(0, 14), "01993717-54e0-");  // UUIDv7 of kNow
  EXPECT_TRUE(spec.id_made_here);
  EXPECT_EQ(spec.trace_id.size(), 32u);
  EXPECT_EQ(spec.content_hash.size(), 64u);
}

TEST(Envelope, SpecExampleIsAcceptedAsSent) {
  const TaskSpec spec = Accepted(R"({
    "task_id": "b3e1d5a8-7f20-4f1b-ae7d-1234567890ab",
    "task_type": "order.close_timeout", "queue": "orders", "payload_version": 1,
    "payload": { "order_id": 202509110001, "store_id": "S10086" },
    "schedule_time": "2025-09-11T12:46:00+08:00", "timeout_ms": 30000, "max_retries": 3,
    "retry_count": 0, "priority": 100, "trace_id": "trace-7a8b9c",
    "idempotency_key": "order.close:202509110001"})");
  EXPECT_EQ(spec.task_id, "b3e1d5a8-7f20-4f1b-ae7d-1234567890ab");
  EXPECT_FALSE(spec.id_made_here);
  EXPECT_EQ(spec.queue, "orders");
  EXPECT_EQ(spec.payload, R"({"order_id":202509110001,"store_id":"S10086"})");
  EXPECT_EQ(spec.schedule_time, kNow + 60'000);
  EXPECT_EQ(spec.trace_id, "trace-7a8b9c");
  EXPECT_EQ(spec.idempotency_key, "order.close:202509110001");
}

TEST(Envelope, EnvelopeMustBeAnObject) {
  ExpectError("[]", ErrorCode::kInvalidJson, "");
  ExpectError("\"task\"", ErrorCode::kInvalidJson, "");
  ExpectError("null", ErrorCode::kInvalidJson, "");
}

TEST(Envelope, UnknownTopLevelFieldIsNamed) {
  ExpectError(Body(R"("prority":5)"), ErrorCode::kUnknownField, "prority");
  ExpectError(Body(R"("status":"pending")"), ErrorCode::kUnknownField, "status");
  // Unknown names inside the payload are the payload's business.
  Accepted(Body("", R"({"prority":5})"));
}

TEST(Envelope, RequiredFieldsAreNamedWhenMissing) {
  ExpectError(R"({"payload_version":1,"payload":{}})", ErrorCode::kMissingField, "task_type");
  ExpectError(R"({"task_type":"t","payload":{}})", ErrorCode::kMissingField, "payload_version");
  ExpectError(R"({"task_type":"t","payload_version":1})", ErrorCode::kMissingField, "payload");
}

TEST(Envelope, TaskIdLengthAndCharacters) {
  Accepted(Body(R"("task_id":"a")"));
  Accepted(Body(R"("task_id":"Order.42_x:y-z")"));
  Accepted(Body(R"("task_id":")" + std::string(128, 'a') + "\""));
  ExpectError(Body(R"("task_id":")" + std::string(129, 'a') + "\""), ErrorCode::kInvalidField,
              "task_id");
  for (const char* bad : {R"("")", R"("a b")", R"("a/b")", R"("é")", R"("a\nb")", "42", "null"}) {
    ExpectError(Body(std::string(R"("task_id":)") + bad), ErrorCode::kInvalidField, "task_id");
  }
}

TEST(Envelope, TaskTypePattern) {
  auto with_type = [](const std::string& type) {
    return R"({"task_type":)" + type + R"(,"payload_version":1,"payload":{}})";
  };
  Accepted(with_type(R"("a")"));
  Accepted(with_type(R"("0order_close.v2-x")"));
  Accepted(with_type("\"a" + std::string(127, 'b') + "\""));
  for (const std::string& bad :
       {std::string(R"("")"), std::string(R"("Order")"), std::string(R"("_order")"),
        std::string(R"(".order")"), std::string(R"("order close")"), std::string(R"("a:b")"),
        "\"a" + std::string(128, 'b') + "\"", std::string("1"), std::string("null")}) {
    ExpectError(with_type(bad), ErrorCode::kInvalidField, "task_type");
  }
}

TEST(Envelope, QueuePattern) {
  EXPECT_EQ(Accepted(Body(R"("queue":"orders-eu.1")")).queue, "orders-eu.1");
  ExpectError(Body(R"("queue":"Orders")"), ErrorCode::kInvalidField, "queue");
  ExpectError(Body(R"("queue":"")"), ErrorCode::kInvalidField, "queue");
  ExpectError(Body(R"("queue":"webhook:ep1")"), ErrorCode::kInvalidField, "queue");
  ExpectError(Body(R"("queue":["orders"])"), ErrorCode::kInvalidField, "queue");
}

TEST(Envelope, PayloadVersionIsAPositiveInt32) {
  auto with_version = [](const std::string& v) {
    return R"({"task_type":"t","payload_version":)" + v + R"(,"payload":{}})";
  };
  EXPECT_EQ(Accepted(with_version("7")).payload_version, 7);
  EXPECT_EQ(Accepted(with_version("2147483647")).payload_version, 2147483647);
  for (const char* bad : {"0", "-1", "1.5", "1.0", "1e0", "\"1\"", "true", "null", "2147483648",
                          "18446744073709551615", "[1]"}) {
    ExpectError(with_version(bad), ErrorCode::kInvalidField, "payload_version");
  }
}

TEST(Envelope, PayloadMustBeAnObject) {
  for (const char* bad : {"[]", "\"x\"", "1", "null", "true"}) {
    ExpectError(Body("", bad), ErrorCode::kInvalidField, "payload");
  }
  EXPECT_EQ(Accepted(Body("", "{}")).payload, "{}");
}

TEST(Envelope, PayloadDepthCountsThePayloadAsOne) {
  Accepted(Body("", R"({"a":{"b":{"c":{"d":{"e":1}}}}})"));
  ExpectError(Body("", R"({"a":{"b":{"c":{"d":{"e":{}}}}}})"), ErrorCode::kPayloadTooDeep,
              "payload");
  // Arrays nest too, so they cannot be used to slip past the limit.
  Accepted(Body("", R"({"a":[[[{}]]]})"));
  ExpectError(Body("", R"({"a":[[[[[1]]]]]})"), ErrorCode::kPayloadTooDeep, "payload");
  EnvelopeLimits deeper;
  deeper.max_depth = 6;
  Accepted(Body("", R"({"a":{"b":{"c":{"d":{"e":{}}}}}})"), deeper);
}

TEST(Envelope, PayloadSizeLimitIsInclusive) {
  EXPECT_EQ(Accepted(Body("", PayloadOfSize(65536))).payload.size(), 65536u);
  ExpectError(Body("", PayloadOfSize(65537)), ErrorCode::kPayloadTooLarge, "payload");
  EnvelopeLimits small;
  small.max_payload_bytes = 100;
  Accepted(Body("", PayloadOfSize(100)), small);
  ExpectError(Body("", PayloadOfSize(101)), ErrorCode::kPayloadTooLarge, "payload", small);
}

TEST(Envelope, PayloadIsStoredAsBoostJsonSerialisesIt) {
  // Escapes at every offset of the eight-byte scan, long plain text, UTF-8, 0x7f, more members
  // than the writer keeps on its stack, and every kind of scalar, in the order sent.
  std::string many;
  for (int i = 20; i > 0; --i)
    many += R"("m)" + std::to_string(i) + R"(":)" + std::to_string(i) + ",";
  const std::string payload =
      "{" + many +
      R"("q":"0123456\"89abcdef","r":"0123456789abcde\\","c":"012345678\u001f",)"
      R"("long":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx","u":"é€\u007f",)"
      R"("z":[1,-2,2.5,18446744073709551615,true,false,null,{"b":[],"a":{}}],"e":""})";
  EXPECT_EQ(Accepted(Body("", payload)).payload, json::serialize(*ParseJson(payload)));
}

TEST(Envelope, PayloadSizeIsMeasuredCompact) {
  // Whitespace the producer sent does not count against the limit.
  EnvelopeLimits small;
  small.max_payload_bytes = 7;
  EXPECT_EQ(Accepted(Body("", "{ \"a\" :  1 }"), small).payload, R"({"a":1})");
}

TEST(Envelope, ScheduleTimeNeedsAZoneOffset) {
  ExpectError(Body(R"("schedule_time":"2025-09-11T12:45:00")"), ErrorCode::kInvalidScheduleTime,
              "schedule_time");
  ExpectError(Body(R"("schedule_time":"2025-09-11")"), ErrorCode::kInvalidScheduleTime,
              "schedule_time");
  ExpectError(Body(R"("schedule_time":"2025-02-30T00:00:00Z")"), ErrorCode::kInvalidScheduleTime,
              "schedule_time");
}

TEST(Envelope, NumericScheduleTimeIsRefused) {
  ExpectError(Body(R"("schedule_time":1757565900000)"), ErrorCode::kInvalidScheduleTime,
              "schedule_time");
  ExpectError(Body(R"("schedule_time":1757565900.5)"), ErrorCode::kInvalidScheduleTime,
              "schedule_time");
  ExpectError(Body(R"("schedule_time":null)"), ErrorCode::kInvalidScheduleTime, "schedule_time");
}

TEST(Envelope, ScheduleTimeUpToMaxDelayAhead) {
  const Millis max_delay = EnvelopeLimits{}.max_delay;
  const std::string at_limit = FormatRfc3339(kNow + max_delay);
  EXPECT_EQ(Accepted(Body(R"("schedule_time":")" + at_limit + "\"")).schedule_time,
            kNow + max_delay);
  const std::string past_limit = FormatRfc3339(kNow + max_delay + 1);
  ExpectError(Body(R"("schedule_time":")" + past_limit + "\""), ErrorCode::kScheduleTooFar,
              "schedule_time");
}

TEST(Envelope, PastScheduleTimeMeansNow) {
  EXPECT_EQ(Accepted(Body(R"("schedule_time":"2020-01-01T00:00:00Z")")).schedule_time, kNow);
}

TEST(Envelope, TimeoutRange) {
  EXPECT_EQ(Accepted(Body(R"("timeout_ms":100)")).timeout_ms, 100);
  EXPECT_EQ(Accepted(Body(R"("timeout_ms":86400000)")).timeout_ms, 86'400'000);
  for (const char* bad : {"99", "86400001", "0", "-1", "30000.0", "\"30000\""}) {
    ExpectError(Body(std::string(R"("timeout_ms":)") + bad), ErrorCode::kInvalidField,
                "timeout_ms");
  }
}

TEST(Envelope, MaxRetriesRange) {
  EXPECT_EQ(Accepted(Body(R"("max_retries":0)")).max_retries, 0);
  EXPECT_EQ(Accepted(Body(R"("max_retries":100)")).max_retries, 100);
  for (const char* bad : {"101", "-1", "3.0", "true"}) {
    ExpectError(Body(std::string(R"("max_retries":)") + bad), ErrorCode::kInvalidField,
                "max_retries");
  }
}

TEST(Envelope, RetryCountIsServerOwned) {
  Accepted(Body(R"("retry_count":0)"));
  for (const char* bad : {"1", "-1", "0.0", "\"0\"", "null"}) {
    ExpectError(Body(std::string(R"("retry_count":)") + bad), ErrorCode::kInvalidField,
                "retry_count");
  }
}

TEST(Envelope, PriorityRange) {
  EXPECT_EQ(Accepted(Body(R"("priority":0)")).priority, 0);
  EXPECT_EQ(Accepted(Body(R"("priority":1000)")).priority, 1000);
  for (const char* bad : {"1001", "-1", "3.0", "\"5\"", "9223372036854775808"}) {
    ExpectError(Body(std::string(R"("priority":)") + bad), ErrorCode::kInvalidField, "priority");
  }
}

TEST(Envelope, TraceIdIsKeptOrMade) {
  EXPECT_EQ(Accepted(Body(R"("trace_id":"00-4bf92f3577b34da6-01")")).trace_id,
            "00-4bf92f3577b34da6-01");
  // A made trace id is 32 hex chars led by the submit time, so the trace index appends.
  const std::string made = Accepted(Body()).trace_id;
  EXPECT_EQ(made.size(), 32u);
  EXPECT_EQ(made.substr(0, 12), "0199371754e0");  // kNow in hex
  EXPECT_EQ(made.find_first_not_of("0123456789abcdef"), std::string::npos);
  Accepted(Body(R"("trace_id":")" + std::string(128, 't') + "\""));
  for (const std::string& bad :
       {std::string(R"("")"), "\"" + std::string(129, 't') + "\"", std::string(R"("a\nb")"),
        std::string(R"("a b")"), std::string(R"("é")"), std::string("7")}) {
    ExpectError(Body(R"("trace_id":)" + bad), ErrorCode::kInvalidField, "trace_id");
  }
}

TEST(Envelope, IdempotencyKeyLength) {
  Accepted(Body(R"("idempotency_key":")" + std::string(200, 'k') + "\""));
  // 200 characters, 400 bytes: the limit is on characters.
  std::string two_byte_chars;
  for (int i = 0; i < 200; ++i) two_byte_chars += "é";
  Accepted(Body(R"("idempotency_key":")" + two_byte_chars + "\""));
  ExpectError(Body(R"("idempotency_key":")" + std::string(201, 'k') + "\""),
              ErrorCode::kInvalidField, "idempotency_key");
  ExpectError(Body(R"("idempotency_key":"")"), ErrorCode::kInvalidField, "idempotency_key");
  ExpectError(Body(R"("idempotency_key":42)"), ErrorCode::kInvalidField, "idempotency_key");
  // No control characters: a NUL fits no PostgreSQL text column.
  for (const char* bad : {R"("k\u0000x")", R"("k\nx")", R"("\u007f")"}) {
    ExpectError(Body(std::string(R"("idempotency_key":)") + bad), ErrorCode::kInvalidField,
                "idempotency_key");
  }
  Accepted(Body(R"("idempotency_key":"order close: №42 \"α\"")"));
}

TEST(Envelope, TaskIdIsAUuidV7WhenAbsent) {
  EXPECT_TRUE(IsValidTaskId(Accepted(Body()).task_id));
  EXPECT_EQ(Accepted(Body()).task_id[14], '7');
}

TEST(ContentHash, IdenticalBodiesHashEqual) {
  EXPECT_EQ(Accepted(Body()).content_hash, Accepted(Body()).content_hash);
}

TEST(ContentHash, KeyOrderAndWhitespaceDoNotMatter) {
  const std::string a =
      R"({"task_type":"t","payload_version":1,"priority":5,"payload":{"x":1,"y":{"b":2,"a":1}}})";
  const std::string b =
      R"({ "payload": {"y": {"a": 1, "b": 2}, "x": 1}, "priority": 5, "payload_version": 1,)"
      R"( "task_type": "t" })";
  EXPECT_EQ(Accepted(a).content_hash, Accepted(b).content_hash);
}

TEST(ContentHash, DiffersWhenContentDiffers) {
  const std::string base = Accepted(Body()).content_hash;
  EXPECT_NE(Accepted(Body("", R"({"a":2})")).content_hash, base);
  EXPECT_NE(Accepted(Body(R"("priority":5)")).content_hash, base);
  EXPECT_NE(Accepted(Body(R"("queue":"other")")).content_hash, base);
  EXPECT_NE(Accepted(Body(R"("schedule_time":"2025-09-12T00:00:00Z")")).content_hash, base);
}

TEST(ContentHash, IgnoresWhatTheServerFillsIn) {
  // The made task_id/trace_id/schedule_time must not make a resubmit look different.
  auto hash_at = [](Millis now, uint64_t seed) {
    auto value = ParseJson(Body(R"("task_id":"fixed")"));
    SequenceRandom random({seed});
    return ParseEnvelope(*value, {}, now, random)->content_hash;
  };
  EXPECT_EQ(hash_at(kNow, 1), hash_at(kNow + 5'000, 2));
  EXPECT_EQ(Accepted(Body(R"("retry_count":0)")).content_hash, Accepted(Body()).content_hash);
}

TEST(ContentHash, SameInstantInAnotherZoneIsTheSameContent) {
  EXPECT_EQ(Accepted(Body(R"("schedule_time":"2025-09-11T12:46:00+08:00")")).content_hash,
            Accepted(Body(R"("schedule_time":"2025-09-11T04:46:00.000Z")")).content_hash);
}

TEST(ContentHash, IsTheHashOfTheCanonicalFormStoresHold) {
  // Stored tasks keep this hash, so a resubmit after an upgrade must still match it: the sent
  // object without retry_count, schedule_time normalised to UTC, canonical JSON, SHA-256.
  const std::string body = R"({"task_type":"t","retry_count":0,"payload_version":1,"task_id":"k",)"
                           R"("schedule_time":"2025-09-11T12:46:00+08:00",)"
                           R"("payload":{"z":[1,{"b":"\u00e9","a":2.5}],"a":null}})";
  const std::string sent = R"({"task_type":"t","payload_version":1,"task_id":"k",)"
                           R"("schedule_time":"2025-09-11T04:46:00.000Z",)"
                           R"("payload":{"z":[1,{"b":"\u00e9","a":2.5}],"a":null}})";
  const std::string canonical =
      R"({"payload":{"a":null,"z":[1,{"a":2.5E0,"b":"é"}]},"payload_version":1,)"
      R"("schedule_time":"2025-09-11T04:46:00.000Z","task_id":"k","task_type":"t"})";
  EXPECT_EQ(CanonicalJson(*ParseJson(sent)), canonical);
  EXPECT_EQ(Accepted(body).content_hash, Sha256Hex(canonical));
}

TEST(CanonicalJson, SortsKeysAtEveryDepth) {
  auto v = ParseJson(R"({"b":[{"z":1,"a":"\n"}],"a":{"d":null,"c":true}})");
  EXPECT_EQ(CanonicalJson(*v), R"({"a":{"c":true,"d":null},"b":[{"a":"\n","z":1}]})");
}

TEST(CanonicalJson, WritesScalarsAsBoostJsonDoes) {
  auto v = ParseJson(R"({"u":18446744073709551615,"t":true,"n":-5,"k\"":"a\u0001\\","d":1.5})");
  EXPECT_EQ(CanonicalJson(*v),
            R"({"d":1.5E0,"k\"":"a\u0001\\","n":-5,"t":true,"u":18446744073709551615})");
  for (const auto& kv : v->as_object()) {
    EXPECT_EQ(CanonicalJson(kv.value()), json::serialize(kv.value())) << kv.key();
    EXPECT_EQ(CanonicalJson(json::value(kv.key())), json::serialize(kv.key()));
  }
}

TEST(JsonDepth, CountsObjectsAndArrays) {
  EXPECT_EQ(JsonDepth(*ParseJson("1")), 0);
  EXPECT_EQ(JsonDepth(*ParseJson("{}")), 1);
  EXPECT_EQ(JsonDepth(*ParseJson(R"({"a":{}})")), 2);
  EXPECT_EQ(JsonDepth(*ParseJson(R"({"a":1,"b":[{"c":[]}]})")), 4);
}

}  // namespace
}  // namespace madeira::core

namespace madeira::core {
namespace {

TEST(Envelope, FiltersMayNameWebhookQueuesThatSubmitsMayNot) {
  EXPECT_TRUE(IsFilterQueueName("orders"));
  EXPECT_TRUE(IsFilterQueueName("webhook:ep_01a22dc7835b2bc1e8759b14da6dc8bf"));
  EXPECT_TRUE(IsFilterQueueName("webhook:direct:shop"));
  EXPECT_FALSE(IsValidName("webhook:ep_1"));  // never a submittable queue
  EXPECT_FALSE(IsFilterQueueName("webhook:"));
  EXPECT_FALSE(IsFilterQueueName("webhook:ep 1"));
  EXPECT_FALSE(IsFilterQueueName("Orders"));
}

}  // namespace
}  // namespace madeira::core
