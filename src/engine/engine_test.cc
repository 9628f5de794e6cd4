// Engine behaviour over the real SQLite store, with a FakeClock: time moves by hand, never by
// sleeping. Long-poll tests use real (short) waits because long-polling is about wall time.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <chrono>
#include <filesystem>
#include <future>
#include <thread>

#include "core/time.h"
#include "store/conformance/forwarding_store.h"
#include "store/sqlite/sqlite_store.h"

namespace madeira::engine {

using core::TaskStatus;
namespace json = boost::json;

template <typename T, typename Start>
Result<T> Await(Start&& start) {
  std::promise<Result<T>> promise;
  auto future = promise.get_future();
  start([&promise](Result<T> r) { promise.set_value(std::move(r)); });
  return future.get();
}

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(EngineConfig{}); }
  void TearDown() override { Close(); }

  void Open(EngineConfig config) {
    dir_ = std::filesystem::temp_directory_path() /
           ("madeira-engine-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    store_ = OpenTestStore(dir_.string());
    io_.restart();  // after a Close() the context was stopped
    work_.emplace(io_.get_executor());
    io_thread_ = std::thread([this] { io_.run(); });
    engine_ = std::make_unique<Engine>(io_.get_executor(), EngineStore(), clock_, random_, metrics_,
                                       std::move(config));
    ASSERT_TRUE(Await<store::Unit>([&](auto cb) { engine_->Start(cb); }));
  }

  void Close() {
    if (!engine_) return;
    engine_->Stop();
    engine_.reset();
    store_->Close();
    work_.reset();
    io_.stop();
    io_thread_.join();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  static std::unique_ptr<store::Store> OpenTestStore(const std::string& dir);
  // The store the engine uses: store_ itself, or a test's stand-in around it.
  virtual store::Store& EngineStore() { return *store_; }

  Result<store::SubmitOutcome> Submit(const std::string& envelope) {
    auto results = Await<std::vector<Result<store::SubmitOutcome>>>(
        [&](auto cb) { engine_->Submit({json::parse(envelope)}, "", cb); });
    EXPECT_TRUE(results);
    return results->front();
  }

  std::vector<store::Lease> Lease(const std::string& queue, int max = 10, Millis wait_ms = 0,
                                  std::map<std::string, std::vector<int>> types = {},
                                  std::optional<Millis> lease_ms = std::nullopt) {
    LeaseParams p;
    p.worker_id = "w1";
    p.queues = {queue};
    p.max_tasks = max;
    p.wait_ms = wait_ms;
    p.task_types = std::move(types);
    p.lease_ms = lease_ms;
    auto leases = Await<std::vector<store::Lease>>([&](auto cb) { engine_->Lease(p, cb); });
    EXPECT_TRUE(leases);
    return leases ? *leases : std::vector<store::Lease>{};
  }

  Result<FailResult> Fail(const std::string& lease_id, core::RetryMode mode,
                          std::optional<Millis> retry_after = std::nullopt) {
    FailParams p;
    p.lease_id = lease_id;
    p.error = R"({"type":"Boom","message":"it broke"})";
    p.retry = mode;
    p.retry_after_ms = retry_after;
    return Await<FailResult>([&](auto cb) { engine_->Fail(p, cb); });
  }

  core::Task Get(const std::string& id) {
    auto t = Await<core::Task>([&](auto cb) { engine_->Get(id, cb); });
    EXPECT_TRUE(t);
    return t ? *t : core::Task{};
  }

  void RunDueWork() {
    ASSERT_TRUE(Await<store::Unit>([&](auto cb) { engine_->RunDueWork(cb); }));
  }

  std::filesystem::path dir_;
  core::FakeClock clock_;
  // NextUnit() == 0.5: no jitter. Constant, so server-made ids repeat: tests name their tasks.
  core::SequenceRandom random_{0x8000000000000000ULL};
  core::Metrics metrics_;
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::thread io_thread_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineTest, BatchSubmitJudgesEachEnvelopeAlone) {
  auto results = Await<std::vector<Result<store::SubmitOutcome>>>([&](auto cb) {
    engine_->Submit(
        {json::parse(R"({"task_type":"a","payload_version":1,"payload":{}})"),
         json::parse(R"({"task_type":"a","payload_version":1,"payload":{},"priority":5000})"),
         json::parse(R"({"task_id":"x1","task_type":"a","payload_version":1,"payload":{}})")},
        "", cb);
  });
  ASSERT_TRUE(results);
  ASSERT_EQ(results->size(), 3u);
  EXPECT_TRUE((*results)[0]);
  ASSERT_FALSE((*results)[1]);
  EXPECT_EQ((*results)[1].error().field, "priority");
  ASSERT_TRUE((*results)[2]);
  EXPECT_EQ((*results)[2]->task_id, "x1");
}

TEST_F(EngineTest, SameIdSameContentIsDuplicateDifferentContentConflicts) {
  const char* body = R"({"task_id":"t1","task_type":"a","payload_version":1,"payload":{"n":1}})";
  ASSERT_EQ(Submit(body)->kind, store::SubmitKind::kCreated);
  ASSERT_EQ(Submit(body)->kind, store::SubmitKind::kDuplicate);
  auto conflict =
      Submit(R"({"task_id":"t1","task_type":"a","payload_version":1,"payload":{"n":2}})");
  ASSERT_FALSE(conflict);
  EXPECT_EQ(conflict.error().code, core::ErrorCode::kTaskIdConflict);
}

TEST_F(EngineTest, SchemaRejectsBadAndUnknownProperties) {
  ASSERT_TRUE(Await<store::Unit>([&](auto cb) {
    engine_->PutSchema("order.close", 1, json::parse(R"({"type":"object","required":["order_id"],
                                       "properties":{"order_id":{"type":"integer"}}})"),
                       cb);
  }));
  EXPECT_TRUE(Submit(
      R"({"task_id":"ok","task_type":"order.close","payload_version":1,"payload":{"order_id":7}})"));
  auto wrong_type =
      Submit(R"({"task_type":"order.close","payload_version":1,"payload":{"order_id":"7"}})");
  ASSERT_FALSE(wrong_type);
  EXPECT_EQ(wrong_type.error().code, core::ErrorCode::kSchemaViolation);
  auto unknown = Submit(
      R"({"task_type":"order.close","payload_version":1,"payload":{"order_id":7,"extra":1}})");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, core::ErrorCode::kSchemaViolation);
  // Version 2 has no schema: anything goes.
  EXPECT_TRUE(Submit(
      R"({"task_id":"v2","task_type":"order.close","payload_version":2,"payload":{"x":1}})"));
}

