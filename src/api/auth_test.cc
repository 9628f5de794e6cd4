#include "api/auth.h"

#include <gtest/gtest.h>

namespace madeira::api {
namespace {

using core::ErrorCode;

Authenticator MakeAuth() {
  return Authenticator({{"orders", Sha256Hex("p-token"), {Scope::kProducer}},
                        {"workers", Sha256Hex("w-token"), {Scope::kWorker}},
                        {"ops", Sha256Hex("a-token"), {Scope::kAdmin}}});
}

TEST(AuthTest, Sha256HexIsLowercaseHex) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(AuthTest, NoTokensMeansAuthOff) {
  Authenticator auth({});
  EXPECT_FALSE(auth.enabled());
  EXPECT_TRUE(auth.Check("", kAdminOnly));
}

TEST(AuthTest, MissingOrUnknownTokenIsUnauthorized) {
  Authenticator auth = MakeAuth();
  EXPECT_EQ(auth.Check("", kProducerOnly).error().code, ErrorCode::kUnauthorized);
  EXPECT_EQ(auth.Check("Basic p-token", kProducerOnly).error().code, ErrorCode::kUnauthorized);
  EXPECT_EQ(auth.Check("Bearer ", kProducerOnly).error().code, ErrorCode::kUnauthorized);
  EXPECT_EQ(auth.Check("Bearer nope", kProducerOnly).error().code, ErrorCode::kUnauthorized);
}

TEST(AuthTest, ScopeDecides) {
  Authenticator auth = MakeAuth();
  EXPECT_TRUE(auth.Check("Bearer p-token", kProducerOnly));
  EXPECT_EQ(auth.Check("Bearer p-token", kWorkerOnly).error().code, ErrorCode::kForbidden);
  EXPECT_EQ(auth.Check("Bearer w-token", kAdminOnly).error().code, ErrorCode::kForbidden);
  EXPECT_TRUE(auth.Check("Bearer w-token", kProducerOnly | kWorkerOnly));
}

// Who called: the token's name, and whether it sees every task or only its own.
TEST(AuthTest, TheCallerIsTheTokensNameAndOnlyAdminsSeeEveryTask) {
  Authenticator auth = MakeAuth();
  auto producer = auth.Check("Bearer p-token", kProducerOnly);
  ASSERT_TRUE(producer);
  EXPECT_EQ(producer->name, "orders");
  EXPECT_FALSE(producer->sees_all);
  auto admin = auth.Check("Bearer a-token", kProducerOnly);
  ASSERT_TRUE(admin);
  EXPECT_EQ(admin->name, "ops");
  EXPECT_TRUE(admin->sees_all);
  auto off = Authenticator({}).Check("", kProducerOnly);
  ASSERT_TRUE(off);
  EXPECT_EQ(off->name, "");
  EXPECT_TRUE(off->sees_all);
}

TEST(AuthTest, AdminMayDoEverythingAndPublicNeedsNoToken) {
  Authenticator auth = MakeAuth();
  EXPECT_TRUE(auth.Check("Bearer a-token", kProducerOnly));
  EXPECT_TRUE(auth.Check("Bearer a-token", kWorkerOnly));
  EXPECT_TRUE(auth.Check("", kPublic));
}

TEST(AuthTest, ConfiguredHashMayBeUppercase) {
  std::string upper = Sha256Hex("t");
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  Authenticator auth({{"x", upper, {Scope::kWorker}}});
  EXPECT_TRUE(auth.Check("Bearer t", kWorkerOnly));
}

TEST(AuthTest, ErrorsNeverEchoTheToken) {
  Authenticator auth = MakeAuth();
  auto r = auth.Check("Bearer secret-value", kProducerOnly);
  EXPECT_EQ(r.error().message.find("secret-value"), std::string::npos);
}

}  // namespace
}  // namespace madeira::api
