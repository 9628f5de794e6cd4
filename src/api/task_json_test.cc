#include "api/task_json.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace madeira::api {
namespace {

core::Task SampleTask() {
  core::Task t;
  t.spec.task_id = "t1";
  t.spec.task_type = "order.close";
  t.spec.queue = "orders";
  t.spec.payload = R"({"order_id":7})";
  t.spec.schedule_time = 0;
  t.spec.trace_id = "tr";
  t.status = core::TaskStatus::kDead;
  t.attempts = 2;
  t.last_error = R"({"type":"E","message":"m"})";
  return t;
}

TEST(TaskJsonTest, EmbedsStoredJsonAndNullsWhatIsAbsent) {
  boost::json::object o = TaskJson(SampleTask());
  EXPECT_EQ(o.at("payload"), boost::json::parse(R"({"order_id":7})"));
  EXPECT_EQ(o.at("last_error").at("type"), "E");
  EXPECT_TRUE(o.at("result").is_null());
  EXPECT_TRUE(o.at("next_attempt_at").is_null());
  EXPECT_EQ(o.at("status"), "dead");
  EXPECT_EQ(o.at("schedule_time"), "1970-01-01T00:00:00.000Z");
  EXPECT_FALSE(o.contains("idempotency_key"));
  EXPECT_EQ(o.at("deduplicated"), false);
}

TEST(TaskJsonTest, LeaseCarriesEnvelopeAndAttempt) {
  store::Lease lease{"l1", 4, 1000, SampleTask()};
  boost::json::object o = LeaseJson(lease);
  EXPECT_EQ(o.at("lease_id"), "l1");
  EXPECT_EQ(o.at("fencing_token"), 4);
  EXPECT_EQ(o.at("deadline"), "1970-01-01T00:00:01.000Z");
  EXPECT_EQ(o.at("task").at("attempt"), 2);
  EXPECT_FALSE(o.at("task").as_object().contains("status"));
}

TEST(TaskJsonTest, AttemptWhileRunningHasNullOutcome) {
  core::Attempt a;
  a.attempt = 1;
  a.worker_id = "w";
  a.started_at = 1000;
  boost::json::object running = AttemptJson(a);
  EXPECT_TRUE(running.at("outcome").is_null());
  EXPECT_TRUE(running.at("duration_ms").is_null());
  a.finished_at = 1250;
  a.outcome = core::AttemptOutcome::kLeaseExpired;
  boost::json::object done = AttemptJson(a);
  EXPECT_EQ(done.at("outcome"), "lease_expired");
  EXPECT_EQ(done.at("duration_ms"), 250);
}

TEST(TaskJsonTest, SearchPageHasOpaqueCursorOrNull) {
  store::SearchPage page;
  page.tasks.push_back(SampleTask());
  EXPECT_TRUE(SearchPageJson(page).at("next_cursor").is_null());
  page.next_cursor = 9;
  EXPECT_TRUE(SearchPageJson(page).at("next_cursor").is_string());
}

}  // namespace
}  // namespace madeira::api
