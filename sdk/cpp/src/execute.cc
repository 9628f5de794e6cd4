// Running handlers: slot threads, lease extension and deadlines (the ticker), batched acks,
// fails with the retry tier of the handler's exception, and Close's hand-back.
#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <typeinfo>

#include "worker_impl.h"

namespace madeira::sdk {
namespace {

// The server takes up to 1000 acks in one request.
constexpr size_t kMaxAckBatch = 1000;
// The ticker looks at running tasks at least this often, so deadlines are kept to within it.
constexpr std::chrono::milliseconds kTick(20);
// No extension this close to the deadline: the server caps leases at the deadline anyway, so a
// late extend would only race the server's expiry.
constexpr std::chrono::milliseconds kExtendMargin(100);

std::string TypeName(const std::exception& e) {
  int status = 0;
  char* name = abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status);
  std::string out = status == 0 && name != nullptr ? name : typeid(e).name();
  std::free(name);
  return out;
}

}  // namespace

bool TaskContext::SleepFor(std::chrono::milliseconds d) const {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  cv.wait_for(lock, stop_, d, [] { return false; });
  return !stop_.stop_requested();
}

void Worker::Impl::SlotLoop() {
  while (true) {
    std::shared_ptr<Execution> ex;
    {
      std::unique_lock lock(mu_);
      queue_cv_.wait(lock, [this] { return !queue_.empty() || stop_threads_; });
      if (queue_.empty()) return;
      ex = std::move(queue_.front());
      queue_.pop_front();
      int expected = Execution::kQueued;
      if (!ex->state.compare_exchange_strong(expected, Execution::kRunning)) continue;
      running_.insert(ex);
    }
    Run(ex);
  }
}

void Worker::Impl::Run(const std::shared_ptr<Execution>& ex) {
  TaskContext ctx(ex->lease, ex->stop.get_token(), &ex->cause, ex->deadline);
  std::string result, error_type, error_message, retry;
  try {
    auto it = handlers_.find(ex->lease.task.task_type);
    if (it == handlers_.end()) {
      throw std::runtime_error("no handler for task type " + ex->lease.task.task_type);
    }
    boost::json::value v = it->second(ctx);
    if (!v.is_null()) result = boost::json::serialize(v);
  } catch (const PermanentError& e) {
    error_type = "PermanentError", error_message = e.what(), retry = "never";
  } catch (const TransientError& e) {
    error_type = "TransientError", error_message = e.what(), retry = "fast";
  } catch (const std::exception& e) {
    error_type = TypeName(e), error_message = e.what(), retry = "auto";
  } catch (...) {
    error_type = "unknown", error_message = "a non-std::exception was thrown", retry = "auto";
  }
  {
    std::lock_guard lock(mu_);
    running_.erase(ex);
  }
  int expected = Execution::kRunning;
  if (!ex->state.compare_exchange_strong(expected, Execution::kFinished)) return;  // handed back
  StopCause cause = ex->cause.load();
  if (cause != StopCause::kNone) {
    // Past the deadline or after losing the lease the result must not be acked: the server
    // records the attempt as lease_expired (fencing would refuse the ack anyway).
    Log("task " + ex->lease.task.task_id +
        " not completed: " + (cause == StopCause::kDeadline ? "deadline passed" : "lease lost"));
  } else if (!retry.empty()) {
    SendFail(*ex, error_type, error_message, retry);
  } else {
    {
      std::lock_guard lock(mu_);
      ++free_;
      acks_.push_back({ex->lease.id, std::move(result)});
    }
    lease_cv_.notify_one();
    ack_cv_.notify_one();
    return;
  }
  {
    std::lock_guard lock(mu_);
    ++free_;
  }
  lease_cv_.notify_one();
  Reported(1);
}

void Worker::Impl::Reported(int n) {
  {
    std::lock_guard lock(mu_);
    outstanding_ -= n;
  }
  done_cv_.notify_all();
}

void Worker::Impl::SendFail(const Execution& ex, const std::string& type,
                            const std::string& message, const std::string& retry) {
  boost::json::object body;
  body["error"] = {{"type", type}, {"message", message}};
  body["retry"] = retry;
  try {
    http_.Call("POST", "/v1/leases/" + internal::EscapePath(ex.lease.id) + "/fail",
               boost::json::serialize(body));
  } catch (const std::exception& e) {
    Log("fail of task " + ex.lease.task.task_id + " not recorded: " + e.what());
  }
}

namespace internal {

std::chrono::steady_clock::time_point AttemptDeadline(
    Time lease_deadline, std::chrono::milliseconds lease_for, std::chrono::milliseconds timeout,
    std::chrono::system_clock::time_point sent, std::chrono::system_clock::time_point received,
    std::chrono::steady_clock::time_point received_steady) {
  const std::chrono::system_clock::time_point began = lease_deadline - lease_for;
  if (lease_deadline == Time{} || began < sent - std::chrono::seconds(1) || began > received) {
    return received_steady + timeout;
  }
  return received_steady + timeout - (received - began);
}

}  // namespace internal