// The engine over a store that other processes share, whose schemas one of them changes: its
// set's version moves on, and submits validated against an older one are refused as stale.
class SharedSchemasStore final : public store::testing::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  bool SharedByProcesses() const override { return true; }
  // What another process's PutSchema does: the schema stored, a new version of the set.
  void PutFromElsewhere(store::SchemaRecord schema) {
    ASSERT_TRUE(Await<store::Unit>([&](auto cb) { inner().PutSchema(std::move(schema), cb); }));
    std::lock_guard lock(mu_);
    ++version_;
  }
  // From now on every read finds a version that is already old: the schemas never settle.
  void KeepChanging() {
    std::lock_guard lock(mu_);
    keep_changing_ = true;
    ++version_;
  }
  int stale_answers() {
    std::lock_guard lock(mu_);
    return stale_answers_;
  }

  void ListSchemaSet(store::Callback<store::SchemaSet> done) override {
    std::string version;
    {
      std::lock_guard lock(mu_);
      version = std::to_string(version_);
      if (keep_changing_) ++version_;
    }
    inner().ListSchemas([version, done](Result<std::vector<store::SchemaRecord>> schemas) {
      if (!schemas) return done(schemas.error());
      done(store::SchemaSet{std::move(*schemas), version});
    });
  }
  void SubmitValidated(std::vector<core::TaskSpec> tasks, Millis now, std::string version,
                       store::Callback<std::vector<store::SubmitOutcome>> done) override {
    bool stale = false;
    {
      std::lock_guard lock(mu_);
      stale = version != std::to_string(version_);
      if (stale) ++stale_answers_;
    }
    if (!stale) return inner().Submit(std::move(tasks), now, std::move(done));
    std::vector<store::SubmitOutcome> out(tasks.size());
    for (auto& o : out) o.kind = store::SubmitKind::kStaleSchemas;
    done(std::move(out));
  }

 private:
  std::mutex mu_;
  int version_ = 0;
  bool keep_changing_ = false;
  int stale_answers_ = 0;
};

