// The conformance scenario of sdk/testdata/scenario.md against a real server.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "madeira/client.h"
#include "madeira/worker.h"
#include "server.h"
#include "testdata.h"

namespace madeira::sdk {
namespace {

using std::chrono::milliseconds;

Time Now() { return std::chrono::floor<milliseconds>(std::chrono::system_clock::now()); }

struct Runs {
  std::mutex mu;
  std::map<std::string, std::vector<Time>> starts;  // task id -> handler start times
  bool sleeper_told_deadline = false;

  int Record(const std::string& id) {
    std::lock_guard lock(mu);
    auto& v = starts[id];
    v.push_back(Now());
    return static_cast<int>(v.size());
  }
};

TEST(Scenario, Conformance) {
  auto spec = testing::ReadTestdata("scenario.json").as_object();
  const auto& tasks = spec.at("tasks").as_object();
  testing::TestServer server;
  Client client(server.url());
  std::string queue = std::string(spec.at("queue_prefix").as_string()) + "-" +
                      std::to_string(std::random_device{}());

  auto make = [&](const char* key) {
    Task t;
    t.task_type = std::string(tasks.at(key).at("task_type").as_string());
    t.queue = queue;
    t.payload_version = 1;
    return t;
  };
  // 1. Produce.
  std::vector<Task> ok_tasks;
  const auto& ok_spec = tasks.at("ok").as_object();
  const auto& priorities = ok_spec.at("priorities").as_array();
  for (int64_t i = 0; i < ok_spec.at("count").as_int64(); ++i) {
    Task t = make("ok");
    t.priority = static_cast<int>(priorities[i % priorities.size()].as_int64());
    t.payload["n"] = i;
    ok_tasks.push_back(std::move(t));
  }
  std::vector<std::string> ok_ids;
  for (const auto& r : client.SubmitBatch(ok_tasks)) {
    ASSERT_TRUE(r.ok());
    ok_ids.push_back(r.result->task_id);
  }
  Task delayed = make("delayed");
  Time not_before = Now() + milliseconds(tasks.at("delayed").at("delay_ms").as_int64());
  delayed.schedule_time = not_before;  // a zone-aware sys_time
  std::string delayed_id = client.Submit(delayed).task_id;
  std::string transient_id = client.Submit(make("transient_once")).task_id;
  std::string permanent_id = client.Submit(make("permanent")).task_id;
  Task sleeper = make("sleeper");
  const auto& sleeper_spec = tasks.at("sleeper").as_object();
  sleeper.timeout = milliseconds(sleeper_spec.at("timeout_ms").as_int64());
  sleeper.max_retries = static_cast<int>(sleeper_spec.at("max_retries").as_int64());
  std::string sleeper_id = client.Submit(sleeper).task_id;

  // 2. Work.
  Runs runs;
  WorkerOptions options;
  options.queues = {queue};
  options.slots = static_cast<int>(spec.at("slots").as_int64());
  options.poll_wait = milliseconds(1000);
  Worker worker(client, options);
  auto record_ok = [&](TaskContext& ctx) -> boost::json::value {
    runs.Record(ctx.task().task_id);
    return {{"ok", true}};
  };
  worker.Handle("scenario.ok", {1}, record_ok);
  worker.Handle("scenario.delayed", {1}, record_ok);
  worker.Handle("scenario.transient", {1}, [&](TaskContext& ctx) -> boost::json::value {
    if (runs.Record(ctx.task().task_id) == 1) throw TransientError("first time");
    return {{"ok", true}};
  });
  worker.Handle("scenario.permanent", {1}, [&](TaskContext& ctx) -> boost::json::value {
    runs.Record(ctx.task().task_id);
    throw PermanentError("never works");
  });
  worker.Handle("scenario.sleeper", {1}, [&](TaskContext& ctx) -> boost::json::value {
    runs.Record(ctx.task().task_id);
    if (!ctx.SleepFor(milliseconds(sleeper_spec.at("sleeps_ms").as_int64()))) {
      std::lock_guard lock(runs.mu);
      runs.sleeper_told_deadline = ctx.DeadlineExceeded();
    }
    return {{"late", true}};
  });
  worker.Start();

  // 3. Wait (bounded) until every task is terminal, then close gracefully.
  std::vector<std::string> pending = ok_ids;
  pending.insert(pending.end(), {delayed_id, transient_id, permanent_id, sleeper_id});
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!pending.empty() && std::chrono::steady_clock::now() < give_up) {
    std::erase_if(pending, [&](const std::string& id) { return client.Get(id).Terminal(); });
    if (!pending.empty()) std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_TRUE(worker.Close(std::chrono::seconds(5)));
  ASSERT_TRUE(pending.empty()) << pending.size() << " tasks not terminal, first " << pending[0];

  // 4. Assert.
  auto outcomes = [&](const std::string& id) {
    std::vector<std::string> out;
    for (const auto& a : client.Attempts(id)) out.push_back(a.outcome);
    return out;
  };
  using Outcomes = std::vector<std::string>;
  for (const auto& id : ok_ids) {
    auto t = client.Get(id);
    EXPECT_EQ(t.status, "succeeded") << id;
    EXPECT_EQ(t.attempts, 1) << id;
    EXPECT_EQ(outcomes(id), Outcomes{"succeeded"}) << id;
    EXPECT_EQ(runs.starts[id].size(), 1u) << id;
    EXPECT_EQ(t.result, boost::json::value({{"ok", true}})) << id;
  }
  auto d = client.Get(delayed_id);
  EXPECT_EQ(d.status, "succeeded");
  EXPECT_EQ(d.attempts, 1);
  ASSERT_EQ(runs.starts[delayed_id].size(), 1u);
  EXPECT_GE(runs.starts[delayed_id][0], not_before);

  auto tr = client.Get(transient_id);
  EXPECT_EQ(tr.status, "succeeded");
  EXPECT_EQ(tr.attempts, 2);
  EXPECT_EQ(outcomes(transient_id), (Outcomes{"failed", "succeeded"}));
  EXPECT_EQ(runs.starts[transient_id].size(), 2u);

  auto p = client.Get(permanent_id);
  EXPECT_EQ(p.status, "dead");
  EXPECT_EQ(p.attempts, 1);
  EXPECT_EQ(outcomes(permanent_id), Outcomes{"failed"});
  ASSERT_TRUE(p.last_error.has_value());
  EXPECT_EQ(p.last_error->type, "PermanentError");
  EXPECT_EQ(runs.starts[permanent_id].size(), 1u);

  auto s = client.Get(sleeper_id);
  EXPECT_EQ(s.status, "dead");
  EXPECT_EQ(s.attempts, 1);
  EXPECT_EQ(outcomes(sleeper_id), Outcomes{"lease_expired"});
  EXPECT_TRUE(s.result.is_null()) << "the late result was acked";
  EXPECT_EQ(runs.starts[sleeper_id].size(), 1u);
  EXPECT_TRUE(runs.sleeper_told_deadline);
}

}  // namespace
}  // namespace madeira::sdk
