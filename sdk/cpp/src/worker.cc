// Worker lifecycle, leasing and heartbeats.
#include <signal.h>
#include <unistd.h>

#include <iostream>
#include <random>

#include "decode.h"
#include "worker_impl.h"

namespace madeira::sdk {
namespace {

// Up to kLeasers lease requests are in flight at once: while one long-polls, another may ask
// for the slots freed meanwhile once 1/kPipelineFactor of them are free, so a busy worker never
// idles waiting for a round-trip and never degenerates into one-task requests.
constexpr int kLeasers = 3;
constexpr int kPipelineFactor = 8;
constexpr int kMaxLeaseBatch = 100;
constexpr int kAckers = 2;

std::string DefaultWorkerId() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == 0)
    std::snprintf(host, sizeof host, "cpp");
  std::random_device rd;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%08x", rd());
  return std::string(host) + "-" + std::to_string(getpid()) + "-" + suffix;
}

bool ValidName(std::string_view s) {
  try {
    Task probe;
    probe.task_type = std::string(s);
    probe.payload_version = 1;
    probe.Validate();
    return true;
  } catch (const ValidationError&) {
    return false;
  }
}

}  // namespace

Worker::Impl::Impl(Client& client, WorkerOptions options)
    : opts_(std::move(options)), client_(client), http_(client.transport()) {
  if (opts_.slots <= 0) opts_.slots = 10;
  using std::chrono::milliseconds;
  if (opts_.poll_wait <= milliseconds(0)) opts_.poll_wait = milliseconds(5000);
  opts_.poll_wait = std::min(opts_.poll_wait, milliseconds(30000));
  if (opts_.heartbeat_interval <= milliseconds(0) ||
      opts_.heartbeat_interval > milliseconds(10000)) {
    opts_.heartbeat_interval = milliseconds(5000);
  }
  if (opts_.worker_id.empty()) opts_.worker_id = DefaultWorkerId();
  free_ = opts_.slots;
}

void Worker::Impl::Log(const std::string& line) const {
  if (opts_.log) {
    opts_.log(line);
  } else {
    std::cerr << "madeira worker " << opts_.worker_id << ": " << line << '\n';
  }
}

void Worker::Impl::Handle(const std::string& task_type, std::vector<int> versions, Handler h) {
  std::lock_guard lock(mu_);
  if (state_ != 0) throw Error("madeira: Handle called after Start");
  if (!ValidName(task_type)) throw Error("madeira: invalid task type \"" + task_type + "\"");
  if (versions.empty()) throw Error("madeira: Handle needs at least one payload version");
  for (int v : versions) {
    if (v < 1) throw Error("madeira: invalid payload version " + std::to_string(v));
  }
  if (!h) throw Error("madeira: empty handler");
  if (handlers_.contains(task_type)) {
    throw Error("madeira: a handler for \"" + task_type + "\" is already registered");
  }
  handlers_[task_type] = std::move(h);
  task_types_[task_type] = std::move(versions);
}

void Worker::Impl::Start() {
  std::lock_guard lock(mu_);
  if (state_ != 0) throw Error("madeira: worker already started");
  if (opts_.queues.empty()) throw Error("madeira: WorkerOptions.queues is empty");
  for (const auto& q : opts_.queues) {
    if (!ValidName(q)) throw Error("madeira: invalid queue \"" + q + "\"");
  }
  if (handlers_.empty()) throw Error("madeira: no handlers registered");
  state_ = 1;
  helpers_.emplace_back([this] { HeartbeatLoop(); });
  helpers_.emplace_back([this] { TickerLoop(); });
  helpers_.emplace_back([this] { ExtendLoop(); });
  for (int i = 0; i < kAckers; ++i) helpers_.emplace_back([this] { AckLoop(); });
  for (int i = 0; i < opts_.slots; ++i) slots_.emplace_back([this] { SlotLoop(); });
  for (int i = 0; i < kLeasers; ++i) leasers_.emplace_back([this] { LeaseLoop(); });
}

bool Worker::Impl::Close(std::chrono::milliseconds grace) {
  {
    std::lock_guard lock(mu_);
    if (state_ != 1) {
      state_ = 2;
      return true;
    }
    state_ = 2;
    stop_leasing_ = true;
  }
  abort_requests_ = true;  // ends the long polls now rather than after wait_ms
  lease_cv_.notify_all();
  for (auto& t : leasers_) t.join();
  bool in_time;
  {
    std::unique_lock lock(mu_);
    in_time = done_cv_.wait_for(lock, grace, [this] { return outstanding_ == 0; });
  }
  if (!in_time) HandBack();
  {
    std::unique_lock lock(mu_);
    done_cv_.wait(lock, [this] { return outstanding_ == 0; });
    stop_threads_ = true;
  }
  JoinAll();
  return in_time;
}

void Worker::Impl::JoinAll() {
  queue_cv_.notify_all();
  ack_cv_.notify_all();
  tick_cv_.notify_all();
  extend_cv_.notify_all();
  for (auto& t : slots_) t.join();
  for (auto& t : helpers_) t.join();
}

// Takes every free slot (at most kMaxLeaseBatch) once enough are free; 0 when leasing stops.
int Worker::Impl::Acquire() {
  std::unique_lock lock(mu_);
  while (true) {
    if (stop_leasing_) return 0;
    int need = leasing_ > 0 ? std::max(1, opts_.slots / kPipelineFactor) : 1;
    int n = std::min(free_, kMaxLeaseBatch);
    if (n >= need) {
      free_ -= n;
      ++leasing_;
      return n;
    }
    lease_cv_.wait(lock);
  }
}