class SharedStoreEngineTest : public EngineTest {
 protected:
  store::Store& EngineStore() override {
    shared_ = std::make_unique<SharedSchemasStore>(*store_);
    return *shared_;
  }
  void TearDown() override {
    Close();
    shared_.reset();
  }
  std::unique_ptr<SharedSchemasStore> shared_;
};

TEST_F(SharedStoreEngineTest, ASchemaPutThroughAnotherProcessHoldsForTheNextSubmit) {
  shared_->PutFromElsewhere({"order.close", 1,
                             R"({"type":"object","properties":{"order_id":{"type":"integer"}}})",
                             clock_.Now()});
  // Validated against the set read at start (no schema), refused as stale, read again and
  // validated against the new one.
  auto bad = Submit(R"({"task_id":"bad","task_type":"order.close","payload_version":1,
                        "payload":{"order_id":"7"}})");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, core::ErrorCode::kSchemaViolation);
  EXPECT_EQ(shared_->stale_answers(), 1);
  auto stored = Await<core::Task>([&](auto cb) { engine_->Get("bad", cb); });
  ASSERT_FALSE(stored);  // never stored
  EXPECT_EQ(stored.error().code, core::ErrorCode::kNotFound);
  // From then on this process has the new set: no more refusals.
  EXPECT_TRUE(Submit(R"({"task_id":"good","task_type":"order.close","payload_version":1,
                         "payload":{"order_id":7}})"));
  EXPECT_EQ(shared_->stale_answers(), 1);
  EXPECT_EQ(Get("good").status, TaskStatus::kPending);
}

TEST_F(SharedStoreEngineTest, SchemasThatNeverSettleEndTheSubmitAsUnavailable) {
  shared_->KeepChanging();
  auto out = Submit(R"({"task_id":"unsettled","task_type":"order.close","payload_version":1,
                        "payload":{"order_id":7}})");
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code, core::ErrorCode::kUnavailable);
  EXPECT_EQ(shared_->stale_answers(), 4);  // the first try and three more, each after a read
}

TEST_F(EngineTest, InvalidSchemaIsRejectedAndChangesNothing) {
  auto r = Await<store::Unit>(
      [&](auto cb) { engine_->PutSchema("t", 1, json::parse(R"({"type":"no-such-type"})"), cb); });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, core::ErrorCode::kInvalidSchema);
  EXPECT_FALSE(Await<store::SchemaRecord>([&](auto cb) { engine_->GetSchema("t", 1, cb); }));
}

TEST_F(EngineTest, HigherPriorityFirstThenFifo) {
  Submit(R"({"task_id":"low","task_type":"a","payload_version":1,"payload":{},"priority":1})");
  clock_.Advance(1);
  Submit(R"({"task_id":"mid1","task_type":"a","payload_version":1,"payload":{}})");
  clock_.Advance(1);
  Submit(R"({"task_id":"mid2","task_type":"a","payload_version":1,"payload":{}})");
  clock_.Advance(1);
  Submit(R"({"task_id":"high","task_type":"a","payload_version":1,"payload":{},"priority":900})");
  auto leases = Lease("default", 10);
  ASSERT_EQ(leases.size(), 4u);
  EXPECT_EQ(leases[0].task.spec.task_id, "high");
  EXPECT_EQ(leases[1].task.spec.task_id, "mid1");
  EXPECT_EQ(leases[2].task.spec.task_id, "mid2");
  EXPECT_EQ(leases[3].task.spec.task_id, "low");
}

