// Conformance cases for cancel, replay, search, depths, schemas, restarts and concurrency.
#include <future>
#include <latch>
#include <set>
#include <stdexcept>
#include <thread>

#include "store/conformance/store_conformance.h"
#include "store/conformance/sync.h"

namespace madeira::store::testing {

using core::ErrorCode;
using core::TaskStatus;

namespace {
ReplayCheck AcceptAll() {
  return [](const core::Task&, const ReplayEdits&) -> Result<Unit> { return Unit{}; };
}
}  // namespace

TEST_P(StoreConformance, CancelFollowsTheStateRules) {
  core::TaskSpec scheduled = Spec("scheduled");
  scheduled.schedule_time = kT0 + 60'000;
  SubmitAll(
      {Spec("running"), Spec("retrying"), Spec("dead"), Spec("done"), Spec("pending"), scheduled});
  store::Lease running = LeaseOne();
  ASSERT_TRUE(Fail(LeaseOne().lease_id, Backoff(kT0 + 1'000)));
  MakeDead("dead");
  ASSERT_TRUE(Ack(LeaseOne().lease_id));
  auto cancel = [&](const std::string& id) {
    return Await<core::Task>([&](auto done) { store().Cancel(id, kT0 + 50, done); });
  };
  // A dead task waits for no attempt.
  EXPECT_FALSE(Get("dead").next_attempt_at);
  for (const char* id : {"scheduled", "pending", "retrying", "dead"}) {
    auto t = cancel(id);
    ASSERT_TRUE(t.has_value()) << id;
    EXPECT_EQ(t->status, TaskStatus::kCancelled) << id;
    EXPECT_FALSE(t->next_attempt_at) << id;
    EXPECT_EQ(Get(id).status, TaskStatus::kCancelled) << id;
    EXPECT_EQ(Get(id).updated_at, kT0 + 50) << id;
    EXPECT_FALSE(Get(id).next_attempt_at) << id;
  }
  EXPECT_EQ(cancel("running").error().code, ErrorCode::kTaskRunning);
  EXPECT_EQ(cancel("done").error().code, ErrorCode::kTaskTerminal);
  EXPECT_EQ(cancel("pending").error().code, ErrorCode::kTaskTerminal);
  EXPECT_EQ(cancel("nope").error().code, ErrorCode::kNotFound);
  // Cancelled tasks never come back.
  EXPECT_TRUE(Promote(kT0 + 120'000).empty());
  EXPECT_TRUE(LeaseFrom({"q"}, 10, kT0 + 120'000).leases.empty());
  EXPECT_TRUE(Ack(running.lease_id).has_value());
}

TEST_P(StoreConformance, ReplayMakesDeadTasksPendingWithEdits) {
  SubmitAll({Spec("a"), Spec("alive")});
  MakeDead("a", kT0 + 1);
  ReplayEdits edits;
  edits.payload = R"({"fixed":true})";
  edits.payload_version = 2;
  edits.max_retries = 9;
  auto replay = [&](DeadSelector sel, ReplayEdits e, ReplayCheck check, Millis now) {
    return Await<std::vector<core::Task>>(
        [&](auto done) { store().Replay(sel, e, check, now, done); });
  };
  auto replayed = replay({{"a"}, {}}, edits, AcceptAll(), kT0 + 100).value();
  ASSERT_EQ(replayed.size(), 1u);
  core::Task t = Get("a");
  EXPECT_EQ(t.status, TaskStatus::kPending);
  EXPECT_EQ(t.retry_count, 0);
  EXPECT_EQ(t.spec.payload, R"({"fixed":true})");
  EXPECT_EQ(t.spec.payload_version, 2);
  EXPECT_EQ(t.spec.max_retries, 9);
  EXPECT_EQ(t.next_attempt_at, kT0 + 100);
  EXPECT_EQ(replayed[0].spec.payload, t.spec.payload);
  EXPECT_EQ(AttemptsOf("a").size(), 1u);
  store::Lease again = LeaseOne(kT0 + 100);
  EXPECT_EQ(again.task.spec.task_id, "alive");  // ready since kT0: ahead of the replayed task
  store::Lease replayed_lease = LeaseOne(kT0 + 100);
  EXPECT_EQ(replayed_lease.task.spec.task_id, "a");
  EXPECT_EQ(replayed_lease.task.attempts, 2);

  EXPECT_EQ(replay({{"a"}, {}}, {}, AcceptAll(), kT0).error().code, ErrorCode::kTaskNotDead);
  EXPECT_EQ(replay({{"nope"}, {}}, {}, AcceptAll(), kT0).error().code, ErrorCode::kNotFound);

  // A refused single replay returns the check's error and leaves the task dead.
  SubmitOne(Spec("b"));
  MakeDead("b", kT0 + 200);
  ReplayCheck refuse = [](const core::Task&, const ReplayEdits&) -> Result<Unit> {
    return core::MakeError(ErrorCode::kSchemaViolation, "bad payload");
  };
  EXPECT_EQ(replay({{"b"}, {}}, edits, refuse, kT0 + 300).error().code,
            ErrorCode::kSchemaViolation);
  EXPECT_EQ(Get("b").status, TaskStatus::kDead);
  EXPECT_EQ(Get("b").spec.payload, Spec("b").payload);
}

TEST_P(StoreConformance, BulkReplayAndCancelDeadSelectByIdsOrFilter) {
  auto make = [](std::string id, std::string type) {
    core::TaskSpec s = Spec(id);
    s.task_type = std::move(type);
    return s;
  };
  SubmitAll(
      {make("t1a", "t1"), make("t1b", "t1"), make("t2a", "t2"), make("t1c", "t1"), Spec("alive")});
  MakeDead("t1a", kT0 + 10);
  MakeDead("t1b", kT0 + 20);
  MakeDead("t2a", kT0 + 30);
  MakeDead("t1c", kT0 + 40);
  auto replay = [&](DeadSelector sel) {
    return Await<std::vector<core::Task>>(
               [&](auto done) { store().Replay(sel, {}, AcceptAll(), kT0 + 100, done); })
        .value();
  };
  auto cancel_dead = [&](DeadSelector sel) {
    return Await<int64_t>([&](auto done) { store().CancelDead(sel, kT0 + 100, done); }).value();
  };
  DeadSelector by_type_since;
  by_type_since.filter.task_type = "t1";
  by_type_since.filter.since = kT0 + 20;
  auto replayed = replay(by_type_since);
  std::set<std::string> ids;
  for (const auto& t : replayed) ids.insert(t.spec.task_id);
  EXPECT_EQ(ids, (std::set<std::string>{"t1b", "t1c"}));
  // Ids that are not dead (or unknown) are skipped in a bulk selector.
  EXPECT_EQ(cancel_dead({{"t1a", "t1b", "alive", "nope"}, {}}), 1);
  EXPECT_EQ(Get("t1a").status, TaskStatus::kCancelled);
  EXPECT_EQ(Get("alive").status, TaskStatus::kPending);
  DeadSelector by_queue;
  by_queue.filter.queue = "q";
  EXPECT_EQ(cancel_dead(by_queue), 1);
  EXPECT_EQ(Get("t2a").status, TaskStatus::kCancelled);
  EXPECT_EQ(cancel_dead(by_queue), 0);
}

TEST_P(StoreConformance, SearchFiltersAndPagesNewestFirst) {
  std::vector<core::TaskSpec> specs;
  for (int i = 0; i < 25; ++i) {
    core::TaskSpec s = Spec("s" + std::to_string(i));
    s.queue = i % 2 == 0 ? "even" : "odd";
    s.task_type = i % 3 == 0 ? "three" : "other";
    s.trace_id = i < 5 ? "trace-low" : "trace-" + std::to_string(i);
    s.owner = i % 5 == 0 ? "billing" : "orders";
    specs.push_back(s);
  }
  SubmitAll(specs);
  auto search = [&](SearchQuery q) {
    return Await<SearchPage>([&](auto done) { store().Search(q, done); }).value();
  };
  std::vector<std::string> seen;
  SearchQuery q;
  q.limit = 7;
  int pages = 0;
  for (;;) {
    SearchPage page = search(q);
    ++pages;
    for (const auto& t : page.tasks) seen.push_back(t.spec.task_id);
    if (!page.next_cursor) break;
    q.cursor = page.next_cursor;
  }
  EXPECT_EQ(pages, 4);
  ASSERT_EQ(seen.size(), 25u);
  for (int i = 0; i < 25; ++i) EXPECT_EQ(seen[i], "s" + std::to_string(24 - i));

  SearchQuery filtered;
  filtered.queue = "even";
  filtered.task_type = "three";  // i in {0, 6, 12, 18, 24}
  filtered.limit = 1000;
  auto page = search(filtered);
  ASSERT_EQ(page.tasks.size(), 5u);
  EXPECT_EQ(page.tasks.front().spec.task_id, "s24");
  EXPECT_FALSE(page.next_cursor);
  SearchQuery by_trace;
  by_trace.trace_id = "trace-low";
  EXPECT_EQ(search(by_trace).tasks.size(), 5u);
  SearchQuery by_owner;  // i in {0, 5, 10, 15, 20}
  by_owner.owner = "billing";
  auto billing = search(by_owner);
  ASSERT_EQ(billing.tasks.size(), 5u);
  EXPECT_EQ(billing.tasks.front().spec.task_id, "s20");
  for (const auto& t : billing.tasks) EXPECT_EQ(t.spec.owner, "billing");
  by_owner.trace_id = "trace-low";  // s0 only
  ASSERT_EQ(search(by_owner).tasks.size(), 1u);

  // Status and the time of death.
  MakeDead("s0", kT0 + 10);
  MakeDead("s1", kT0 + 20);
  SearchQuery dead;
  dead.status = TaskStatus::kDead;
  EXPECT_EQ(search(dead).tasks.size(), 2u);
  dead.dead_since = kT0 + 15;
  auto recent = search(dead);
  ASSERT_EQ(recent.tasks.size(), 1u);
  EXPECT_EQ(recent.tasks[0].spec.task_id, "s1");
  SearchQuery pending;
  pending.status = TaskStatus::kPending;
  pending.limit = 100;
  EXPECT_EQ(search(pending).tasks.size(), 23u);

  // Running tasks: found by status, newest first, paged, and no longer listed once acked.
  LeaseBatch leased = LeaseFrom({"odd", "even"}, 3, kT0 + 30);
  ASSERT_EQ(leased.leases.size(), 3u);
  SearchQuery running;
  running.status = TaskStatus::kRunning;
  running.limit = 2;
  SearchPage first = search(running);
  ASSERT_EQ(first.tasks.size(), 2u);
  ASSERT_TRUE(first.next_cursor);
  EXPECT_GT(first.tasks[0].seq, first.tasks[1].seq);
  running.cursor = first.next_cursor;
  SearchPage second = search(running);
  ASSERT_EQ(second.tasks.size(), 1u);
  EXPECT_FALSE(second.next_cursor);
  EXPECT_LT(second.tasks[0].seq, first.tasks[1].seq);
  for (const auto& t : {first.tasks[0], first.tasks[1], second.tasks[0]}) {
    EXPECT_EQ(t.status, TaskStatus::kRunning);
  }
  EXPECT_EQ(search(pending).tasks.size(), 20u);
  running.cursor.reset();
  running.queue = leased.leases[0].task.spec.queue;
  for (const auto& t : search(running).tasks) EXPECT_EQ(t.spec.queue, *running.queue);
  for (const auto& l : leased.leases) ASSERT_TRUE(Ack(l.lease_id, kT0 + 40));
  running.queue.reset();
  EXPECT_TRUE(search(running).tasks.empty());
  SearchQuery succeeded;
  succeeded.status = TaskStatus::kSucceeded;
  EXPECT_EQ(search(succeeded).tasks.size(), 3u);
}

// An operation that fails after it has already changed rows (here a bulk replay whose check
// throws on its second task) must leave nothing behind, while operations queued right around it
// (likely run in the same transaction) still land, counts included.
TEST_P(StoreConformance, OperationFailingAfterItsFirstWriteChangesNothing) {
  SubmitAll({Spec("d1"), Spec("d2")});
  MakeDead("d1", kT0 + 10);
  MakeDead("d2", kT0 + 20);
  ReplayCheck throw_on_second = [](const core::Task& task, const ReplayEdits&) -> Result<Unit> {
    if (task.spec.task_id == "d2") throw std::runtime_error("check exploded");
    return Unit{};
  };
  std::promise<Result<std::vector<SubmitOutcome>>> before;
  std::promise<Result<std::vector<core::Task>>> replay;
  std::promise<Result<std::vector<SubmitOutcome>>> after;
  store().Submit({Spec("before")}, kT0 + 30,
                 [&](Result<std::vector<SubmitOutcome>> r) { before.set_value(std::move(r)); });
  store().Replay({{"d1", "d2"}, {}}, {}, throw_on_second, kT0 + 30,
                 [&](Result<std::vector<core::Task>> r) { replay.set_value(std::move(r)); });
  store().Submit({Spec("after")}, kT0 + 30,
                 [&](Result<std::vector<SubmitOutcome>> r) { after.set_value(std::move(r)); });
  ASSERT_TRUE(before.get_future().get().has_value());
  auto replayed = replay.get_future().get();
  ASSERT_FALSE(replayed.has_value());
  EXPECT_EQ(replayed.error().code, ErrorCode::kInternal);
  ASSERT_TRUE(after.get_future().get().has_value());
  EXPECT_EQ(Get("d1").status, TaskStatus::kDead);
  EXPECT_EQ(Get("d2").status, TaskStatus::kDead);
  EXPECT_EQ(Get("before").status, TaskStatus::kPending);
  EXPECT_EQ(Get("after").status, TaskStatus::kPending);
  auto depths = DepthMap();
  EXPECT_EQ((depths[{"q", TaskStatus::kDead}]), 2);
  EXPECT_EQ((depths[{"q", TaskStatus::kPending}]), 2);
  // And it stays so across a reopen (the counts were written, not only kept in memory).
  Reopen();
  depths = DepthMap();
  EXPECT_EQ((depths[{"q", TaskStatus::kDead}]), 2);
  EXPECT_EQ((depths[{"q", TaskStatus::kPending}]), 2);
}

TEST_P(StoreConformance, DepthsCountTasksPerQueueAndState) {
  core::TaskSpec later = Spec("later");
  later.schedule_time = kT0 + 1'000;
  core::TaskSpec other = Spec("other");
  other.queue = "q2";
  SubmitAll({Spec("a"), Spec("b"), Spec("c"), Spec("d"), later, other});
  ASSERT_TRUE(Ack(LeaseOne().lease_id));                      // a
  ASSERT_TRUE(Fail(LeaseOne().lease_id, Backoff(kT0 + 10)));  // b
  MakeDead("c");
  LeaseOne();  // d
  using Key = std::pair<std::string, TaskStatus>;
  std::map<Key, int64_t> want{
      {{"q", TaskStatus::kSucceeded}, 1}, {{"q", TaskStatus::kRetrying}, 1},
      {{"q", TaskStatus::kDead}, 1},      {{"q", TaskStatus::kRunning}, 1},
      {{"q", TaskStatus::kScheduled}, 1}, {{"q2", TaskStatus::kPending}, 1}};
  EXPECT_EQ(DepthMap(), want);
  Reopen();
  EXPECT_EQ(DepthMap(), want);
}

TEST_P(StoreConformance, DepthsKeepAStateAQueueHasLeftAtZero) {
  SubmitAll({Spec("a")});
  ASSERT_TRUE(Ack(LeaseOne().lease_id));
  // So its gauges read 0 instead of vanishing from /metrics, whichever the store.
  using Key = std::pair<std::string, TaskStatus>;
  std::map<Key, int64_t> want{{{"q", TaskStatus::kPending}, 0},
                              {{"q", TaskStatus::kRunning}, 0},
                              {{"q", TaskStatus::kSucceeded}, 1}};
  EXPECT_EQ(DepthMapWithZeros(), want);
  Reopen();
  EXPECT_EQ(DepthMapWithZeros(), want);
}

TEST_P(StoreConformance, SchemasArePutReadAndListed) {
  auto put = [&](std::string type, int version, std::string schema) {
    SchemaRecord r{std::move(type), version, std::move(schema), kT0};
    return Await<Unit>([&](auto done) { store().PutSchema(r, done); });
  };
  ASSERT_TRUE(put("t", 1, R"({"type":"object"})"));
  ASSERT_TRUE(put("t", 2, R"({"type":"object","required":["a"]})"));
  ASSERT_TRUE(put("a", 1, R"({})"));
  auto got = Await<SchemaRecord>([&](auto done) { store().GetSchema("t", 2, done); });
  ASSERT_TRUE(got);
  EXPECT_EQ(got->schema, R"({"type":"object","required":["a"]})");
  EXPECT_EQ(got->created_at, kT0);
  auto missing = Await<SchemaRecord>([&](auto done) { store().GetSchema("t", 3, done); });
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  auto list = Await<std::vector<SchemaRecord>>([&](auto done) { store().ListSchemas(done); });
  ASSERT_EQ(list.value().size(), 3u);
  EXPECT_EQ(list.value()[0].task_type, "a");
  EXPECT_EQ(list.value()[2].version, 2);
}

TEST_P(StoreConformance, EverythingSurvivesCloseAndReopen) {
  core::TaskSpec later = Spec("later");
  later.schedule_time = kT0 + 1'000;
  SubmitAll({Spec("a"), Spec("b"), later});
  store::Lease a = LeaseOne(kT0, 5'000);
  MakeDead("b", kT0 + 1);
  ASSERT_TRUE(Await<Unit>([&](auto done) {
    store().PutSchema({"t", 1, R"({"type":"object"})", kT0}, done);
  }));
  Reopen();
  EXPECT_EQ(Get("later").status, TaskStatus::kScheduled);
  EXPECT_EQ(Get("b").status, TaskStatus::kDead);
  EXPECT_EQ(Get("a").status, TaskStatus::kRunning);
  EXPECT_EQ(AttemptsOf("b").size(), 1u);
  EXPECT_EQ(AttemptsOf("b")[0].outcome, core::AttemptOutcome::kFailed);
  auto schema = Await<SchemaRecord>([&](auto done) { store().GetSchema("t", 1, done); });
  EXPECT_TRUE(schema);
  // The lease is still the task's: it can be extended and acked after the restart.
  auto extended = Await<Millis>([&](auto done) {
    store().Extend({a.lease_id, 10'000, kT0 + 2}, done);
  });
  EXPECT_EQ(extended.value(), kT0 + 10'002);
  ASSERT_TRUE(Ack(a.lease_id, kT0 + 3));
  Reopen();
  EXPECT_EQ(Get("a").status, TaskStatus::kSucceeded);
  EXPECT_EQ(Get("a").result, R"({"ok":true})");
  EXPECT_EQ(Promote(kT0 + 1'000), (std::vector<std::string>{"q"}));
  store::Lease l = LeaseOne(kT0 + 1'000);
  EXPECT_EQ(l.task.spec.task_id, "later");
  EXPECT_EQ(l.fencing_token, 1);
}

TEST_P(StoreConformance, ConcurrentSubmitsAllLand) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2'000;
  std::latch all_done(kThreads * kPerThread);
  std::atomic<int> created{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        core::TaskSpec s = Spec("c" + std::to_string(t) + "-" + std::to_string(i));
        s.queue = "q" + std::to_string(t);
        store().Submit({s}, kT0, [&](Result<std::vector<SubmitOutcome>> r) {
          if (r && r->size() == 1 && (*r)[0].kind == SubmitKind::kCreated) ++created;
          all_done.count_down();
        });
      }
    });
  }
  for (auto& th : threads) th.join();
  all_done.wait();
  EXPECT_EQ(created.load(), kThreads * kPerThread);
  auto depths = DepthMap();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ((depths[{"q" + std::to_string(t), TaskStatus::kPending}]), kPerThread);
  }
  SearchQuery q;
  q.limit = 1000;
  std::set<std::string> seen;
  for (;;) {
    auto page = Await<SearchPage>([&](auto done) { store().Search(q, done); }).value();
    for (const auto& task : page.tasks) seen.insert(task.spec.task_id);
    if (!page.next_cursor) break;
    q.cursor = page.next_cursor;
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kThreads * kPerThread));
}

TEST_P(StoreConformance, ClosedStoreAnswersUnavailable) {
  auto ping = Await<Unit>([&](auto done) { store().Ping(done); });
  EXPECT_TRUE(ping);
  store().Close();
  store().Close();  // idempotent
  EXPECT_EQ(TryGet("a").error().code, ErrorCode::kUnavailable);
  auto submitted =
      Await<std::vector<SubmitOutcome>>([&](auto done) { store().Submit({Spec("a")}, kT0, done); });
  EXPECT_EQ(submitted.error().code, ErrorCode::kUnavailable);
}

}  // namespace madeira::store::testing