void Worker::Impl::LeaseDone(int unused) {
  {
    std::lock_guard lock(mu_);
    --leasing_;
    free_ += unused;
  }
  lease_cv_.notify_all();
}

void Worker::Impl::LeaseLoop() {
  boost::json::object req;
  req["worker_id"] = opts_.worker_id;
  boost::json::array queues;
  for (const auto& q : opts_.queues) queues.emplace_back(q);
  req["queues"] = std::move(queues);
  boost::json::object types;
  for (const auto& [type, versions] : task_types_) {
    boost::json::array vs(versions.begin(), versions.end());
    types[type] = std::move(vs);
  }
  req["task_types"] = std::move(types);
  req["wait_ms"] = opts_.poll_wait.count();
  if (opts_.lease_duration.count() > 0) req["lease_ms"] = opts_.lease_duration.count();
  std::chrono::milliseconds backoff(0);
  while (int n = Acquire()) {
    req["max_tasks"] = n;
    try {
      auto sent = std::chrono::system_clock::now();
      auto answer = http_.Call("POST", "/v1/leases", boost::json::serialize(req),
                               opts_.poll_wait + std::chrono::seconds(30), &abort_requests_);
      Dispatch(answer, sent, n);
      backoff = std::chrono::milliseconds(0);
      continue;
    } catch (const std::exception& e) {
      LeaseDone(n);
      if (abort_requests_) return;
      backoff =
          std::clamp(backoff * 2, std::chrono::milliseconds(100), std::chrono::milliseconds(5000));
      Log(std::string("lease request failed, retrying in ") + std::to_string(backoff.count()) +
          " ms: " + e.what());
    }
    std::unique_lock lock(mu_);
    lease_cv_.wait_for(lock, backoff, [this] { return stop_leasing_; });
  }
}

// Queues one execution per lease for the slot threads.
void Worker::Impl::Dispatch(const boost::json::value& answer,
                            std::chrono::system_clock::time_point sent, int asked) {
  const auto at = std::chrono::steady_clock::now();
  const auto received = std::chrono::system_clock::now();
  std::vector<std::shared_ptr<Execution>> got;
  for (const auto& v : answer.as_object().at("leases").as_array()) {
    const auto& o = v.as_object();
    auto ex = std::make_shared<Execution>();
    ex->lease.id = internal::Str(o, "lease_id");
    ex->lease.deadline = internal::TimeAt(o, "deadline").value_or(Time{});
    ex->lease.fencing_token = internal::Int(o, "fencing_token");
    ex->lease.task = internal::DecodeTask(o.at("task").as_object());
    auto timeout = ex->lease.task.timeout.count() > 0 ? ex->lease.task.timeout
                                                      : std::chrono::milliseconds(30000);
    ex->received = at;
    ex->lease_for = opts_.lease_duration.count() > 0 && opts_.lease_duration < timeout
                        ? opts_.lease_duration
                        : timeout;
    ex->deadline =
        internal::AttemptDeadline(ex->lease.deadline, ex->lease_for, timeout, sent, received, at);
    ex->next_extend = at + ex->lease_for / 3;
    got.push_back(std::move(ex));
  }
  {
    std::lock_guard lock(mu_);
    --leasing_;
    free_ += asked - static_cast<int>(got.size());
    outstanding_ += static_cast<int>(got.size());
    for (auto& ex : got) queue_.push_back(std::move(ex));
  }
  lease_cv_.notify_all();
  for (size_t i = 0; i < got.size(); ++i) queue_cv_.notify_one();
}

void Worker::Impl::HeartbeatLoop() {
  boost::json::object hb;
  hb["worker_id"] = opts_.worker_id;
  hb["language"] = "cpp";
  hb["sdk_version"] = std::string(kSdkVersion);
  boost::json::array queues;
  for (const auto& q : opts_.queues) queues.emplace_back(q);
  hb["queues"] = std::move(queues);
  std::string body = boost::json::serialize(hb);
  std::unique_lock lock(mu_);
  while (!stop_threads_) {
    lock.unlock();
    try {
      http_.Call("POST", "/v1/workers/heartbeat", body, std::chrono::seconds(10));
    } catch (const std::exception& e) {
      Log(std::string("heartbeat failed: ") + e.what());
    }
    lock.lock();
    tick_cv_.wait_for(lock, opts_.heartbeat_interval, [this] { return stop_threads_; });
  }
}

// The public face forwards to Impl.

Worker::Worker(Client& client, WorkerOptions options)
    : impl_(std::make_unique<Impl>(client, std::move(options))) {}

Worker::~Worker() { impl_->Close(std::chrono::milliseconds(0)); }

void Worker::Handle(const std::string& task_type, std::vector<int> versions, Handler h) {
  impl_->Handle(task_type, std::move(versions), std::move(h));
}

void Worker::Start() { impl_->Start(); }

bool Worker::Close(std::chrono::milliseconds grace) { return impl_->Close(grace); }

const std::string& Worker::id() const { return impl_->opts_.worker_id; }

bool Worker::RunUntilSignal(std::chrono::milliseconds grace) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  // Blocked before Start so the worker's threads inherit the mask and sigwait gets the signal.
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  Start();
  int sig = 0;
  sigwait(&set, &sig);
  return Close(grace);
}

}  // namespace madeira::sdk
