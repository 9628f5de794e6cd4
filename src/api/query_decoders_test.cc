#include "api/query_decoders.h"

#include <gtest/gtest.h>

namespace madeira::api {
namespace {

using core::ErrorCode;

template <class R>
void ExpectError(const R& r, ErrorCode code, std::string_view field) {
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(core::ErrorCodeName(r.error().code), core::ErrorCodeName(code)) << r.error().message;
  EXPECT_EQ(r.error().field, field);
}

TEST(DecodeSearchQueryTest, ReadsEveryParameter) {
  auto q = DecodeSearchQuery({{"status", "dead"},
                              {"queue", "orders"},
                              {"task_type", "order.close"},
                              {"trace_id", "t-1"},
                              {"limit", "20"},
                              {"cursor", EncodeCursor(42)}});
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_EQ(q->status, core::TaskStatus::kDead);
  EXPECT_EQ(q->queue, "orders");
  EXPECT_EQ(q->task_type, "order.close");
  EXPECT_EQ(q->trace_id, "t-1");
  EXPECT_EQ(q->limit, 20);
  EXPECT_EQ(q->cursor, 42);
  auto d = DecodeSearchQuery({});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->limit, 50);
}

TEST(DecodeSearchQueryTest, RejectsEachBadParameter) {
  ExpectError(DecodeSearchQuery({{"status", "sleeping"}}), ErrorCode::kInvalidField, "status");
  ExpectError(DecodeSearchQuery({{"limit", "0"}}), ErrorCode::kInvalidField, "limit");
  ExpectError(DecodeSearchQuery({{"limit", "1001"}}), ErrorCode::kInvalidField, "limit");
  ExpectError(DecodeSearchQuery({{"limit", "5x"}}), ErrorCode::kInvalidField, "limit");
  ExpectError(DecodeSearchQuery({{"cursor", "garbage"}}), ErrorCode::kInvalidField, "cursor");
  ExpectError(DecodeSearchQuery({{"queue", "Not Valid"}}), ErrorCode::kInvalidField, "queue");
  ExpectError(DecodeSearchQuery({{"page", "2"}}), ErrorCode::kUnknownField, "page");
  ExpectError(DecodeSearchQuery({{"limit", "1"}, {"limit", "2"}}), ErrorCode::kInvalidField,
              "limit");
}

TEST(DecodeDeadQueryTest, IsAlwaysDeadAndReadsSince) {
  auto q = DecodeDeadQuery({{"since", "2025-09-11T04:45:00Z"}, {"queue", "orders"}});
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_EQ(q->status, core::TaskStatus::kDead);
  EXPECT_TRUE(q->dead_since.has_value());
  ExpectError(DecodeDeadQuery({{"since", "2025-09-11T04:45:00"}}), ErrorCode::kInvalidField,
              "since");
  ExpectError(DecodeDeadQuery({{"status", "dead"}}), ErrorCode::kUnknownField, "status");
}

TEST(DecodeSchemaKeyTest, ValidatesTypeAndVersion) {
  auto k = DecodeSchemaKey("order.close", "3");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->version, 3);
  ExpectError(DecodeSchemaKey("Order", "1"), ErrorCode::kInvalidField, "task_type");
  ExpectError(DecodeSchemaKey("order", "0"), ErrorCode::kInvalidField, "version");
  ExpectError(DecodeSchemaKey("order", "v1"), ErrorCode::kInvalidField, "version");
}

TEST(CursorTest, RoundTripsAndRejectsGarbage) {
  EXPECT_EQ(DecodeCursor(EncodeCursor(123456789)), 123456789);
  EXPECT_FALSE(DecodeCursor(""));
  EXPECT_FALSE(DecodeCursor("c"));
  EXPECT_FALSE(DecodeCursor("c-1"));
  EXPECT_FALSE(DecodeCursor("123"));
}

}  // namespace
}  // namespace madeira::api
