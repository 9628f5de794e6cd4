#include "delivery/endpoint.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include "core/random.h"
#include "delivery/standard_webhooks.h"

namespace madeira::delivery {
namespace {

namespace json = boost::json;
using core::ErrorCode;

core::SequenceRandom random_source({7, 11, 13});

core::Result<Endpoint> Create(std::string_view body) {
  return DecodeEndpoint(json::parse(body), Endpoint{}, /*is_create=*/true, random_source);
}

// The field a rejected body is blamed on.
std::string RejectedField(std::string_view body) {
  auto ep = Create(body);
  EXPECT_FALSE(ep) << body;
  return ep ? "" : ep.error().field;
}

TEST(EndpointTest, CreateAppliesDefaultsAndMakesASecret) {
  auto ep = Create(R"({"url":"https://hooks.example.com/in","event_types":["payment.*"]})");
  ASSERT_TRUE(ep) << ep.error().message;
  EXPECT_EQ(ep->timeout_ms, 15'000);
  EXPECT_EQ(ep->max_in_flight, kDefaultMaxInFlight);
  EXPECT_TRUE(ep->enabled);
  EXPECT_FALSE(ep->rate_limit);
  ASSERT_EQ(ep->secrets.size(), 1u);
  EXPECT_TRUE(DecodeSecret(ep->secrets[0])) << ep->secrets[0];
}

TEST(EndpointTest, MalformedFieldsAreRejectedByName) {
  EXPECT_EQ(RejectedField(R"({"url":"ftp://x/y","event_types":["a"]})"), "url");
  EXPECT_EQ(RejectedField(R"({"url":"not a url","event_types":["a"]})"), "url");
  EXPECT_EQ(RejectedField(R"({"url":"http://user:pw@x/","event_types":["a"]})"), "url");
  EXPECT_EQ(RejectedField(R"({"event_types":["a"]})"), "url");
  EXPECT_EQ(RejectedField(R"({"url":"http://x/","event_types":["a"],"colour":1})"), "colour");
  EXPECT_EQ(RejectedField(R"({"url":"http://x/","event_types":[]})"), "event_types");
  EXPECT_EQ(RejectedField(R"({"url":"http://x/","event_types":["a"],
                               "rate_limit":{"per_second":0}})"),
            "rate_limit.per_second");
  EXPECT_EQ(RejectedField(R"({"url":"http://x/","event_types":["a"],"timeout_ms":30001})"),
            "timeout_ms");
  EXPECT_EQ(RejectedField(R"({"url":"http://x/","event_types":["a"],"secrets":["k"]})"), "secrets");
  EXPECT_EQ(RejectedField(R"({"url":"http://x/","event_types":["a"],
                               "headers":{"webhook-signature":"forged"}})"),
            "headers.webhook-signature");
  EXPECT_EQ(RejectedField(R"({"url":"http://x/","event_types":["a"],
                               "headers":{"X-A":"line\r\nbreak"}})"),
            "headers.X-A");
  EXPECT_EQ(RejectedField(R"({"url":"http://x/","event_types":["a"],
                               "success":{"json_pointer":"success","equals":true}})"),
            "success.json_pointer");
  EXPECT_EQ(RejectedField(R"({"url":"http://x/","event_types":["a"],
                               "retry":{"initial_ms":5000,"max_ms":10}})"),
            "retry.max_ms");
}

TEST(EndpointTest, PatchChangesOnlyWhatItNames) {
  auto ep = Create(R"({"url":"http://x/","event_types":["a"],"rate_limit":{"per_second":5}})");
  ASSERT_TRUE(ep);
  auto patched = DecodeEndpoint(json::parse(R"({"timeout_ms":2000,"rate_limit":null})"), *ep,
                                /*is_create=*/false, random_source);
  ASSERT_TRUE(patched) << patched.error().message;
  EXPECT_EQ(patched->url, "http://x/");
  EXPECT_EQ(patched->timeout_ms, 2000);
  EXPECT_FALSE(patched->rate_limit);
  EXPECT_EQ(patched->secrets, ep->secrets);
}

TEST(EndpointTest, EnablingByHandClearsTheServersReason) {
  auto ep = Create(R"({"url":"http://x/","event_types":["a"]})");
  ASSERT_TRUE(ep);
  ep->enabled = false;
  ep->disabled_reason = "disabled automatically";
  ep->failing_since = 123;
  auto patched = DecodeEndpoint(json::parse(R"({"enabled":true})"), *ep, false, random_source);
  ASSERT_TRUE(patched);
  EXPECT_TRUE(patched->enabled);
  EXPECT_TRUE(patched->disabled_reason.empty());
  EXPECT_FALSE(patched->failing_since);
}

TEST(EndpointTest, SecretsShowAsAPrefixOutsideTheCreateAnswer) {
  auto ep = Create(R"({"url":"http://x/","event_types":["a"],
                       "secrets":["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]})");
  ASSERT_TRUE(ep);
  const std::string whole = json::serialize(EncodeEndpoint(*ep, SecretView::kWhole));
  const std::string prefix = json::serialize(EncodeEndpoint(*ep, SecretView::kPrefix));
  EXPECT_NE(whole.find("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), std::string::npos);
  EXPECT_EQ(prefix.find("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), std::string::npos);
  EXPECT_NE(prefix.find("whsec_MfKQ"), std::string::npos);
}

TEST(EndpointTest, StoredRecordReadsBackWithItsState) {
  auto ep = Create(R"({"url":"http://x/h","event_types":["order.*"],"sources":["billing"],
                       "rate_limit":{"per_second":2.5,"burst":3},"max_in_flight":4,
                       "headers":{"X-Env":"prod"},"success":{"json_pointer":"/ok","equals":true},
                       "template":{"id":"{{/payload/id}}"},"retry":{"max_retries":2}})");
  ASSERT_TRUE(ep) << ep.error().message;
  ep->id = "ep_1";
  ep->created_at = 1000;
  ep->updated_at = 2000;
  ep->enabled = false;
  ep->disabled_reason = "failing since then";
  ep->failing_since = 1500;
  auto back = FromRecord(ToRecord(*ep));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(json::serialize(EncodeEndpoint(*back, SecretView::kWhole)),
            json::serialize(EncodeEndpoint(*ep, SecretView::kWhole)));
  EXPECT_EQ(back->failing_since, 1500);
  EXPECT_FALSE(back->enabled);
}

TEST(EndpointTest, SubscribesByTypeGlobAndSource) {
  auto ep = Create(R"({"url":"http://x/","event_types":["payment.*","refund.created"],
                       "sources":["billing"]})");
  ASSERT_TRUE(ep);
  EXPECT_TRUE(Subscribes(*ep, "payment.succeeded", "billing"));
  EXPECT_TRUE(Subscribes(*ep, "refund.created", "billing"));
  EXPECT_FALSE(Subscribes(*ep, "refund.updated", "billing"));
  EXPECT_FALSE(Subscribes(*ep, "payment.succeeded", "shop"));
  EXPECT_FALSE(Subscribes(*ep, "paymentXsucceeded", "billing"));
}

}  // namespace
}  // namespace madeira::delivery
