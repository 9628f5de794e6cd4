#include "delivery/source_signature.h"

#include <gtest/gtest.h>

#include "delivery/test_vectors.h"

namespace madeira::delivery {
namespace {

namespace json = boost::json;

core::Millis AtSeconds(int64_t s) { return s * 1000; }

TEST(SourceSignatureTest, EveryVectorSignsAndVerifies) {
  json::value vectors = testing::LoadVectors("event_signatures.json");
  const json::array& cases = vectors.at("cases").as_array();
  ASSERT_GE(cases.size(), 3u);
  for (const json::value& c : cases) {
    SCOPED_TRACE(std::string(c.at("name").as_string()));
    const std::string secret(c.at("secret").as_string());
    const std::string ts = std::to_string(c.at("timestamp").as_int64());
    const std::string body(c.at("body").as_string());
    EXPECT_EQ(SignSourceEvent(secret, ts, body), c.at("signature").as_string());
    core::Result<void> ok =
        VerifySourceEvent(ts, c.at("signature").as_string(), body, {"other", secret},
                          AtSeconds(c.at("timestamp").as_int64()));
    EXPECT_TRUE(ok.has_value());
  }
}

class SourceSignatureRejectTest : public ::testing::Test {
 protected:
  void ExpectBad(std::string_view ts, std::string_view sig, std::string_view body, core::Millis now,
                 std::vector<std::string> secrets = {"k1"}) {
    core::Result<void> r = VerifySourceEvent(ts, sig, body, secrets, now);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, core::ErrorCode::kBadSignature);
    EXPECT_EQ(r.error().message, "bad signature");  // the same words whatever went wrong
  }
  const std::string body_ = R"({"event_id":"evt_1"})";
  const std::string ts_ = "1700000000";
  const std::string sig_ = SignSourceEvent("k1", ts_, body_);
  const core::Millis now_ = AtSeconds(1700000000);
};

TEST_F(SourceSignatureRejectTest, AcceptsTheEdgesOfTheWindow) {
  EXPECT_TRUE(VerifySourceEvent(ts_, sig_, body_, {"k1"}, now_ + 300'999).has_value());
  EXPECT_TRUE(VerifySourceEvent(ts_, sig_, body_, {"k1"}, now_ - 300'000).has_value());
}

TEST_F(SourceSignatureRejectTest, RejectsTimestampsOutsideTheWindow) {
  ExpectBad(ts_, sig_, body_, now_ + 301'000);
  ExpectBad(ts_, sig_, body_, now_ - 301'000);
}

TEST_F(SourceSignatureRejectTest, RejectsMalformedTimestamps) {
  for (std::string_view ts : {"", "abc", "1700000000.5", "-1", " 1700000000", "+1700000000"}) {
    ExpectBad(ts, SignSourceEvent("k1", ts, body_), body_, now_);
  }
}

TEST_F(SourceSignatureRejectTest, RejectsTamperingAndWrongSecrets) {
  ExpectBad(ts_, sig_, body_ + " ", now_);
  ExpectBad(ts_, sig_, body_, now_, {"k2"});
  ExpectBad(ts_, sig_, body_, now_, {});
}

TEST_F(SourceSignatureRejectTest, RejectsMalformedSignatures) {
  std::string hex = sig_.substr(7);
  ExpectBad(ts_, "", body_, now_);
  ExpectBad(ts_, hex, body_, now_);
  ExpectBad(ts_, "sha1=" + hex, body_, now_);
  ExpectBad(ts_, "sha256=" + hex.substr(2), body_, now_);
  ExpectBad(ts_, "sha256=zz" + hex.substr(2), body_, now_);
  ExpectBad(ts_, sig_ + "00", body_, now_);
}

TEST_F(SourceSignatureRejectTest, AcceptsUpperCaseHex) {
  std::string upper = sig_;
  for (size_t i = 7; i < upper.size(); ++i) upper[i] = static_cast<char>(std::toupper(upper[i]));
  EXPECT_TRUE(VerifySourceEvent(ts_, upper, body_, {"k1"}, now_).has_value());
}

}  // namespace
}  // namespace madeira::delivery
