// WebhookService over the real engine and SQLite store, with a FakeClock: signatures, the
// replay window, routing, dedupe and the automatic disable are checked by moving time by hand.
// The service sees the store through SharedStoreFake, which lets a test play another process
// that changes the endpoints and announces it.
#include "delivery/webhook_service.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "delivery/source_signature.h"
#include "delivery/standard_webhooks.h"
#include "store/conformance/forwarding_store.h"
#include "store/conformance/sync.h"
#include "store/sqlite/sqlite_store.h"

namespace madeira::delivery {
namespace {

namespace json = boost::json;
using core::ErrorCode;
using core::Result;

constexpr core::Millis kT0 = 1'796'000'000'000;

using store::testing::Await;

// The SQLite store as if other processes shared it: forwards everything, keeps the change
// handler for the test to call (as the redis-pg store does on another process's message), and
// can hold this process's endpoint writes to order them against a reload.
class SharedStoreFake final : public store::testing::ForwardingStore {
 public:
  using Callback0 = std::function<void()>;
  using ForwardingStore::ForwardingStore;

  // Another process changed the endpoints: what the shared store tells its handler.
  void AnnounceChange() {
    std::lock_guard lock(handler_mu_);
    if (handler_) handler_(store::kEndpointsChanged);
  }
  bool has_handler() {
    std::lock_guard lock(handler_mu_);
    return handler_ != nullptr;
  }
  void HoldWrites() {
    std::lock_guard lock(mu_);
    hold_ = true;
  }
  void ReleaseWrites() {
    std::vector<Callback0> held;
    {
      std::lock_guard lock(mu_);
      hold_ = false;
      held.swap(held_);
    }
    for (auto& run : held) run();
  }

  void SetChangeHandler(ChangeHandler handler) override {
    std::lock_guard lock(handler_mu_);
    handler_ = std::move(handler);
  }
  void PutEndpoint(store::EndpointRecord endpoint, store::Callback<Unit> done) override {
    Forward([=, this] { inner().PutEndpoint(endpoint, done); });
  }
  void DeleteEndpoint(std::string id, store::Callback<Unit> done) override {
    Forward([=, this] { inner().DeleteEndpoint(id, done); });
  }
  void Close() override {}  // the test closes the inner store itself

 private:
  void Forward(Callback0 run) {
    {
      std::lock_guard lock(mu_);
      if (hold_) return held_.push_back(std::move(run));
    }
    run();
  }

