// The fixture, and the cases for submit, due-time promotion and lease ordering.
#include "store/conformance/store_conformance.h"

#include <unistd.h>

#include <atomic>
#include <set>
#include <stdexcept>

#include "store/conformance/sync.h"

namespace madeira::store::testing {

using core::TaskStatus;

void StoreConformance::SetUp() {
  static std::atomic<int> counter{0};
  std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  for (char& c : name) {
    if (c == '/') c = '_';  // parameterised names read "Case/sqlite"
  }
  dir_ = std::filesystem::temp_directory_path() / ("madeira_store_" + std::to_string(::getpid()) +
                                                   "_" + std::to_string(counter++) + "_" + name);
  std::filesystem::remove_all(dir_);
  store_ = GetParam().open(dir_.string());
  ASSERT_NE(store_, nullptr);
}

void StoreConformance::TearDown() {
  if (store_) store_->Close();
  store_.reset();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void StoreConformance::Reopen() {
  store_->Close();
  store_.reset();
  store_ = GetParam().open(dir_.string());
  ASSERT_NE(store_, nullptr);
}

core::TaskSpec StoreConformance::Spec(const std::string& id) {
  core::TaskSpec s;
  s.task_id = id;
  s.task_type = "t";
  s.queue = "q";
  s.payload_version = 1;
  s.payload = R"({"id":")" + id + R"("})";
  s.schedule_time = kT0;
  s.trace_id = "trace-" + id;
  s.content_hash = "hash-" + id;
  return s;
}

std::vector<SubmitOutcome> StoreConformance::SubmitAll(const std::vector<core::TaskSpec>& specs,
                                                       Millis now) {
  return Await<std::vector<SubmitOutcome>>([&](auto done) { store().Submit(specs, now, done); })
      .value();
}

SubmitOutcome StoreConformance::SubmitOne(const core::TaskSpec& spec, Millis now) {
  return SubmitAll({spec}, now).at(0);
}

LeaseBatch StoreConformance::LeaseFrom(std::vector<std::string> queues, int max_tasks, Millis now,
                                       std::map<std::string, std::vector<int>> task_types,
                                       std::optional<Millis> lease_ms,
                                       const std::string& worker_id) {
  LeaseRequest r;
  r.worker_id = worker_id;
  r.queues = std::move(queues);
  r.task_types = std::move(task_types);
  r.max_tasks = max_tasks;
  r.lease_ms = lease_ms;
  r.now = now;
  return Await<LeaseBatch>([&](auto done) { store().Lease(r, done); }).value();
}

store::Lease StoreConformance::LeaseOne(Millis now, std::optional<Millis> lease_ms) {
  LeaseBatch batch = LeaseFrom({"q"}, 1, now, {}, lease_ms);
  EXPECT_EQ(batch.leases.size(), 1u);
  if (batch.leases.empty()) throw std::runtime_error("nothing to lease");
  return batch.leases.front();
}

Result<AttemptReport> StoreConformance::Ack(const std::string& lease_id, Millis now, Millis ttl) {
  AckRequest r;
  r.lease_id = lease_id;
  r.result = R"({"ok":true})";
  r.now = now;
  r.idempotency_ttl = ttl;
  return Await<AttemptReport>([&](auto done) { store().Ack(r, done); });
}

Result<AttemptReport> StoreConformance::Fail(const std::string& lease_id,
                                             core::RetryDecision decision, Millis now) {
  FailRequest r;
  r.lease_id = lease_id;
  r.failure.error = R"({"type":"E","message":"boom"})";
  r.now = now;
  RetryDecider decide = [decision](const core::Task&, const core::Failure&, int) {
    return decision;
  };
  return Await<AttemptReport>([&](auto done) { store().Fail(r, decide, done); });
}

void StoreConformance::MakeDead(const std::string& task_id, Millis now) {
  LeaseBatch batch = LeaseFrom({Get(task_id).spec.queue}, 1, now);
  ASSERT_EQ(batch.leases.size(), 1u);
  ASSERT_EQ(batch.leases[0].task.spec.task_id, task_id);
  ASSERT_TRUE(Fail(batch.leases[0].lease_id, Dead(), now).has_value());
}

Result<core::Task> StoreConformance::TryGet(const std::string& task_id) {
  return Await<core::Task>([&](auto done) { store().Get(task_id, done); });
}

core::Task StoreConformance::Get(const std::string& task_id) { return TryGet(task_id).value(); }

std::vector<core::Attempt> StoreConformance::AttemptsOf(const std::string& task_id) {
  return Await<std::vector<core::Attempt>>([&](auto done) { store().Attempts(task_id, done); })
      .value();
}

std::vector<std::string> StoreConformance::Promote(Millis now) {
  return Await<std::vector<std::string>>([&](auto done) { store().PromoteDue(now, done); }).value();
}

std::map<std::pair<std::string, TaskStatus>, int64_t> StoreConformance::DepthMapWithZeros() {
  auto rows = Await<std::vector<DepthRow>>([&](auto done) { store().Depths(done); }).value();
  std::map<std::pair<std::string, TaskStatus>, int64_t> m;
  for (const DepthRow& r : rows) m[{r.queue, r.state}] = r.count;
  return m;
}

std::map<std::pair<std::string, TaskStatus>, int64_t> StoreConformance::DepthMap() {
  auto m = DepthMapWithZeros();
  std::erase_if(m, [](const auto& row) { return row.second == 0; });
  return m;
}

TEST_P(StoreConformance, SubmitThenGetRoundTripsEveryField) {
  core::TaskSpec s = Spec("a");
  s.task_type = "order.close_timeout";
  s.queue = "orders";
  s.payload_version = 3;
  s.payload = R"({"order_id":202509110001,"store_id":"S10086"})";
  s.schedule_time = kT0 - 50;
  s.timeout_ms = 12'345;
  s.max_retries = 7;
  s.priority = 250;
  s.trace_id = "trace-7a8b9c";
  s.idempotency_key = "order.close:202509110001";
  s.content_hash = "abc123";
  s.owner = "orders-service";
  SubmitOutcome out = SubmitOne(s);
  EXPECT_EQ(out.kind, SubmitKind::kCreated);
  EXPECT_EQ(out.task_id, "a");
  EXPECT_EQ(out.status, TaskStatus::kPending);

  core::Task t = Get("a");
  EXPECT_EQ(t.spec.task_id, s.task_id);
  EXPECT_EQ(t.spec.task_type, s.task_type);
  EXPECT_EQ(t.spec.queue, s.queue);
  EXPECT_EQ(t.spec.payload_version, s.payload_version);
  EXPECT_EQ(t.spec.payload, s.payload);
  EXPECT_EQ(t.spec.schedule_time, s.schedule_time);
  EXPECT_EQ(t.spec.timeout_ms, s.timeout_ms);
  EXPECT_EQ(t.spec.max_retries, s.max_retries);
  EXPECT_EQ(t.spec.priority, s.priority);
  EXPECT_EQ(t.spec.trace_id, s.trace_id);
  EXPECT_EQ(t.spec.idempotency_key, s.idempotency_key);
  EXPECT_EQ(t.spec.content_hash, s.content_hash);
  EXPECT_EQ(t.spec.owner, s.owner);
  EXPECT_EQ(t.status, TaskStatus::kPending);
  EXPECT_EQ(t.retry_count, 0);
  EXPECT_EQ(t.attempts, 0);
  EXPECT_EQ(t.created_at, kT0);
  EXPECT_EQ(t.updated_at, kT0);
  EXPECT_EQ(t.next_attempt_at, s.schedule_time);
  EXPECT_FALSE(t.last_error);
  EXPECT_FALSE(t.result);
  EXPECT_FALSE(t.deduplicated);
  EXPECT_EQ(t.fast_retries_used, 0);
  EXPECT_FALSE(t.in_fast_retry);
  EXPECT_GT(t.seq, 0);

  SubmitOne(Spec("b"));
  EXPECT_FALSE(Get("b").spec.idempotency_key);
  EXPECT_EQ(Get("b").spec.owner, "");
  // Whose it is stays with the task once it ended (read from the record, on a shared store).
  auto batch = LeaseFrom({"orders"}, 1);
  ASSERT_EQ(batch.leases.size(), 1u);
  EXPECT_EQ(batch.leases[0].task.spec.owner, s.owner);
  ASSERT_TRUE(Ack(batch.leases[0].lease_id, kT0 + 1));
  EXPECT_EQ(Get("a").status, TaskStatus::kSucceeded);
  EXPECT_EQ(Get("a").spec.owner, s.owner);
  EXPECT_GT(Get("b").seq, t.seq);
  EXPECT_EQ(TryGet("nope").error().code, core::ErrorCode::kNotFound);
}

TEST_P(StoreConformance, SameIdIsDuplicateWithSameContentElseConflict) {
  SubmitOne(Spec("a"));
  SubmitOutcome dup = SubmitOne(Spec("a"), kT0 + 5);
  EXPECT_EQ(dup.kind, SubmitKind::kDuplicate);
  EXPECT_EQ(dup.status, TaskStatus::kPending);
  core::TaskSpec other = Spec("a");
  other.content_hash = "different";
  other.payload = R"({"x":1})";
  EXPECT_EQ(SubmitOne(other).kind, SubmitKind::kConflict);
  EXPECT_EQ(Get("a").spec.payload, Spec("a").payload);
  EXPECT_EQ(Get("a").created_at, kT0);

  // Within one batch a repeated id is judged like a resubmit.
  core::TaskSpec b2 = Spec("b");
  b2.content_hash = "other";
  auto outs = SubmitAll({Spec("b"), Spec("b"), b2});
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(outs[0].kind, SubmitKind::kCreated);
  EXPECT_EQ(outs[1].kind, SubmitKind::kDuplicate);
  EXPECT_EQ(outs[2].kind, SubmitKind::kConflict);
  EXPECT_EQ((DepthMap()[{"q", TaskStatus::kPending}]), 2);

  // A duplicate reports the stored status.
  store::Lease l = LeaseOne();
  EXPECT_EQ(SubmitOne(Spec(l.task.spec.task_id)).status, TaskStatus::kRunning);
}

TEST_P(StoreConformance, LargeBatchJudgesEachTaskAsIfSubmittedAlone) {
  SubmitOne(Spec("old"));
  // 90 tasks (stores may write them many at a time): an id stored before, ids repeated close
  // together and far apart, a repeat with other content, and a scheduled task.
  std::vector<core::TaskSpec> specs;
  for (int i = 0; i < 90; ++i) specs.push_back(Spec("n" + std::to_string(i)));
  specs[10] = Spec("old");
  specs[21] = Spec("n20");
  specs[64] = Spec("n47");
  specs[80] = Spec("n5");
  specs[80].content_hash = "other";
  specs[85].schedule_time = kT0 + 60'000;
  auto outs = SubmitAll(specs);
  ASSERT_EQ(outs.size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    SubmitKind want = SubmitKind::kCreated;
    if (i == 10 || i == 21 || i == 64) want = SubmitKind::kDuplicate;
    if (i == 80) want = SubmitKind::kConflict;
    EXPECT_EQ(outs[i].kind, want) << i;
    EXPECT_EQ(outs[i].task_id, specs[i].task_id) << i;
    EXPECT_EQ(outs[i].status, i == 85 ? TaskStatus::kScheduled : TaskStatus::kPending) << i;
  }
  EXPECT_EQ((DepthMap()[{"q", TaskStatus::kPending}]), 1 + 90 - 4 - 1);
  EXPECT_EQ((DepthMap()[{"q", TaskStatus::kScheduled}]), 1);
  // Submit order is kept: each new task comes after the one before it.
  EXPECT_LT(Get("n0").seq, Get("n20").seq);
  EXPECT_LT(Get("n20").seq, Get("n63").seq);
  EXPECT_LT(Get("n63").seq, Get("n89").seq);
  EXPECT_EQ(Get("n5").spec.content_hash, "hash-n5");
}

TEST_P(StoreConformance, FutureScheduleIsScheduledElsePending) {
  core::TaskSpec later = Spec("later");
  later.schedule_time = kT0 + 1;
  core::TaskSpec now = Spec("now");
  core::TaskSpec past = Spec("past");
  past.schedule_time = kT0 - 1000;
  auto outs = SubmitAll({later, now, past});
  EXPECT_EQ(outs[0].status, TaskStatus::kScheduled);
  EXPECT_EQ(outs[1].status, TaskStatus::kPending);
  EXPECT_EQ(outs[2].status, TaskStatus::kPending);
  EXPECT_EQ(Get("later").next_attempt_at, kT0 + 1);
  LeaseBatch batch = LeaseFrom({"q"}, 10, kT0 + 5);  // not promoted yet: stays put
  EXPECT_EQ(LeasedIds(batch), (std::vector<std::string>{"past", "now"}));
}

TEST_P(StoreConformance, PromotesAtExactlyTheDueTime) {
  core::TaskSpec s = Spec("a");
  s.schedule_time = kT0 + 1000;
  core::TaskSpec other = Spec("b");
  other.queue = "q2";
  other.schedule_time = kT0 + 1000;
  SubmitAll({s, other});
  EXPECT_TRUE(Promote(kT0 + 999).empty());
  EXPECT_EQ(Get("a").status, TaskStatus::kScheduled);
  EXPECT_TRUE(LeaseFrom({"q"}, 1, kT0 + 999).leases.empty());
  auto queues = Promote(kT0 + 1000);
  std::multiset<std::string> got(queues.begin(), queues.end());
  EXPECT_EQ(got, (std::multiset<std::string>{"q", "q2"}));
  EXPECT_EQ(Get("a").status, TaskStatus::kPending);
  EXPECT_TRUE(Promote(kT0 + 2000).empty());
  Lease lease = LeaseOne(kT0 + 1500);
  EXPECT_EQ(lease.task.spec.task_id, "a");
  EXPECT_EQ(lease.ready_at, kT0 + 1000);  // the dispatch-latency metric starts here
}

TEST_P(StoreConformance, LeasesByPriorityThenReadyTimeThenSubmitOrderAcrossQueues) {
  auto make = [](std::string id, std::string queue, int prio, Millis ready) {
    core::TaskSpec s = Spec(id);
    s.queue = std::move(queue);
    s.priority = prio;
    s.schedule_time = ready;
    return s;
  };
  SubmitAll(
      {make("a", "q1", 100, kT0), make("b", "q1", 200, kT0 + 2), make("c", "q2", 200, kT0 + 1),
       make("d", "q2", 100, kT0 - 5), make("e", "q1", 100, kT0), make("x", "q3", 999, kT0 - 9)},
      kT0 + 10);
  LeaseBatch batch = LeaseFrom({"q1", "q2"}, 10, kT0 + 10);
  EXPECT_EQ(LeasedIds(batch), (std::vector<std::string>{"c", "b", "d", "a", "e"}));
  for (const auto& l : batch.leases) {
    EXPECT_EQ(l.task.status, TaskStatus::kRunning);
    EXPECT_EQ(l.task.attempts, 1);
    EXPECT_EQ(l.fencing_token, 1);
  }
  EXPECT_EQ(LeasedIds(LeaseFrom({"q3"}, 10, kT0 + 10)), (std::vector<std::string>{"x"}));
}

TEST_P(StoreConformance, TaskTypesRestrictTypesAndPayloadVersions) {
  core::TaskSpec v2 = Spec("v2");
  v2.payload_version = 2;
  core::TaskSpec v1 = Spec("v1");
  core::TaskSpec other = Spec("other");
  other.task_type = "u";
  SubmitAll({v2, v1, other});
  EXPECT_EQ(LeasedIds(LeaseFrom({"q"}, 5, kT0, {{"t", {1}}})), (std::vector<std::string>{"v1"}));
  EXPECT_TRUE(LeaseFrom({"q"}, 5, kT0, {{"t", {1}}}).leases.empty());
  EXPECT_EQ(LeasedIds(LeaseFrom({"q"}, 5, kT0, {{"t", {1, 2}}})), (std::vector<std::string>{"v2"}));
  EXPECT_EQ(LeasedIds(LeaseFrom({"q"}, 5, kT0)), (std::vector<std::string>{"other"}));
}

TEST_P(StoreConformance, LeaseHonoursMaxTasks) {
  SubmitAll({Spec("a"), Spec("b"), Spec("c"), Spec("d"), Spec("e")});
  EXPECT_EQ(LeasedIds(LeaseFrom({"q"}, 3)), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(LeasedIds(LeaseFrom({"q"}, 3)), (std::vector<std::string>{"d", "e"}));
  EXPECT_TRUE(LeaseFrom({"q"}, 3).leases.empty());
  EXPECT_TRUE(LeaseFrom({"nothing-here"}, 3).leases.empty());
}

TEST_P(StoreConformance, LeaseDeadlineIsLeaseMsCappedByTimeout) {
  core::TaskSpec s = Spec("a");
  s.timeout_ms = 10'000;
  SubmitAll({s, Spec("b"), Spec("c")});
  EXPECT_EQ(LeaseOne(kT0, 2'000).deadline, kT0 + 2'000);
  EXPECT_EQ(LeaseOne(kT0, 99'000).deadline, kT0 + core::kDefaultTimeoutMs);
  EXPECT_EQ(LeaseOne(kT0).deadline, kT0 + core::kDefaultTimeoutMs);
}

}  // namespace madeira::store::testing
