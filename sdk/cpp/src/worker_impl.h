// The worker's moving parts, shared by worker.cc (lifecycle, leasing, heartbeat) and
// execute.cc (handler slots, lease extension, acks and fails).
#ifndef MADEIRA_SDK_SRC_WORKER_IMPL_H_
#define MADEIRA_SDK_SRC_WORKER_IMPL_H_

#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include "madeira/worker.h"
#include "transport.h"

namespace madeira::sdk {

// A leased task from lease to report. Reported exactly once: by its slot thread (kFinished) or
// by Close's hand-back (kAbandoned), whichever wins the state exchange.
struct Execution {
  enum State { kQueued, kRunning, kFinished, kAbandoned };
  Lease lease;
  std::chrono::steady_clock::time_point received;
  std::chrono::steady_clock::time_point deadline;
  std::chrono::steady_clock::time_point next_extend;
  std::chrono::milliseconds lease_for{0};
  bool extending = false;  // an extend asked for and not yet answered (guarded by the worker's mu_)
  std::stop_source stop;
  std::atomic<StopCause> cause{StopCause::kNone};
  std::atomic<int> state{kQueued};

  // Only the first cause counts: a deadline followed by Close stays a deadline.
  void Stop(StopCause why) {
    StopCause none = StopCause::kNone;
    cause.compare_exchange_strong(none, why);
    stop.request_stop();
  }
};

namespace internal {

// When the server ends an attempt: it never extends a lease past timeout_ms after the attempt
// began, and the lease's first deadline (`lease_deadline`, Time{} when absent) is that
// beginning + lease_for. The attempt began during the lease call, so a beginning within
// [sent - 1 s, received] means the clocks agree and it is used: timing from the lease's receipt
// would be up to a round trip late, and an extend answered in that window would report the
// deadline as a lost lease. Outside it the clocks disagree (a server clock behind would
// otherwise end every attempt at once) and the deadline is timed from the receipt
// (`received_steady`, the same moment as `received`). The Java SDK's attemptStart keeps the
// same rule.
std::chrono::steady_clock::time_point AttemptDeadline(
    Time lease_deadline, std::chrono::milliseconds lease_for, std::chrono::milliseconds timeout,
    std::chrono::system_clock::time_point sent, std::chrono::system_clock::time_point received,
    std::chrono::steady_clock::time_point received_steady);

}  // namespace internal

struct PendingAck {
  std::string lease_id;
  std::string result;  // JSON text, empty for none
};

class Worker::Impl {
 public:
  Impl(Client& client, WorkerOptions options);

  void Handle(const std::string& task_type, std::vector<int> versions, Handler h);
  void Start();
  bool Close(std::chrono::milliseconds grace);
  void Log(const std::string& line) const;

  WorkerOptions opts_;

 private:
  // worker.cc
  int Acquire();
  void LeaseDone(int unused);
  void LeaseLoop();
  void HeartbeatLoop();
  // `sent`: when the lease request went out; `asked`: the slots it asked for.
  void Dispatch(const boost::json::value& answer, std::chrono::system_clock::time_point sent,
                int asked);
  void JoinAll();

  // execute.cc
  void SlotLoop();
  void Run(const std::shared_ptr<Execution>& ex);
  void TickerLoop();
  void ExtendLoop();
  void AckLoop();
  void SendFail(const Execution& ex, const std::string& type, const std::string& message,
                const std::string& retry);
  void Reported(int n);
  void HandBack();

  Client& client_;
  internal::Transport& http_;
  std::map<std::string, Handler> handlers_;
  std::map<std::string, std::vector<int>> task_types_;

  std::mutex mu_;
  // One condition per kind of waiter, so a freed slot does not wake every handler thread.
  std::condition_variable queue_cv_;   // a lease queued for the slot threads, or shutdown
  std::condition_variable lease_cv_;   // slots freed, or leasing stopped
  std::condition_variable ack_cv_;     // an ack to send, or shutdown
  std::condition_variable done_cv_;    // tasks reported
  std::condition_variable tick_cv_;    // ticker shutdown
  std::condition_variable extend_cv_;  // an extend to send, or shutdown
  int state_ = 0;                      // 0 new, 1 started, 2 closed
  int free_ = 0;                       // slots neither running nor promised to a lease request
  int leasing_ = 0;                    // lease requests in flight
  int outstanding_ = 0;                // leased tasks not yet reported (acked, failed or given up)
  std::deque<std::shared_ptr<Execution>> queue_;  // leased, waiting for a slot thread
  std::set<std::shared_ptr<Execution>> running_;
  std::deque<PendingAck> acks_;
  std::deque<std::shared_ptr<Execution>> extends_;  // asked for by the ticker, for ExtendLoop
  bool stop_leasing_ = false;
  bool stop_threads_ = false;
  std::atomic<bool> abort_requests_{false};

  std::vector<std::thread> leasers_, slots_, helpers_;
};

}  // namespace madeira::sdk

#endif  // MADEIRA_SDK_SRC_WORKER_IMPL_H_
