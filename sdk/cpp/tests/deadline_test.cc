// The worker's deadline is the server's: timed from the lease's deadline, not from when the
// lease was read, and a lease_lost read past it is the deadline's doing.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <future>
#include <thread>

#include "fake_server.h"
#include "madeira/client.h"
#include "madeira/worker.h"
#include "rfc3339.h"
#include "worker_impl.h"

namespace madeira::sdk {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using std::chrono::system_clock;

TEST(AttemptDeadline, IsTheServersWhenTheClocksAgreeElseFromTheReceipt) {
  const milliseconds timeout(2000), lease_for(300);
  const auto received = system_clock::now();
  const auto sent = received - milliseconds(800);  // a long poll
  const auto steady = steady_clock::now();
  auto at = [&](system_clock::duration d) {
    return std::chrono::floor<milliseconds>(received + d);
  };
  struct Case {
    const char* name;
    Time lease_deadline;
    milliseconds remaining;
  } cases[] = {
      {"began 200 ms before the answer was read", at(lease_for - milliseconds(200)),
       timeout - milliseconds(200)},
      {"began as the poll was sent", at(lease_for - milliseconds(800)),
       timeout - milliseconds(800)},
      {"server clock an hour ahead", at(std::chrono::hours(1)), timeout},
      {"server clock an hour behind", at(-std::chrono::hours(1)), timeout},
      {"server clock 2 s behind", at(lease_for - milliseconds(2000)), timeout},
      {"no deadline sent", Time{}, timeout},
  };
  for (const auto& c : cases) {
    auto got =
        internal::AttemptDeadline(c.lease_deadline, lease_for, timeout, sent, received, steady);
    EXPECT_NEAR(std::chrono::duration_cast<milliseconds>(got - steady).count(), c.remaining.count(),
                2)
        << c.name;
  }
}

// One lease of task T1 (type "late"), with `deadline` and `timeout_ms`; later lease calls wait
// a little and answer none, acks are taken, every other call is answered {} unless `extend`
// answers it.
class OneLease {
 public:
  OneLease(system_clock::duration deadline_in, int timeout_ms,
           std::function<testing::FakeAnswer()> extend = {})
      : extend_(std::move(extend)),
        server_([this, deadline_in, timeout_ms](const std::string&, const std::string& target) {
          return Answer(target, deadline_in, timeout_ms);
        }) {}

  const std::string& url() const { return server_.url(); }

 private:
  testing::FakeAnswer Answer(const std::string& target, system_clock::duration deadline_in,
                             int timeout_ms) {
    if (target == "/v1/leases") {
      if (!leased_.exchange(true)) {
        auto deadline = internal::FormatTime(
            std::chrono::floor<milliseconds>(system_clock::now() + deadline_in));
        return {200, R"({"leases":[{"lease_id":"L1","deadline":")" + *deadline +
                         R"(","fencing_token":1,"task":{"task_id":"T1","task_type":"late",)"
                         R"("queue":"q","payload_version":1,"payload":{},"timeout_ms":)" +
                         std::to_string(timeout_ms) +
                         R"(,"max_retries":3,"retry_count":0,"priority":100,"trace_id":"x",)"
                         R"("attempt":1}}]})"};
      }
      std::this_thread::sleep_for(milliseconds(50));  // a short long-poll
      return {200, R"({"leases":[]})"};
    }
    if (target == "/v1/leases/L1/extend" && extend_) return extend_();
    if (target == "/v1/leases/ack") return {200, R"({"results":[{}]})"};
    return {};
  }

  std::function<testing::FakeAnswer()> extend_;
  std::atomic<bool> leased_ = false;
  testing::FakeServer server_;
};

WorkerOptions Options(milliseconds lease_duration) {
  WorkerOptions o;
  o.queues = {"q"};
  o.slots = 1;
  o.lease_duration = lease_duration;
  o.poll_wait = milliseconds(100);
  o.log = [](const std::string&) {};
  return o;
}

// A lease answered late leaves the handler less time, rather than running past the server's
// deadline.
TEST(WorkerDeadline, HandlerDeadlineIsTheServers) {
  // The server began the 3 s attempt 500 ms before its answer (lease 300 ms).
  OneLease server(milliseconds(300 - 500), 3000);
  Client client(server.url());
  Worker worker(client, Options(milliseconds(300)));
  std::promise<milliseconds> left;
  worker.Handle("late", {1}, [&](TaskContext& ctx) -> boost::json::value {
    left.set_value(std::chrono::duration_cast<milliseconds>(ctx.deadline() - steady_clock::now()));
    return nullptr;
  });
  worker.Start();
  auto got = left.get_future();
  ASSERT_EQ(got.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  auto ms = got.get().count();
  EXPECT_GT(ms, 2000);
  EXPECT_LT(ms, 2600) << "the deadline was timed from the lease's receipt";
  worker.Close(milliseconds(2000));
}

// Why a handler that sleeps through its attempt was stopped, on `server` (300 ms leases);
// `on_stop` runs in the handler once it was.
StopCause CauseOfSleeper(const OneLease& server, const std::function<void()>& on_stop = {}) {
  Client client(server.url());
  Worker worker(client, Options(milliseconds(300)));
  std::promise<StopCause> cause;
  worker.Handle("late", {1}, [&](TaskContext& ctx) -> boost::json::value {
    ctx.SleepFor(milliseconds(5000));
    if (on_stop) on_stop();
    cause.set_value(ctx.Cause());
    return nullptr;
  });
  worker.Start();
  auto got = cause.get_future();
  bool stopped = got.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  worker.Close(milliseconds(2000));
  return stopped ? got.get() : StopCause::kNone;
}

// The server expires a lease at the attempt's deadline; an extend held past it comes back
// lease_lost, and that is the deadline, not a lost lease.
TEST(WorkerDeadline, LeaseLostReadPastTheDeadlineIsTheDeadline) {
  // 300 ms attempt and lease: the first extend goes at ~100 ms; it is answered at ~450 ms.
  const auto leased = steady_clock::now();
  OneLease server(milliseconds(300), 300, [&] {
    std::this_thread::sleep_until(leased + milliseconds(450));
    return testing::FakeAnswer{409, R"({"error":{"code":"lease_lost","message":"expired"}})"};
  });
  EXPECT_EQ(CauseOfSleeper(server), StopCause::kDeadline);
}

// An extend the server holds delays no deadline: the handler is stopped at its deadline, before
// that extend is answered.
TEST(WorkerDeadline, AHeldExtendDoesNotHoldTheDeadline) {
  std::atomic<bool> answered = false, answered_before_stop = false;
  OneLease server(milliseconds(300), 300, [&] {
    std::this_thread::sleep_for(milliseconds(1500));
    answered = true;
    return testing::FakeAnswer{409, R"({"error":{"code":"lease_lost","message":"expired"}})"};
  });
  EXPECT_EQ(CauseOfSleeper(server, [&] { answered_before_stop = answered.load(); }),
            StopCause::kDeadline);
  EXPECT_FALSE(answered_before_stop) << "the handler was stopped only once the extend came back";
}

// A lease_lost before the deadline is still a lost lease.
TEST(WorkerDeadline, LeaseLostBeforeTheDeadlineIsALostLease) {
  OneLease server(milliseconds(300), 5000, [] {
    return testing::FakeAnswer{409, R"({"error":{"code":"lease_lost","message":"superseded"}})"};
  });
  EXPECT_EQ(CauseOfSleeper(server), StopCause::kLeaseLost);
}

}  // namespace
}  // namespace madeira::sdk
