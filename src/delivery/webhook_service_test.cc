// WebhookService over the real engine and SQLite store, with a FakeClock: signatures, the
// replay window, routing, dedupe and the automatic disable are checked by moving time by hand.
#include "delivery/webhook_service.h"

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <filesystem>
#include <thread>

#include "delivery/source_signature.h"
#include "delivery/standard_webhooks.h"
#include "store/conformance/sync.h"
#include "store/sqlite/sqlite_store.h"

namespace madeira::delivery {
namespace {

namespace json = boost::json;
using core::ErrorCode;
using core::Result;

constexpr core::Millis kT0 = 1'796'000'000'000;

using store::testing::Await;

class WebhookServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("madeira-webhooks-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    store_ = std::move(*store::OpenSqliteStore(dir_.string()));
    work_.emplace(io_.get_executor());
    io_thread_ = std::thread([this] { io_.run(); });
    engine_ = std::make_unique<engine::Engine>(io_.get_executor(), *store_, clock_, random_,
                                               metrics_, engine::EngineConfig{});
    ASSERT_TRUE(Await<Unit>([&](auto cb) { engine_->Start(cb); }));
    WebhookConfig config;
    config.sources = {{"billing", {"k-new", "k-old"}, false, {}},
                      {"shop", {"k-shop"}, true, {"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}};
    config.disable_after = 3600'000;
    service_ = std::make_unique<WebhookService>(*engine_, *store_, clock_, random_, random_,
                                                metrics_, config);
    ASSERT_TRUE(Await<Unit>([&](auto cb) { service_->Start(cb); }));
  }

  void TearDown() override {
    engine_->Stop();
    service_.reset();
    engine_.reset();
    store_->Close();
    work_.reset();
    io_.stop();
    io_thread_.join();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  Endpoint CreateEndpoint(const std::string& body) {
    auto ep = Await<Endpoint>(
        [&](auto cb) { service_->CreateEndpoint(json::parse(body), std::move(cb)); });
    EXPECT_TRUE(ep) << ep.error().message;
    return *ep;
  }

  Result<EventAccepted> Post(const std::string& source, const std::string& secret,
                             const std::string& body, core::Millis signed_at) {
    const std::string ts = std::to_string(signed_at / 1000);
    InboundEvent in{source, ts, SignSourceEvent(secret, ts, body), body};
    return Await<EventAccepted>([&](auto cb) { service_->AcceptEvent(in, std::move(cb)); });
  }

  Result<store::StoredEvent> GetEvent(const std::string& id) {
    return Await<store::StoredEvent>(
        [&](auto cb) { service_->GetEvent(id, std::nullopt, std::move(cb)); });
  }

  std::filesystem::path dir_;
  core::FakeClock clock_{kT0};
  core::SequenceRandom random_{{1, 2, 3, 4, 5, 6, 7, 8, 9}};
  core::Metrics metrics_;
  std::unique_ptr<store::Store> store_;
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::thread io_thread_;
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<WebhookService> service_;
};

constexpr std::string_view kPaymentEvent =
    R"({"event_id":"evt_1","event_type":"payment.succeeded","payload":{"order_id":42}})";

TEST_F(WebhookServiceTest, SignedEventFansOutToEachSubscribedEndpoint) {
  Endpoint all_payments = CreateEndpoint(R"({"url":"http://a/","event_types":["payment.*"]})");
  Endpoint only_shop =
      CreateEndpoint(R"({"url":"http://b/","event_types":["payment.*"],"sources":["shop"]})");
  Endpoint refunds = CreateEndpoint(R"({"url":"http://c/","event_types":["refund.*"]})");
  auto accepted = Post("billing", "k-old", std::string(kPaymentEvent), kT0);
  ASSERT_TRUE(accepted) << accepted.error().message;
  EXPECT_EQ(accepted->deliveries, 1);
  auto stored = GetEvent("evt_1");
  ASSERT_TRUE(stored);
  ASSERT_EQ(stored->deliveries.size(), 1u);
  EXPECT_EQ(stored->deliveries[0].endpoint_id, all_payments.id);
  auto task = Await<core::Task>(
      [&](auto cb) { engine_->Get(stored->deliveries[0].task_id, std::move(cb)); });
  ASSERT_TRUE(task);
  EXPECT_EQ(task->spec.queue, "webhook:" + all_payments.id);
  EXPECT_EQ(task->spec.task_type, "webhook.delivery");
  auto payload = DecodeDeliveryPayload(task->spec.payload);
  ASSERT_TRUE(payload);
  EXPECT_EQ(json::serialize(payload->body), R"({"order_id":42})");
  (void)only_shop;
  (void)refunds;
}

TEST_F(WebhookServiceTest, EverySignatureProblemIsTheSameRejectionAndStoresNothing) {
  CreateEndpoint(R"({"url":"http://a/","event_types":["*"]})");
  const std::string body(kPaymentEvent);
  auto expect_rejected = [&](Result<EventAccepted> r, const char* why) {
    ASSERT_FALSE(r) << why;
    EXPECT_EQ(r.error().code, ErrorCode::kBadSignature) << why;
    EXPECT_EQ(r.error().message, "the event signature was rejected") << why;
  };
  expect_rejected(Post("billing", "wrong", body, kT0), "wrong secret");
  expect_rejected(Post("nobody", "k-new", body, kT0), "unknown source");
  expect_rejected(Post("billing", "k-new", body, kT0 - 301'000), "stale");
  expect_rejected(Post("billing", "k-new", body, kT0 + 301'000), "from the future");
  InboundEvent tampered{"billing", std::to_string(kT0 / 1000),
                        SignSourceEvent("k-new", std::to_string(kT0 / 1000), body),
                        body + " "};  // one byte more than was signed
  expect_rejected(Await<EventAccepted>([&](auto cb) { service_->AcceptEvent(tampered, cb); }),
                  "tampered body");
  auto stored = GetEvent("evt_1");
  ASSERT_FALSE(stored);
  EXPECT_EQ(stored.error().code, ErrorCode::kNotFound);
  EXPECT_NE(metrics_.RenderPrometheus().find(
                R"(madeira_events_received_total{source="unknown",result="bad_signature"} 1)"),
            std::string::npos);
}

TEST_F(WebhookServiceTest, ASecondSendOfTheSameEventIdDeliversNothingNew) {
  CreateEndpoint(R"({"url":"http://a/","event_types":["*"]})");
  auto first = Post("billing", "k-new", std::string(kPaymentEvent), kT0);
  ASSERT_TRUE(first);
  auto again = Post("billing", "k-new", std::string(kPaymentEvent), kT0 + 5000);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->duplicate);
  auto stored = GetEvent("evt_1");
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->deliveries.size(), 1u);
}

TEST_F(WebhookServiceTest, OnlyAllowedSourcesNameTheirTarget) {
  const std::string body =
      R"({"event_id":"e2","event_type":"x","payload":{},"target_uri":"https://t.example/h"})";
  auto refused = Post("billing", "k-new", body, kT0);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().field, "target_uri");
  auto accepted = Post("shop", "k-shop", body, kT0);
  ASSERT_TRUE(accepted) << accepted.error().message;
  EXPECT_EQ(accepted->deliveries, 1);
  auto stored = GetEvent("e2");
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->deliveries[0].endpoint_id, "direct:shop");
}

TEST_F(WebhookServiceTest, TemplateRendersTheEventKeepingTypes) {
  CreateEndpoint(R"({"url":"http://a/","event_types":["*"],
                     "template":{"order":"{{/payload/order_id}}","kind":"{{/event_type}}"}})");
  ASSERT_TRUE(Post("billing", "k-new", std::string(kPaymentEvent), kT0));
  auto stored = GetEvent("evt_1");
  ASSERT_TRUE(stored);
  auto task = Await<core::Task>(
      [&](auto cb) { engine_->Get(stored->deliveries[0].task_id, std::move(cb)); });
  ASSERT_TRUE(task);
  auto payload = DecodeDeliveryPayload(task->spec.payload);
  ASSERT_TRUE(payload);
  EXPECT_EQ(json::serialize(payload->body), R"({"order":42,"kind":"payment.succeeded"})");
}

TEST_F(WebhookServiceTest, AFailureStreakOutlivingDisableAfterDisablesTheEndpoint) {
  Endpoint ep = CreateEndpoint(R"({"url":"http://a/","event_types":["*"]})");
  service_->RecordFailure(ep.id, "HTTP 500");
  clock_.Advance(3599'000);
  service_->RecordFailure(ep.id, "HTTP 500");
  EXPECT_TRUE(service_->GetEndpoint(ep.id)->enabled) << "not yet an hour";
  service_->RecordSuccess(ep.id);  // the streak ends
  clock_.Advance(10'000);
  service_->RecordFailure(ep.id, "HTTP 500");
  clock_.Advance(3600'000);
  service_->RecordFailure(ep.id, "timeout");
  auto disabled = service_->GetEndpoint(ep.id);
  ASSERT_TRUE(disabled);
  EXPECT_FALSE(disabled->enabled);
  EXPECT_NE(disabled->disabled_reason.find("timeout"), std::string::npos);
  // An event now routes nowhere: the disabled endpoint is skipped.
  auto accepted = Post("billing", "k-new", std::string(kPaymentEvent), clock_.Now());
  ASSERT_TRUE(accepted);
  EXPECT_EQ(accepted->deliveries, 0);
}

TEST_F(WebhookServiceTest, RotationPutsANewSecretFirstAndKeepsTheOld) {
  Endpoint ep = CreateEndpoint(R"({"url":"http://a/","event_types":["*"]})");
  auto rotated = Await<Endpoint>([&](auto cb) { service_->RotateSecret(ep.id, std::move(cb)); });
  ASSERT_TRUE(rotated);
  ASSERT_EQ(rotated->secrets.size(), 2u);
  EXPECT_EQ(rotated->secrets[1], ep.secrets[0]);
  EXPECT_NE(rotated->secrets[0], ep.secrets[0]);
  // Both sign while receivers switch over: one v1 signature per secret.
  auto header = Sign("msg_1", 1, "{}", rotated->secrets);
  ASSERT_TRUE(header);
  EXPECT_TRUE(Verify("msg_1", 1, "{}", *header, {ep.secrets[0]}, 1));
  EXPECT_TRUE(Verify("msg_1", 1, "{}", *header, {rotated->secrets[0]}, 1));
  EXPECT_EQ(service_->GetEndpoint(ep.id)->secrets, rotated->secrets);
}

TEST_F(WebhookServiceTest, TheSameSignedRequestAgainIsAReplayAndRefused) {
  CreateEndpoint(R"({"url":"http://a/","event_types":["*"]})");
  ASSERT_TRUE(Post("billing", "k-new", std::string(kPaymentEvent), kT0));
  clock_.Advance(1000);
  auto replayed = Post("billing", "k-new", std::string(kPaymentEvent), kT0);
  ASSERT_FALSE(replayed);
  EXPECT_EQ(replayed.error().code, ErrorCode::kBadSignature);
  // Signed anew (a source's honest retry), it is the event_id dedupe instead.
  auto resent = Post("billing", "k-new", std::string(kPaymentEvent), kT0 + 1000);
  ASSERT_TRUE(resent);
  EXPECT_TRUE(resent->duplicate);
  EXPECT_EQ(GetEvent("evt_1")->deliveries.size(), 1u);
}

}  // namespace
}  // namespace madeira::delivery
