// The worker: leases tasks, runs the registered handlers on N threads, extends leases while
// they run, and reports outcomes (acks batched).
#ifndef MADEIRA_SDK_WORKER_H_
#define MADEIRA_SDK_WORKER_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "madeira/client.h"
#include "madeira/errors.h"
#include "madeira/task.h"

namespace madeira::sdk {

// One task handed to this worker; only the current lease can ack, fail or extend it.
struct Lease {
  std::string id;
  Time deadline{};
  int64_t fencing_token = 0;
  TaskInfo task;
};

// Why a handler was asked to stop.
enum class StopCause {
  kNone,
  kDeadline,      // the task's timeout_ms passed; its late result will not be acked
  kLeaseLost,     // 409 lease_lost on extend: another worker may now hold the task
  kWorkerClosed,  // Close's grace period ran out; the task was handed back (retry "fast")
};

// What a handler sees of its task. stop_token() is requested at the deadline, on lease loss and
// when Close's grace runs out; long handlers should poll it or use SleepFor.
class TaskContext {
 public:
  TaskContext(const Lease& lease, std::stop_token stop, const std::atomic<StopCause>* cause,
              std::chrono::steady_clock::time_point deadline)
      : lease_(lease), stop_(std::move(stop)), cause_(cause), deadline_(deadline) {}

  const Lease& lease() const { return lease_; }
  const TaskInfo& task() const { return lease_.task; }
  const boost::json::value& payload() const { return lease_.task.payload; }
  std::chrono::steady_clock::time_point deadline() const { return deadline_; }
  std::stop_token stop_token() const { return stop_; }

  bool Cancelled() const { return stop_.stop_requested(); }
  bool Lost() const { return Cause() == StopCause::kLeaseLost; }
  bool DeadlineExceeded() const { return Cause() == StopCause::kDeadline; }
  StopCause Cause() const { return cause_ != nullptr ? cause_->load() : StopCause::kNone; }

  // Sleeps for d unless asked to stop first; returns false when it was interrupted.
  bool SleepFor(std::chrono::milliseconds d) const;

 private:
  const Lease& lease_;
  std::stop_token stop_;
  const std::atomic<StopCause>* cause_;
  std::chrono::steady_clock::time_point deadline_;
};

// Runs one task. The returned value is the task's result (null for none) and acks it. Throw
// PermanentError to fail without retry, TransientError for a fast retry; any other exception
// is retried by the server's back-off ("auto").
using Handler = std::function<boost::json::value(TaskContext&)>;

struct WorkerOptions {
  std::vector<std::string> queues;  // required
  int slots = 10;                   // tasks run at once, one thread each
  std::string worker_id;            // default hostname-pid-random
  // lease_ms asked for; zero = the task's timeout_ms. Extended every lease/3 while running.
  std::chrono::milliseconds lease_duration{0};
  std::chrono::milliseconds poll_wait{5000};           // long-poll of one lease request, <= 30 s
  std::chrono::milliseconds heartbeat_interval{5000};  // <= 10 s
  // Failures the worker handles itself (default: a line on stderr).
  std::function<void(const std::string&)> log;
};

class Worker {
 public:
  // The client must outlive the worker.
  Worker(Client& client, WorkerOptions options);
  ~Worker();  // Close(0 s) if still running
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Registers h for task_type and the payload versions it understands; the server routes only
  // those versions here. Throws Error for bad arguments, a second registration, or after Start.
  void Handle(const std::string& task_type, std::vector<int> versions, Handler h);

  // Starts the threads: heartbeat, leasing, acks, lease extension and the handler slots.
  void Start();

  // Stops leasing, lets in-flight tasks finish within grace, then asks the rest to stop
  // (StopCause::kWorkerClosed) and fails them with retry "fast". Returns true when every task
  // finished in time. Blocks until every handler returned, so handlers should honour stop.
  bool Close(std::chrono::milliseconds grace);

  // Start, block until SIGINT or SIGTERM, then Close(grace). Call it from the main thread
  // before starting other threads: it blocks those signals so that only it receives them.
  bool RunUntilSignal(std::chrono::milliseconds grace);

  const std::string& id() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace madeira::sdk

#endif  // MADEIRA_SDK_WORKER_H_
