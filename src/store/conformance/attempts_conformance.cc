// Conformance cases for the end of an attempt: fencing, extend, fail, lease expiry, the attempt
// log, idempotency keys and wake-up times.
#include "store/conformance/store_conformance.h"
#include "store/conformance/sync.h"

namespace madeira::store::testing {

using core::TaskStatus;

namespace {

// Records what the store tells the retry policy, and answers with a fixed decision.
struct RecordingDecider {
  explicit RecordingDecider(core::RetryDecision d) : decision(d) {}

  core::RetryDecision decision;
  std::vector<int> fast_in_flight;
  std::vector<core::Failure> failures;
  std::vector<core::Task> tasks;

  RetryDecider Fn() {
    return [this](const core::Task& t, const core::Failure& f, int fast) {
      tasks.push_back(t);
      failures.push_back(f);
      fast_in_flight.push_back(fast);
      return decision;
    };
  }
};

}  // namespace

TEST_P(StoreConformance, AckIsFencedByTheCurrentLease) {
  SubmitOne(Spec("a"));
  store::Lease first = LeaseOne(kT0, 1'000);
  RecordingDecider decider{FastRetry(kT0 + 1'000)};
  auto expired = Await<std::vector<AttemptReport>>(
      [&](auto done) { store().ExpireLeases(kT0 + 1'000, decider.Fn(), done); });
  ASSERT_EQ(expired.value().size(), 1u);
  store::Lease second = LeaseOne(kT0 + 1'000);
  EXPECT_NE(second.lease_id, first.lease_id);
  EXPECT_EQ(second.fencing_token, first.fencing_token + 1);
  EXPECT_EQ(second.task.attempts, 2);

  EXPECT_EQ(Ack(first.lease_id, kT0 + 1'001).error().code, core::ErrorCode::kLeaseLost);
  EXPECT_EQ(Fail(first.lease_id, Dead(), kT0 + 1'001).error().code, core::ErrorCode::kLeaseLost);
  auto acked = Ack(second.lease_id, kT0 + 1'002);
  ASSERT_TRUE(acked.has_value());
  EXPECT_EQ(acked->task.status, TaskStatus::kSucceeded);
  EXPECT_EQ(acked->task.result, R"({"ok":true})");
  EXPECT_EQ(acked->attempt_started_at, kT0 + 1'000);
  // What the engine's metrics and wake-ups read of an acked task.
  EXPECT_EQ(acked->task.spec.task_id, "a");
  EXPECT_EQ(acked->task.spec.task_type, Spec("a").task_type);
  EXPECT_EQ(acked->task.spec.queue, Spec("a").queue);
  EXPECT_EQ(acked->task.attempts, 2);
  EXPECT_EQ(Ack(second.lease_id, kT0 + 1'003).error().code, core::ErrorCode::kLeaseLost);
  EXPECT_EQ(Ack("no-such-lease").error().code, core::ErrorCode::kLeaseLost);
  EXPECT_EQ(Get("a").status, TaskStatus::kSucceeded);
  EXPECT_EQ(Get("a").result, R"({"ok":true})");
}

TEST_P(StoreConformance, AckBatchAnswersEachAckAlone) {
  SubmitAll({Spec("a"), Spec("b")});
  LeaseBatch batch = LeaseFrom({"q"}, 2);
  ASSERT_EQ(batch.leases.size(), 2u);
  // a, b, a again (already acked by then: lost), and an id no lease ever had.
  std::vector<std::string> ids = {batch.leases[0].lease_id, batch.leases[1].lease_id,
                                  batch.leases[0].lease_id, "no-such-lease"};
  std::vector<AckRequest> requests;
  std::vector<std::future<Result<AttemptReport>>> answers;
  std::vector<Callback<AttemptReport>> done;
  for (const std::string& id : ids) {
    AckRequest r;
    r.lease_id = id;
    r.result = R"({"ok":true})";
    r.now = kT0 + 1;
    requests.push_back(r);
    auto promise = std::make_shared<std::promise<Result<AttemptReport>>>();
    answers.push_back(promise->get_future());
    done.push_back([promise](Result<AttemptReport> r) { promise->set_value(std::move(r)); });
  }
  store().AckBatch(std::move(requests), std::move(done));
  std::vector<Result<AttemptReport>> got;
  for (auto& a : answers) got.push_back(a.get());
  ASSERT_TRUE(got[0].has_value());
  ASSERT_TRUE(got[1].has_value());
  EXPECT_EQ(got[0]->task.spec.task_id, batch.leases[0].task.spec.task_id);
  EXPECT_EQ(got[1]->task.spec.task_id, batch.leases[1].task.spec.task_id);
  EXPECT_EQ(got[2].error().code, core::ErrorCode::kLeaseLost);
  EXPECT_EQ(got[3].error().code, core::ErrorCode::kLeaseLost);
  EXPECT_EQ(Get("a").status, TaskStatus::kSucceeded);
  EXPECT_EQ(Get("b").status, TaskStatus::kSucceeded);
  EXPECT_EQ(AttemptsOf("a").size(), 1u);
}

TEST_P(StoreConformance, ExtendNeverPassesTimeoutNorShortens) {
  core::TaskSpec s = Spec("a");
  s.timeout_ms = 10'000;
  SubmitOne(s);
  store::Lease l = LeaseOne(kT0, 2'000);
  auto extend = [&](Millis by, Millis now) {
    ExtendRequest r{l.lease_id, by, now};
    return Await<Millis>([&](auto done) { store().Extend(r, done); });
  };
  EXPECT_EQ(extend(5'000, kT0 + 1'000).value(), kT0 + 6'000);
  EXPECT_EQ(extend(60'000, kT0 + 2'000).value(), kT0 + 10'000);
  EXPECT_EQ(extend(1, kT0 + 3'000).value(), kT0 + 10'000);
  // The extended deadline is the one expiry uses.
  RecordingDecider decider{Dead()};
  auto none = Await<std::vector<AttemptReport>>(
      [&](auto done) { store().ExpireLeases(kT0 + 9'999, decider.Fn(), done); });
  EXPECT_TRUE(none.value().empty());
  ASSERT_TRUE(Ack(l.lease_id, kT0 + 9'999).has_value());
  EXPECT_EQ(extend(1'000, kT0 + 10'000).error().code, core::ErrorCode::kLeaseLost);
}

TEST_P(StoreConformance, FailAppliesTheDecisionWithFastInFlightOfOthers) {
  core::TaskSpec other_type = Spec("u1");
  other_type.task_type = "u";
  SubmitAll({Spec("a"), Spec("b"), Spec("c"), other_type});
  LeaseBatch batch = LeaseFrom({"q"}, 4);
  ASSERT_EQ(batch.leases.size(), 4u);
  auto fail = [&](const store::Lease& l, RecordingDecider& d, Millis now) {
    FailRequest r;
    r.lease_id = l.lease_id;
    r.failure.mode = core::RetryMode::kFast;
    r.failure.error = R"({"type":"Blip","message":")" + l.task.spec.task_id + R"("})";
    r.now = now;
    return Await<AttemptReport>([&](auto done) { store().Fail(r, d.Fn(), done); });
  };

  RecordingDecider fast{FastRetry(kT0 + 5)};
  auto a1 = fail(batch.leases[0], fast, kT0 + 1).value();
  EXPECT_EQ(a1.task.status, TaskStatus::kPending);
  EXPECT_EQ(a1.task.retry_count, 1);
  EXPECT_EQ(a1.task.fast_retries_used, 1);
  EXPECT_TRUE(a1.task.in_fast_retry);
  EXPECT_EQ(a1.task.next_attempt_at, kT0 + 5);
  EXPECT_EQ(a1.decision.next, TaskStatus::kPending);
  fail(batch.leases[1], fast, kT0 + 2).value();  // b
  fail(batch.leases[3], fast, kT0 + 2).value();  // u1: another type
  EXPECT_EQ(fast.fast_in_flight, (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(fast.tasks[0].status, TaskStatus::kRunning);
  EXPECT_EQ(fast.failures[0].mode, core::RetryMode::kFast);
  EXPECT_EQ(fast.failures[0].error, R"({"type":"Blip","message":"a"})");

  // a runs again (a fast retry is pending at once) and now backs off: b is the other in flight.
  store::Lease again = LeaseOne(kT0 + 5);
  EXPECT_EQ(again.task.spec.task_id, "a");
  EXPECT_TRUE(again.task.in_fast_retry);
  RecordingDecider backoff{Backoff(kT0 + 30'000)};
  auto a2 = fail(again, backoff, kT0 + 6).value();
  EXPECT_EQ(backoff.fast_in_flight, (std::vector<int>{1}));
  EXPECT_EQ(a2.task.status, TaskStatus::kRetrying);
  EXPECT_EQ(a2.task.retry_count, 2);
  EXPECT_EQ(a2.task.fast_retries_used, 1);
  EXPECT_FALSE(a2.task.in_fast_retry);
  EXPECT_EQ(a2.task.next_attempt_at, kT0 + 30'000);
  EXPECT_EQ(a2.attempt_started_at, kT0 + 5);

  RecordingDecider dead{Dead()};
  auto c = fail(batch.leases[2], dead, kT0 + 7).value();
  EXPECT_EQ(dead.fast_in_flight, (std::vector<int>{1}));
  EXPECT_EQ(c.task.status, TaskStatus::kDead);
  EXPECT_EQ(c.task.retry_count, 0);
  EXPECT_FALSE(c.task.next_attempt_at);
  EXPECT_FALSE(Get("c").next_attempt_at);
  EXPECT_EQ(Get("c").last_error, R"({"type":"Blip","message":"c"})");
  EXPECT_EQ(Get("c").updated_at, kT0 + 7);
  EXPECT_EQ(Get("a").last_error, R"({"type":"Blip","message":"a"})");

  // Fast-retry counts survive a restart.
  Reopen();
  store::Lease b = LeaseOne(kT0 + 10);
  EXPECT_EQ(b.task.spec.task_id, "b");
  RecordingDecider after{Dead()};
  fail(b, after, kT0 + 11).value();
  EXPECT_EQ(after.fast_in_flight, (std::vector<int>{0}));
}

TEST_P(StoreConformance, ExpiredLeasesFailWithOutcomeLeaseExpired) {
  SubmitAll({Spec("a"), Spec("b")});
  store::Lease a = LeaseOne(kT0, 1'000);
  store::Lease b = LeaseOne(kT0, 5'000);
  RecordingDecider decider{Backoff(kT0 + 60'000)};
  auto expire = [&](Millis now) {
    return Await<std::vector<AttemptReport>>(
               [&](auto done) { store().ExpireLeases(now, decider.Fn(), done); })
        .value();
  };
  EXPECT_TRUE(expire(kT0 + 999).empty());
  auto reports = expire(kT0 + 1'000);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].task.spec.task_id, "a");
  EXPECT_EQ(reports[0].task.status, TaskStatus::kRetrying);
  EXPECT_EQ(reports[0].attempt_started_at, kT0);
  ASSERT_EQ(decider.failures.size(), 1u);
  EXPECT_EQ(decider.failures[0].outcome, core::AttemptOutcome::kLeaseExpired);
  auto attempts = AttemptsOf("a");
  ASSERT_EQ(attempts.size(), 1u);
  EXPECT_EQ(attempts[0].outcome, core::AttemptOutcome::kLeaseExpired);
  EXPECT_EQ(attempts[0].finished_at, kT0 + 1'000);
  EXPECT_EQ(Ack(a.lease_id, kT0 + 1'001).error().code, core::ErrorCode::kLeaseLost);
  EXPECT_EQ(Get("b").status, TaskStatus::kRunning);
  EXPECT_TRUE(Ack(b.lease_id, kT0 + 1'001).has_value());
}

TEST_P(StoreConformance, AttemptLogKeepsEveryAttempt) {
  SubmitOne(Spec("a"));
  store::Lease first = LeaseFrom({"q"}, 1, kT0, {}, std::nullopt, "w1").leases.at(0);
  FailRequest f;
  f.lease_id = first.lease_id;
  f.failure.error = R"({"type":"HTTP","message":"503"})";
  f.now = kT0 + 10;
  f.detail = {503, "busy"};
  RecordingDecider decider{FastRetry(kT0 + 10)};
  ASSERT_TRUE(Await<AttemptReport>([&](auto done) { store().Fail(f, decider.Fn(), done); }));
  store::Lease second = LeaseFrom({"q"}, 1, kT0 + 20, {}, std::nullopt, "w2").leases.at(0);
  auto running = AttemptsOf("a");
  ASSERT_EQ(running.size(), 2u);
  EXPECT_FALSE(running[1].outcome);
  EXPECT_FALSE(running[1].finished_at);
  AckRequest ack;
  ack.lease_id = second.lease_id;
  ack.now = kT0 + 30;
  ack.detail = {200, "ok"};
  ASSERT_TRUE(Await<AttemptReport>([&](auto done) { store().Ack(ack, done); }));

  auto log = AttemptsOf("a");
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].attempt, 1);
  EXPECT_EQ(log[0].worker_id, "w1");
  EXPECT_EQ(log[0].started_at, kT0);
  EXPECT_EQ(log[0].finished_at, kT0 + 10);
  EXPECT_EQ(log[0].outcome, core::AttemptOutcome::kFailed);
  EXPECT_EQ(log[0].error, R"({"type":"HTTP","message":"503"})");
  EXPECT_EQ(log[0].http_status, 503);
  EXPECT_EQ(log[0].response_excerpt, "busy");
  EXPECT_EQ(log[1].attempt, 2);
  EXPECT_EQ(log[1].worker_id, "w2");
  EXPECT_EQ(log[1].started_at, kT0 + 20);
  EXPECT_EQ(log[1].finished_at, kT0 + 30);
  EXPECT_EQ(log[1].outcome, core::AttemptOutcome::kSucceeded);
  EXPECT_FALSE(log[1].error);
  EXPECT_EQ(log[1].http_status, 200);
  EXPECT_EQ(Get("a").attempts, 2);
  auto unknown =
      Await<std::vector<core::Attempt>>([&](auto done) { store().Attempts("nope", done); });
  EXPECT_EQ(unknown.error().code, core::ErrorCode::kNotFound);
}

TEST_P(StoreConformance, IdempotencyKeyRunsOneAtATimeAndDedupesAfterSuccess) {
  core::TaskSpec a = Spec("a");
  a.idempotency_key = "k";
  core::TaskSpec b = Spec("b");
  b.idempotency_key = "k";
  SubmitAll({a, b, Spec("c")});
  // Single flight: b waits while a runs, even within one lease call.
  LeaseBatch first = LeaseFrom({"q"}, 10);
  EXPECT_EQ(LeasedIds(first), (std::vector<std::string>{"a", "c"}));
  EXPECT_TRUE(LeaseFrom({"q"}, 10).leases.empty());
  // a backs off: the key is released and b may run.
  ASSERT_TRUE(Fail(first.leases[0].lease_id, Backoff(kT0 + 100), kT0 + 1));
  LeaseBatch second = LeaseFrom({"q"}, 10, kT0 + 2);
  EXPECT_EQ(LeasedIds(second), (std::vector<std::string>{"b"}));
  // b succeeds: a, due again, completes as deduplicated without reaching a worker.
  auto acked = Ack(second.leases[0].lease_id, kT0 + 3);
  ASSERT_TRUE(acked);
  EXPECT_EQ(acked->task.spec.idempotency_key, "k");  // the engine wakes b's siblings by it
  Promote(kT0 + 100);
  LeaseBatch third = LeaseFrom({"q"}, 10, kT0 + 100);
  EXPECT_TRUE(third.leases.empty());
  EXPECT_EQ(third.deduplicated, (std::vector<std::string>{"a"}));
  core::Task done = Get("a");
  EXPECT_EQ(done.status, TaskStatus::kSucceeded);
  EXPECT_TRUE(done.deduplicated);
  EXPECT_EQ(done.attempts, 1);
  EXPECT_FALSE(Get("b").deduplicated);
  EXPECT_EQ((DepthMap()[{"q", TaskStatus::kSucceeded}]), 2);
  EXPECT_EQ((DepthMap()[{"q", TaskStatus::kRunning}]), 1);
}

TEST_P(StoreConformance, IdempotencyDedupeLastsTheTtlThenRunsAgain) {
  core::TaskSpec a = Spec("a");
  a.idempotency_key = "k";
  SubmitOne(a);
  ASSERT_TRUE(Ack(LeaseOne().lease_id, kT0, /*ttl=*/1'000));
  core::TaskSpec b = Spec("b");
  b.idempotency_key = "k";
  core::TaskSpec c = Spec("c");
  c.idempotency_key = "k";
  SubmitOne(b, kT0 + 1);
  LeaseBatch within = LeaseFrom({"q"}, 1, kT0 + 999);
  EXPECT_TRUE(within.leases.empty());
  EXPECT_EQ(within.deduplicated, (std::vector<std::string>{"b"}));
  SubmitOne(c, kT0 + 1'000);
  EXPECT_EQ(LeasedIds(LeaseFrom({"q"}, 1, kT0 + 1'000)), (std::vector<std::string>{"c"}));
  // Keys survive a restart: c still holds k, so a sibling waits.
  core::TaskSpec d = Spec("d");
  d.idempotency_key = "k";
  SubmitOne(d, kT0 + 1'000);
  Reopen();
  EXPECT_TRUE(LeaseFrom({"q"}, 1, kT0 + 1'001).leases.empty());
}

TEST_P(StoreConformance, NextWakeupIsEarliestDueTimeOrLeaseDeadline) {
  auto wakeup = [&] {
    return Await<std::optional<Millis>>([&](auto done) { store().NextWakeup(done); }).value();
  };
  EXPECT_EQ(wakeup(), std::nullopt);
  core::TaskSpec later = Spec("later");
  later.schedule_time = kT0 + 5'000;
  SubmitAll({later, Spec("now"), Spec("soon")});
  EXPECT_EQ(wakeup(), kT0 + 5'000);
  store::Lease l = LeaseOne(kT0, 1'000);
  EXPECT_EQ(wakeup(), kT0 + 1'000);
  store::Lease soon = LeaseOne(kT0);
  ASSERT_TRUE(Fail(soon.lease_id, Backoff(kT0 + 500), kT0 + 1));
  EXPECT_EQ(wakeup(), kT0 + 500);
  Promote(kT0 + 500);
  ASSERT_TRUE(Ack(l.lease_id));
  EXPECT_EQ(wakeup(), kT0 + 5'000);
  Promote(kT0 + 5'000);
  EXPECT_EQ(wakeup(), std::nullopt);
}

}  // namespace madeira::store::testing
