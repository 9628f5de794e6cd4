#include "madeira/signatures.h"

#include <gtest/gtest.h>

#include "testdata.h"

namespace madeira::sdk {
namespace {

using testing::ReadTestdata;

TEST(Signatures, EventVectors) {
  auto doc = ReadTestdata("event_signatures.json");
  for (const auto& c : doc.at("cases").as_array()) {
    const auto& o = c.as_object();
    SCOPED_TRACE(std::string(o.at("name").as_string()));
    std::chrono::sys_seconds at(std::chrono::seconds(o.at("timestamp").as_int64()));
    auto h = SignEvent("src_1", std::string(o.at("secret").as_string()),
                       std::string(o.at("body").as_string()), at);
    EXPECT_EQ(h.source, "src_1");
    EXPECT_EQ(h.timestamp, std::to_string(o.at("timestamp").as_int64()));
    EXPECT_EQ(h.signature, o.at("signature").as_string());
  }
}

TEST(Signatures, WebhookVectors) {
  auto doc = ReadTestdata("webhook_signatures.json");
  std::chrono::seconds tolerance(doc.at("tolerance_seconds").as_int64());
  for (const auto& c : doc.at("cases").as_array()) {
    const auto& o = c.as_object();
    SCOPED_TRACE(std::string(o.at("name").as_string()));
    std::vector<std::string> secrets;
    for (const auto& s : o.at("secrets").as_array()) secrets.emplace_back(s.as_string());
    WebhookVerifier verifier(secrets, tolerance);
    std::chrono::sys_seconds now(std::chrono::seconds(o.at("now").as_int64()));
    auto verdict = verifier.Check(
        std::string(o.at("id").as_string()), std::to_string(o.at("timestamp").as_int64()),
        std::string(o.at("signature").as_string()), std::string(o.at("body").as_string()), now);
    EXPECT_EQ(verdict == WebhookVerdict::kValid, o.at("valid").as_bool());
  }
}

TEST(Signatures, VerifyThrowsWithTheReason) {
  WebhookVerifier verifier({"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"});
  try {
    verifier.Verify("msg", "1614265330", "v1,AAAA", "{}",
                    std::chrono::sys_seconds(std::chrono::seconds(1614265330)));
    ADD_FAILURE() << "accepted";
  } catch (const WebhookError& e) {
    EXPECT_EQ(e.verdict(), WebhookVerdict::kNoMatchingSignature);
  }
  EXPECT_EQ(verifier.Check("", "1", "v1,AAAA", "{}"), WebhookVerdict::kBadHeaders);
  EXPECT_THROW(WebhookVerifier({"whsec_!!"}), Error);
}

}  // namespace
}  // namespace madeira::sdk