TEST_F(EngineTest, OldWorkerNeverReceivesNewerPayloadVersion) {
  Submit(R"({"task_id":"v2","task_type":"a","payload_version":2,"payload":{}})");
  Submit(R"({"task_id":"v1","task_type":"a","payload_version":1,"payload":{}})");
  auto leases = Lease("default", 10, 0, {{"a", {1}}});
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0].task.spec.task_id, "v1");
  EXPECT_EQ(Lease("default", 10, 0, {{"a", {2}}}).size(), 1u);
}

TEST_F(EngineTest, LongPollWakesOnSubmit) {
  auto started = std::chrono::steady_clock::now();
  auto parked = std::async(std::launch::async, [&] { return Lease("q", 1, 5000); });
  // Give the lease time to park, then submit; the lease must answer long before 5 s.
  for (int i = 0;
       i < 100 && parked.wait_for(std::chrono::milliseconds(10)) == std::future_status::timeout;
       ++i) {
  }
  Submit(R"({"task_id":"wake","task_type":"a","queue":"q","payload_version":1,"payload":{}})");
  auto leases = parked.get();
  auto elapsed = std::chrono::steady_clock::now() - started;
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0].task.spec.task_id, "wake");
  EXPECT_LT(elapsed, std::chrono::milliseconds(3000));
}

TEST_F(EngineTest, LongPollTimesOutEmpty) {
  auto started = std::chrono::steady_clock::now();
  EXPECT_TRUE(Lease("empty", 1, 200).empty());
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(190));
}

TEST_F(EngineTest, StopAnswersParkedLongPolls) {
  auto parked = std::async(std::launch::async, [&] { return Lease("q", 1, 20000); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let it park
  engine_->Stop();
  ASSERT_EQ(parked.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_TRUE(parked.get().empty());
}

TEST_F(EngineTest, DelayedTaskBecomesLeasableAtItsTime) {
  const Millis due = clock_.Now() + 60'000;
  Submit(
      R"({"task_id":"later","task_type":"a","payload_version":1,"payload":{},"schedule_time":")" +
      core::FormatRfc3339(due) + R"("})");
  EXPECT_EQ(Get("later").status, TaskStatus::kScheduled);
  clock_.Set(due - 1);
  RunDueWork();
  EXPECT_TRUE(Lease("default").empty());
  clock_.Set(due);
  RunDueWork();
  auto leases = Lease("default");
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0].task.spec.task_id, "later");
}

TEST_F(EngineTest, WithoutTheSchedulerDutyDueTasksWaitForAnotherProcess) {
  EngineConfig api_only;
  api_only.run_timers = false;  // --role api
  Close();
  Open(api_only);  // this engine's own timer must not promote the task behind the test's back
  const Millis due = clock_.Now() + 60'000;
  Submit(R"({"task_id":"later","task_type":"a","payload_version":1,"payload":{},)"
         R"("schedule_time":")" +
         core::FormatRfc3339(due) + R"("})");
  clock_.Set(due + 1);
  // A second process on the same store with --role api: its start-up promotes nothing.
  Engine api(io_.get_executor(), *store_, clock_, random_, metrics_, api_only);
  ASSERT_TRUE(Await<store::Unit>([&](auto cb) { api.Start(cb); }));
  EXPECT_EQ(Get("later").status, TaskStatus::kScheduled);
  RunDueWork();  // what a scheduler process does
  EXPECT_EQ(Get("later").status, TaskStatus::kPending);
  api.Stop();
}

