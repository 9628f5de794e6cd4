#include "delivery/payload_template.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace madeira::delivery {
namespace {

namespace json = boost::json;

json::object Event() {
  return MakeEventObject("evt_1", "payment.succeeded", "shop",
                         json::parse(R"({"order_id":42,"amount":12.5,"paid":true,
                                         "items":[{"sku":"a"},{"sku":"b"}],"note":null})"),
                         "trace-1");
}

TEST(PayloadTemplateTest, NoTemplateSendsThePayloadAsIs) {
  EXPECT_EQ(RenderBody(std::nullopt, Event()), Event().at("payload"));
}

TEST(PayloadTemplateTest, PlaceholdersKeepTheirType) {
  json::value tmpl = json::parse(R"({"id":"{{/payload/order_id}}","amount":"{{/payload/amount}}",
      "paid":"{{/payload/paid}}","items":"{{/payload/items}}","type":"{{/event_type}}",
      "trace":"{{/trace_id}}","source":"{{/source}}"})");
  json::value out = RenderBody(tmpl, Event());
  EXPECT_EQ(out, json::parse(R"({"id":42,"amount":12.5,"paid":true,
      "items":[{"sku":"a"},{"sku":"b"}],"type":"payment.succeeded","trace":"trace-1",
      "source":"shop"})"));
}

TEST(PayloadTemplateTest, WalksNestedObjectsAndArrays) {
  json::value tmpl =
      json::parse(R"({"data":{"list":["{{/payload/items/1/sku}}",{"e":"{{/event_id}}"},7,null]}})");
  EXPECT_EQ(RenderTemplate(tmpl, Event()),
            json::parse(R"({"data":{"list":["b",{"e":"evt_1"},7,null]}})"));
}

TEST(PayloadTemplateTest, MissingPointerBecomesNull) {
  json::value tmpl =
      json::parse(R"(["{{/payload/nope}}","{{/payload/items/9}}","{{/payload/note}}"])");
  EXPECT_EQ(RenderTemplate(tmpl, Event()), json::parse("[null,null,null]"));
}

TEST(PayloadTemplateTest, OnlyWholeStringPlaceholdersAreReplaced) {
  json::value tmpl = json::parse(
      R"(["order {{/payload/order_id}}","{{/payload/order_id}} ","{{}}","{{payload}}","plain"])");
  EXPECT_EQ(RenderTemplate(tmpl, Event()), tmpl);
}

TEST(PayloadTemplateTest, EscapedPointerTokensResolve) {
  json::object event = MakeEventObject("e", "t", "s", json::parse(R"({"a/b":1,"c~d":2})"), "");
  EXPECT_EQ(RenderTemplate(json::parse(R"(["{{/payload/a~1b}}","{{/payload/c~0d}}"])"), event),
            json::parse("[1,2]"));
}

TEST(PayloadTemplateTest, ValidateRejectsBadPointerSyntax) {
  EXPECT_TRUE(
      ValidateTemplate(json::parse(R"({"a":"{{/payload/x}}","b":["{{/a~1b}}"]})")).has_value());
  core::Result<void> bad =
      ValidateTemplate(json::parse(R"({"a":["{{/payload/x~2}}", "{{/a~}}"]})"));
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, core::ErrorCode::kInvalidField);
  EXPECT_EQ(bad.error().field, "template");
}

}  // namespace
}  // namespace madeira::delivery