// Stops handlers at their deadline and asks for their leases to be extended every lease_ms/3
// while they run. It never waits for the server: the extends go out on ExtendLoop's thread.
void Worker::Impl::TickerLoop() {
  std::unique_lock lock(mu_);
  while (!stop_threads_) {
    auto now = std::chrono::steady_clock::now();
    auto wake = now + kTick;
    bool asked = false;
    for (const auto& ex : running_) {
      if (ex->cause.load() != StopCause::kNone) continue;
      if (now >= ex->deadline) {
        ex->Stop(StopCause::kDeadline);
        continue;
      }
      if (now >= ex->next_extend) {
        ex->next_extend = now + ex->lease_for / 3;
        if (ex->deadline - now > kExtendMargin && !ex->extending) {
          ex->extending = true;
          extends_.push_back(ex);
          asked = true;
        }
      }
      wake = std::min({wake, ex->deadline, ex->next_extend});
    }
    if (asked) extend_cv_.notify_one();
    tick_cv_.wait_until(lock, wake, [this] { return stop_threads_; });
  }
}

// Sends the extends the ticker asks for, one at a time, on a thread of their own: a slow answer
// then delays no task's deadline.
void Worker::Impl::ExtendLoop() {
  std::unique_lock lock(mu_);
  while (true) {
    extend_cv_.wait(lock, [this] { return !extends_.empty() || stop_threads_; });
    if (stop_threads_) return;  // every task was reported before the threads stop
    std::shared_ptr<Execution> ex = std::move(extends_.front());
    extends_.pop_front();
    if (ex->cause.load() != StopCause::kNone || running_.count(ex) == 0) {
      ex->extending = false;
      continue;
    }
    lock.unlock();
    std::string body = "{\"extend_ms\":" + std::to_string(ex->lease_for.count()) + "}";
    try {
      http_.Call("POST", "/v1/leases/" + internal::EscapePath(ex->lease.id) + "/extend", body,
                 std::chrono::seconds(10));
    } catch (const ApiError& e) {
      if (e.code() == "lease_lost") {
        // Read past the deadline, the server expired the lease because the attempt's time was
        // up: the deadline is the reason (and the ticker may have said so already).
        bool late = std::chrono::steady_clock::now() >= ex->deadline;
        ex->Stop(late ? StopCause::kDeadline : StopCause::kLeaseLost);
      } else {
        Log(std::string("lease extend failed: ") + e.what());
      }
    } catch (const std::exception& e) {
      Log(std::string("lease extend failed: ") + e.what());
    }
    lock.lock();
    ex->extending = false;
  }
}

// Sends acks in batches: while one batch is in flight the next one fills up, so acks coalesce
// under load and a single ack goes out at once when idle.
void Worker::Impl::AckLoop() {
  std::unique_lock lock(mu_);
  while (true) {
    ack_cv_.wait(lock, [this] { return !acks_.empty() || stop_threads_; });
    if (acks_.empty()) return;
    std::vector<PendingAck> batch;
    while (!acks_.empty() && batch.size() < kMaxAckBatch) {
      batch.push_back(std::move(acks_.front()));
      acks_.pop_front();
    }
    lock.unlock();
    std::string body = "{\"acks\":[";
    for (size_t i = 0; i < batch.size(); ++i) {
      if (i > 0) body += ',';
      body += "{\"lease_id\":" + boost::json::serialize(boost::json::string(batch[i].lease_id));
      if (!batch[i].result.empty()) body += ",\"result\":" + batch[i].result;
      body += '}';
    }
    body += "]}";
    for (int attempt = 1; attempt <= 3; ++attempt) {
      try {
        auto answer = http_.Call("POST", "/v1/leases/ack", body);
        for (const auto& r : answer.as_object().at("results").as_array()) {
          if (const auto* e = r.as_object().if_contains("error")) {
            Log("ack refused: " + boost::json::serialize(*e));
          }
        }
        break;
      } catch (const std::exception& e) {
        if (attempt == 3) {
          Log(std::string("ack batch failed; the leases will expire and the tasks retry: ") +
              e.what());
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(100 * attempt * attempt));
        }
      }
    }
    Reported(static_cast<int>(batch.size()));
    lock.lock();
  }
}

// Close's grace ran out: ask every running handler to stop and hand its task back with a fast
// retry; tasks leased but not yet started are handed back too.
void Worker::Impl::HandBack() {
  std::vector<std::shared_ptr<Execution>> left;
  {
    std::lock_guard lock(mu_);
    left.assign(running_.begin(), running_.end());
    left.insert(left.end(), queue_.begin(), queue_.end());
  }
  for (const auto& ex : left) {
    int state = ex->state.load();
    if ((state != Execution::kRunning && state != Execution::kQueued) ||
        !ex->state.compare_exchange_strong(state, Execution::kAbandoned)) {
      continue;
    }
    ex->Stop(StopCause::kWorkerClosed);
    SendFail(*ex, "WorkerClosed", "worker closed before the task finished", "fast");
    Reported(1);
  }
}

}  // namespace madeira::sdk