TEST_F(EngineTest, FastRetryRequeuesAtOnceBackoffWaits) {
  Submit(R"({"task_id":"f","task_type":"a","payload_version":1,"payload":{}})");
  auto lease = Lease("default").at(0);
  auto fast = Fail(lease.lease_id, core::RetryMode::kFast);
  ASSERT_TRUE(fast);
  EXPECT_EQ(fast->status, TaskStatus::kPending);
  lease = Lease("default").at(0);
  EXPECT_EQ(lease.task.retry_count, 1);
  auto backoff = Fail(lease.lease_id, core::RetryMode::kBackoff);
  ASSERT_TRUE(backoff);
  EXPECT_EQ(backoff->status, TaskStatus::kRetrying);
  // First back-off retry: initial 30 s, no jitter with NextUnit() == 0.5.
  EXPECT_EQ(*backoff->next_attempt_at, clock_.Now() + 30'000);
  EXPECT_TRUE(Lease("default").empty());
  clock_.Advance(30'000);
  RunDueWork();
  EXPECT_EQ(Lease("default").size(), 1u);
}

TEST_F(EngineTest, FastRetryConcurrencyPerTypeFallsThroughToBackoff) {
  EngineConfig config;
  config.default_retry.fast_retry_concurrency = 2;
  Close();
  Open(config);
  for (int i = 0; i < 3; ++i) {
    Submit(R"({"task_id":"c)" + std::to_string(i) +
           R"(","task_type":"a","payload_version":1,"payload":{}})");
  }
  auto leases = Lease("default", 3);
  ASSERT_EQ(leases.size(), 3u);
  EXPECT_EQ(Fail(leases[0].lease_id, core::RetryMode::kFast)->status, TaskStatus::kPending);
  EXPECT_EQ(Fail(leases[1].lease_id, core::RetryMode::kFast)->status, TaskStatus::kPending);
  EXPECT_EQ(Fail(leases[2].lease_id, core::RetryMode::kFast)->status, TaskStatus::kRetrying);
}

TEST_F(EngineTest, RetriesSpentMakeTheTaskDeadAndReplayRevivesIt) {
  Submit(
      R"({"task_id":"d","task_type":"a","payload_version":1,"payload":{"v":1},"max_retries":1})");
  auto first = Lease("default").at(0);
  EXPECT_EQ(Fail(first.lease_id, core::RetryMode::kAuto, 0)->status, TaskStatus::kRetrying);
  RunDueWork();
  auto second = Lease("default").at(0);
  EXPECT_EQ(Fail(second.lease_id, core::RetryMode::kAuto)->status, TaskStatus::kDead);
  EXPECT_EQ(Get("d").status, TaskStatus::kDead);

  store::ReplayEdits edits;
  edits.payload = R"({"v":2})";
  edits.max_retries = 5;
  auto replayed = Await<core::Task>([&](auto cb) { engine_->Replay("d", edits, cb); });
  ASSERT_TRUE(replayed);
  auto task = Get("d");
  EXPECT_EQ(task.status, TaskStatus::kPending);
  EXPECT_EQ(task.retry_count, 0);
  EXPECT_EQ(task.spec.max_retries, 5);
  EXPECT_EQ(json::parse(task.spec.payload), json::parse(R"({"v":2})"));
  auto attempts = Await<std::vector<core::Attempt>>([&](auto cb) { engine_->Attempts("d", cb); });
  EXPECT_EQ(attempts->size(), 2u);  // history kept

  auto again = Await<core::Task>([&](auto cb) { engine_->Replay("d", edits, cb); });
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, core::ErrorCode::kTaskNotDead);
}

TEST_F(EngineTest, NeverRetryIsDeadAtOnce) {
  Submit(R"({"task_id":"n","task_type":"a","payload_version":1,"payload":{}})");
  auto lease = Lease("default").at(0);
  EXPECT_EQ(Fail(lease.lease_id, core::RetryMode::kNever)->status, TaskStatus::kDead);
}

TEST_F(EngineTest, ExpiredLeaseIsAFailedAttemptAndFencesTheOldWorker) {
  Submit(R"({"task_id":"e","task_type":"a","payload_version":1,"payload":{}})");
  auto stale = Lease("default", 1, 0, {}, 500).at(0);
  clock_.Advance(501);
  RunDueWork();
  auto attempts = Await<std::vector<core::Attempt>>([&](auto cb) { engine_->Attempts("e", cb); });
  ASSERT_EQ(attempts->size(), 1u);
  EXPECT_EQ(attempts->front().outcome, core::AttemptOutcome::kLeaseExpired);
  // A lease expiry takes a fast retry: ready again at once.
  auto fresh = Lease("default").at(0);
  EXPECT_NE(fresh.lease_id, stale.lease_id);
  EXPECT_GT(fresh.fencing_token, stale.fencing_token);
  auto lost = Await<store::Unit>([&](auto cb) { engine_->Ack(stale.lease_id, std::nullopt, cb); });
  ASSERT_FALSE(lost);
  EXPECT_EQ(lost.error().code, core::ErrorCode::kLeaseLost);
  EXPECT_TRUE(Await<store::Unit>([&](auto cb) { engine_->Ack(fresh.lease_id, "42", cb); }));
  EXPECT_EQ(Get("e").status, TaskStatus::kSucceeded);
}

