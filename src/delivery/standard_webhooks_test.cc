#include "delivery/standard_webhooks.h"

#include <gtest/gtest.h>

#include "delivery/crypto.h"
#include "delivery/test_vectors.h"

namespace madeira::delivery {
namespace {

namespace json = boost::json;

std::vector<std::string> Strings(const json::value& v) {
  std::vector<std::string> out;
  for (const json::value& s : v.as_array()) out.emplace_back(s.as_string());
  return out;
}

TEST(StandardWebhooksTest, VerifiesEveryVectorCase) {
  json::value vectors = testing::LoadVectors("webhook_signatures.json");
  const json::array& cases = vectors.at("cases").as_array();
  ASSERT_GE(cases.size(), 7u);
  for (const json::value& c : cases) {
    SCOPED_TRACE(std::string(c.at("name").as_string()));
    const std::string body(c.at("body").as_string());
    EXPECT_EQ(Verify(c.at("id").as_string(), c.at("timestamp").as_int64(), body,
                     c.at("signature").as_string(), Strings(c.at("secrets")),
                     c.at("now").as_int64(), vectors.at("tolerance_seconds").as_int64()),
              c.at("valid").as_bool());
  }
}

TEST(StandardWebhooksTest, SignReproducesTheReferenceSignature) {
  json::value vectors = testing::LoadVectors("webhook_signatures.json");
  const json::value& ref = vectors.at("cases").as_array().at(0);
  core::Result<std::string> header = Sign(ref.at("id").as_string(), ref.at("timestamp").as_int64(),
                                          ref.at("body").as_string(), Strings(ref.at("secrets")));
  ASSERT_TRUE(header.has_value());
  EXPECT_EQ(*header, ref.at("signature").as_string());
}

TEST(StandardWebhooksTest, SignWithTwoSecretsGivesTheRotationHeader) {
  json::value vectors = testing::LoadVectors("webhook_signatures.json");
  const json::array& cases = vectors.at("cases").as_array();
  const json::value& ref = cases.at(0);
  const json::value& rotation = cases.at(1);
  ASSERT_EQ(rotation.at("name").as_string(), "rotation-two-signatures");
  std::vector<std::string> secrets = Strings(ref.at("secrets"));
  secrets.push_back(Strings(rotation.at("secrets")).at(0));
  core::Result<std::string> header =
      Sign(rotation.at("id").as_string(), rotation.at("timestamp").as_int64(),
           rotation.at("body").as_string(), secrets);
  ASSERT_TRUE(header.has_value());
  EXPECT_EQ(*header, rotation.at("signature").as_string());
}

TEST(StandardWebhooksTest, SignRejectsMalformedSecrets) {
  for (const char* bad :
       {"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_", "whsec_not base64!", "whsec_abc"}) {
    core::Result<std::string> header = Sign("msg", 1, "{}", {bad});
    ASSERT_FALSE(header.has_value()) << bad;
    EXPECT_EQ(header.error().code, core::ErrorCode::kInvalidField);
  }
}

TEST(StandardWebhooksTest, GeneratedSecretHas24RandomBytesAndSigns) {
  core::SequenceRandom random{0x0102030405060708, 0x1112131415161718, 0x2122232425262728};
  std::string secret = GenerateSecret(random);
  ASSERT_TRUE(secret.starts_with("whsec_"));
  core::Result<std::string> key = DecodeSecret(secret);
  ASSERT_TRUE(key.has_value());
  EXPECT_EQ(key->size(), 24u);
  EXPECT_EQ(static_cast<uint8_t>((*key)[0]), 0x08);  // little-endian bytes of each word

  OpenSslRandom system;
  std::string a = GenerateSecret(system);
  std::string b = GenerateSecret(system);
  EXPECT_NE(a, b);
  core::Result<std::string> header = Sign("msg_1", 1700000000, "{}", {a});
  ASSERT_TRUE(header.has_value());
  EXPECT_TRUE(Verify("msg_1", 1700000000, "{}", *header, {a}, 1700000000));
  EXPECT_FALSE(Verify("msg_1", 1700000000, "{}", *header, {b}, 1700000000));
}

TEST(CryptoTest, Base64RoundTripsAndRejectsJunk) {
  for (const std::string& s :
       std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
    std::optional<std::string> back = Base64Decode(Base64Encode(s));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, s);
  }
  EXPECT_FALSE(Base64Decode("abc").has_value());
  EXPECT_FALSE(Base64Decode("ab c").has_value());
  EXPECT_FALSE(Base64Decode("a$==").has_value());
}

}  // namespace
}  // namespace madeira::delivery
