// Producer and worker behaviour against a real server, beyond the scenario.
#include "madeira/client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "madeira/worker.h"
#include "server.h"

namespace madeira::sdk {
namespace {

using std::chrono::milliseconds;

class ClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new testing::TestServer(); }
  static void TearDownTestSuite() { delete server_; }

  Task Make(const std::string& type) {
    Task t;
    t.task_type = type;
    t.queue = queue_;
    t.payload_version = 1;
    return t;
  }

  static testing::TestServer* server_;
  Client client_{server_->url()};
  std::string queue_ = "cpp-" + std::to_string(std::random_device{}());
};

testing::TestServer* ClientTest::server_ = nullptr;

TEST_F(ClientTest, ServerErrorsAreSurfacedUnchanged) {
  Task t = Make("conflict");
  t.task_id = "cpp-conflict-" + queue_;
  EXPECT_FALSE(client_.Submit(t).duplicate);
  EXPECT_TRUE(client_.Submit(t).duplicate);
  t.payload["other"] = 1;
  try {
    client_.Submit(t);
    ADD_FAILURE() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 409);
    EXPECT_EQ(e.code(), "task_id_conflict");
  }
  try {
    client_.Get("no-such-task");
    ADD_FAILURE() << "found";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 404);
    EXPECT_EQ(e.code(), "not_found");
  }
  Task far = Make("far");
  far.schedule_time = ScheduleTime(std::string("2999-01-01T00:00:00Z"));
  try {
    client_.Submit(far);
    ADD_FAILURE() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), "schedule_too_far");
    EXPECT_EQ(e.field(), "schedule_time");
  }
}

TEST_F(ClientTest, BatchItemsAreJudgedAlone) {
  Task bad = Make("x");
  bad.priority = 5000;
  Task far = Make("x");
  far.schedule_time = ScheduleTime(std::string("2999-01-01T00:00:00+02:00"));
  auto results = client_.SubmitBatch({Make("x"), bad, far});
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TRUE(results[0].ok());
  ASSERT_TRUE(std::holds_alternative<ValidationError>(results[1].error));
  EXPECT_EQ(std::get<ValidationError>(results[1].error).field(), "priority");
  ASSERT_TRUE(std::holds_alternative<ApiError>(results[2].error));
  EXPECT_EQ(std::get<ApiError>(results[2].error).code(), "schedule_too_far");
}

TEST_F(ClientTest, CancelAScheduledTask) {
  Task t = Make("later");
  t.schedule_time =
      std::chrono::floor<milliseconds>(std::chrono::system_clock::now()) + std::chrono::hours(1);
  auto id = client_.Submit(t).task_id;
  EXPECT_EQ(client_.Get(id).status, "scheduled");
  EXPECT_EQ(client_.Cancel(id).status, "cancelled");
  try {
    client_.Cancel(id);
    ADD_FAILURE() << "cancelled twice";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), "task_terminal");
  }
}

TEST_F(ClientTest, CloseHandsBackTasksThatOutliveTheGrace) {
  Task t = Make("slow");
  t.max_retries = 0;
  auto id = client_.Submit(t).task_id;
  std::atomic<bool> started = false, stopped = false;
  WorkerOptions options;
  options.queues = {queue_};
  options.slots = 2;
  options.poll_wait = milliseconds(500);
  Worker worker(client_, options);
  worker.Handle("slow", {1}, [&](TaskContext& ctx) -> boost::json::value {
    started = true;
    stopped = !ctx.SleepFor(milliseconds(10000)) && ctx.Cause() == StopCause::kWorkerClosed;
    return nullptr;
  });
  worker.Start();
  for (int i = 0; i < 200 && !started; ++i) std::this_thread::sleep_for(milliseconds(10));
  ASSERT_TRUE(started);
  EXPECT_FALSE(worker.Close(milliseconds(200)));
  EXPECT_TRUE(stopped);
  auto attempts = client_.Attempts(id);
  ASSERT_EQ(attempts.size(), 1u);
  EXPECT_EQ(attempts[0].outcome, "failed");
  ASSERT_TRUE(attempts[0].error.has_value());
  EXPECT_EQ(attempts[0].error->type, "WorkerClosed");
}

TEST_F(ClientTest, HandlerExceptionsPickTheRetryTier) {
  Task t = Make("boom");
  t.max_retries = 0;
  auto id = client_.Submit(t).task_id;
  WorkerOptions options;
  options.queues = {queue_};
  options.poll_wait = milliseconds(500);
  Worker worker(client_, options);
  worker.Handle("boom", {1},
                [](TaskContext&) -> boost::json::value { throw std::out_of_range("index 7"); });
  worker.Start();
  TaskInfo info;
  for (int i = 0; i < 200 && !(info = client_.Get(id)).Terminal(); ++i) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_TRUE(worker.Close(milliseconds(1000)));
  EXPECT_EQ(info.status, "dead");
  ASSERT_TRUE(info.last_error.has_value());
  EXPECT_EQ(info.last_error->type, "std::out_of_range");
  EXPECT_EQ(info.last_error->message, "index 7");
}

TEST(Worker, RefusesBadRegistrations) {
  Client client("http://127.0.0.1:1");
  Worker worker(client, WorkerOptions{.queues = {"q"},
                                      .slots = 1,
                                      .worker_id = "w",
                                      .lease_duration = {},
                                      .poll_wait = milliseconds(100),
                                      .heartbeat_interval = milliseconds(1000),
                                      .log = {}});
  auto h = [](TaskContext&) -> boost::json::value { return nullptr; };
  EXPECT_THROW(worker.Handle("Bad", {1}, h), Error);
  EXPECT_THROW(worker.Handle("ok", {0}, h), Error);
  worker.Handle("ok", {1, 2}, h);
  EXPECT_THROW(worker.Handle("ok", {3}, h), Error);
  EXPECT_THROW(Client("ftp://x"), Error);
}

TEST(ClientAuth, SendsTheBearerTokenAndSurfacesUnauthorized) {
  testing::TestServer server(R"([[auth.tokens]]
name = "cpp-sdk"
token = "cpp-sdk-secret"
scopes = ["admin"]
)");
  Task task;
  task.task_type = "auth.check";
  task.payload_version = 1;
  ClientOptions good;
  good.token = "cpp-sdk-secret";
  Client with_token(server.url(), good);
  const SubmitResult accepted = with_token.Submit(task);
  EXPECT_EQ(with_token.Get(accepted.task_id).task_id, accepted.task_id);

  Client without_token(server.url());
  try {
    without_token.Submit(task);
    FAIL() << "a request without the token was accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 401);
    EXPECT_EQ(e.code(), "unauthorized");
  }
  ClientOptions bad;
  bad.token = "not-the-secret";
  Client wrong_token(server.url(), bad);
  EXPECT_THROW(wrong_token.Get(accepted.task_id), ApiError);
}

}  // namespace
}  // namespace madeira::sdk