  std::mutex mu_;
  bool hold_ = false;
  std::vector<Callback0> held_;
  std::mutex handler_mu_;
  ChangeHandler handler_;
};

// What the directory told its listener (the deliverer), in order: a snapshot, or null when
// removed.
class DirectoryLog {
 public:
  void Attach(EndpointDirectory& directory) {
    directory.SetListener([this](const std::string& id, EndpointDirectory::Snapshot ep) {
      std::lock_guard lock(mu_);
      seen_.emplace_back(id, std::move(ep));
      cv_.notify_all();
    });
  }
  // Waits (up to 5 s) until each of `ids` was heard of; returns everything heard so far.
  std::vector<std::pair<std::string, EndpointDirectory::Snapshot>> WaitFor(
      const std::set<std::string>& ids) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(5), [&] {
      std::set<std::string> heard;
      for (const auto& [id, ep] : seen_) heard.insert(id);
      return std::includes(heard.begin(), heard.end(), ids.begin(), ids.end());
    });
    return seen_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::pair<std::string, EndpointDirectory::Snapshot>> seen_;
};

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
    shared_ = std::make_unique<SharedStoreFake>(*store_);
    service_ = std::make_unique<WebhookService>(*engine_, *shared_, clock_, random_, random_,
                                                metrics_, config);
    ASSERT_TRUE(Await<Unit>([&](auto cb) { service_->Start(cb); }));
  }

  void TearDown() override {
    engine_->Stop();
    service_.reset();
    EXPECT_FALSE(shared_->has_handler()) << "the service unsets its change handler";
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
  std::unique_ptr<SharedStoreFake> shared_;
  DirectoryLog log_;  // outlives the service, whose directory may call it until then
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

// Another process adds an endpoint, changes one (disabled, new URL) and deletes one: once the
// store announces it, this process routes by what is stored now, and its deliverer (the
// directory's listener) hears of each difference and of nothing else.
TEST_F(WebhookServiceTest, AnAnnouncedChangeReloadsWhatAnotherProcessAddedChangedAndRemoved) {
  Endpoint kept = CreateEndpoint(R"({"url":"http://a/","event_types":["*"]})");
  Endpoint changed = CreateEndpoint(R"({"url":"http://b/","event_types":["*"]})");
  Endpoint removed = CreateEndpoint(R"({"url":"http://c/","event_types":["*"]})");
  log_.Attach(service_->directory());

  // The other process writes to the shared store directly.
  Endpoint added = kept;
  added.id = "ep_other";
  added.url = "http://d/";
  added.created_at = added.updated_at = kT0 + 1;
  ASSERT_TRUE(Await<Unit>([&](auto cb) { store_->PutEndpoint(ToRecord(added), cb); }));
  Endpoint disabled = changed;
  disabled.url = "http://b2/";
  disabled.enabled = false;
  disabled.updated_at = kT0 + 2;
  ASSERT_TRUE(Await<Unit>([&](auto cb) { store_->PutEndpoint(ToRecord(disabled), cb); }));
  ASSERT_TRUE(Await<Unit>([&](auto cb) { store_->DeleteEndpoint(removed.id, cb); }));
  EXPECT_EQ(service_->ListEndpoints().size(), 3u) << "nothing changes before the announcement";

  shared_->AnnounceChange();
  auto seen = log_.WaitFor({added.id, changed.id, removed.id});
  std::map<std::string, EndpointDirectory::Snapshot> last;
  for (const auto& [id, ep] : seen) last[id] = ep;
  ASSERT_EQ(last.size(), 3u) << "the unchanged endpoint is left alone";
  ASSERT_TRUE(last[added.id]);
  EXPECT_EQ(last[added.id]->url, "http://d/");
  ASSERT_TRUE(last[changed.id]);
  EXPECT_FALSE(last[changed.id]->enabled);
  EXPECT_EQ(last.count(removed.id), 1u);
  EXPECT_EQ(last[removed.id], nullptr);

  EXPECT_EQ(service_->GetEndpoint(changed.id)->url, "http://b2/");
  EXPECT_EQ(service_->GetEndpoint(removed.id).error().code, ErrorCode::kNotFound);
  auto accepted = Post("billing", "k-new", std::string(kPaymentEvent), kT0);
  ASSERT_TRUE(accepted) << accepted.error().message;
  auto stored = GetEvent("evt_1");
  ASSERT_TRUE(stored);
  std::set<std::string> routed;
  for (const auto& d : stored->deliveries) routed.insert(d.endpoint_id);
  EXPECT_EQ(routed, (std::set<std::string>{kept.id, added.id}));
}

// A reload must not bring back what a write of this process is about to replace: the failure
// streak the deliverer just reported is in the directory before the store has it.
TEST_F(WebhookServiceTest, AReloadNeverUndoesAnEndpointWriteOfItsOwnStillOnItsWay) {
  Endpoint ep = CreateEndpoint(R"({"url":"http://a/","event_types":["*"]})");
  log_.Attach(service_->directory());
  shared_->HoldWrites();
  service_->RecordFailure(ep.id, "HTTP 500");
  ASSERT_TRUE(service_->GetEndpoint(ep.id)->failing_since);

  Endpoint other = ep;  // meanwhile another process adds one and announces it
  other.id = "ep_other";
  ASSERT_TRUE(Await<Unit>([&](auto cb) { store_->PutEndpoint(ToRecord(other), cb); }));
  shared_->AnnounceChange();
  shared_->ReleaseWrites();

  auto seen = log_.WaitFor({other.id});
  for (const auto& [id, snapshot] : seen) {
    if (id == ep.id) {
      ASSERT_TRUE(snapshot);
      EXPECT_TRUE(snapshot->failing_since) << "the streak was undone by a stale read";
    }
  }
  EXPECT_TRUE(service_->GetEndpoint(ep.id)->failing_since);
  EXPECT_TRUE(service_->GetEndpoint(other.id));
}

}  // namespace
}  // namespace madeira::delivery