TEST_F(EngineTest, ExtendNeverPassesTimeout) {
  Submit(R"({"task_id":"x","task_type":"a","payload_version":1,"payload":{},"timeout_ms":1000})");
  const Millis started = clock_.Now();
  auto lease = Lease("default", 1, 0, {}, 200).at(0);
  auto deadline = Await<Millis>([&](auto cb) { engine_->Extend(lease.lease_id, 60'000, cb); });
  ASSERT_TRUE(deadline);
  EXPECT_EQ(*deadline, started + 1000);
}

TEST_F(EngineTest, IdempotencyKeyRunsBusinessWorkOnce) {
  Submit(
      R"({"task_id":"k1","task_type":"a","payload_version":1,"payload":{},"idempotency_key":"order:1"})");
  Submit(
      R"({"task_id":"k2","task_type":"a","payload_version":1,"payload":{},"idempotency_key":"order:1"})");
  auto leases = Lease("default", 10);
  ASSERT_EQ(leases.size(), 1u);  // single-flight: k2 waits while k1 runs
  ASSERT_TRUE(Await<store::Unit>([&](auto cb) { engine_->Ack(leases[0].lease_id, "{}", cb); }));
  EXPECT_TRUE(Lease("default", 10).empty());  // k2 completed without a worker
  auto k2 = Get("k2");
  EXPECT_EQ(k2.status, TaskStatus::kSucceeded);
  EXPECT_TRUE(k2.deduplicated);
}

TEST_F(EngineTest, RetryPolicyPerTaskType) {
  EngineConfig config;
  core::RetryPolicy quick;
  quick.initial = 1000;
  config.retry_by_type["order.close"] = quick;
  Close();
  Open(config);
  Submit(R"({"task_id":"p","task_type":"order.close","payload_version":1,"payload":{}})");
  auto lease = Lease("default").at(0);
  auto failed = Fail(lease.lease_id, core::RetryMode::kBackoff);
  EXPECT_EQ(*failed->next_attempt_at, clock_.Now() + 1000);
}

TEST_F(EngineTest, MetricsCountSubmitsOutcomesAndDeadLetters) {
  Submit(
      R"({"task_id":"m","task_type":"mt","queue":"mq","payload_version":1,"payload":{},"max_retries":0})");
  auto lease = Lease("mq").at(0);
  Fail(lease.lease_id, core::RetryMode::kAuto);
  ASSERT_TRUE(Await<store::Unit>([&](auto cb) { engine_->RefreshGauges(cb); }));
  const std::string text = metrics_.RenderPrometheus();
  EXPECT_NE(text.find(R"(madeira_tasks_submitted_total{queue="mq",task_type="mt"} 1)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(madeira_dead_letters_total{queue="mq",task_type="mt"} 1)"),
            std::string::npos);
  EXPECT_NE(text.find(R"(madeira_task_outcomes_total{task_type="mt",outcome="failed"} 1)"),
            std::string::npos);
  EXPECT_NE(text.find(R"(madeira_queue_depth{queue="mq",state="dead"} 1)"), std::string::npos);
}

}  // namespace madeira::engine

namespace madeira::engine {
std::unique_ptr<store::Store> EngineTest::OpenTestStore(const std::string& dir) {
  auto opened = store::OpenSqliteStore(dir);
  if (!opened) throw std::runtime_error("cannot open test store: " + opened.error().message);
  return std::move(*opened);
}
}  // namespace madeira::engine
