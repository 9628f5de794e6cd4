// Engine::Impl, shared by the engine_*.cc files: each file holds one concern of the
// dispatcher (submit and leases, failures and timers, dead letters and schemas).
#pragma once

#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <set>

#include "engine/engine.h"
#include "engine/engine_metrics.h"
#include "engine/lease_waiters.h"

namespace madeira::engine {

namespace asio = boost::asio;
using SteadyTime = std::chrono::steady_clock::time_point;

class Engine::Impl : public std::enable_shared_from_this<Impl> {
 public:
  // A task just stored, as OnCreated counts and wakes it.
  struct CreatedTask {
    std::string queue, task_type;
    Millis due = 0;
  };

  Impl(asio::any_io_executor executor, store::Store& store, const core::Clock& clock,
       core::Random& random, core::Metrics& metrics, EngineConfig config)
      : strand_(asio::make_strand(executor)),
        store_(store),
        clock_(clock),
        random_(random),
        metrics_(metrics),
        config_(std::move(config)),
        waiters_(executor),
        timer_(strand_) {
    metric::DescribeTaskMetrics(metrics_);
  }

  void Start(Callback<Unit> done);
  const EngineConfig& config() const { return config_; }

  void Stop() {
    stopped_ = true;
    waiters_.Stop();
    asio::post(strand_, [self = shared_from_this()] {
      self->timer_.cancel();
      self->schema_timer_.cancel();
    });
  }

  void Submit(std::vector<boost::json::value> envelopes, std::string owner,
              Callback<std::vector<Result<store::SubmitOutcome>>> done);
  void Lease(LeaseParams params, Callback<std::vector<store::Lease>> done) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(params.wait_ms);
    TryLease(std::make_shared<const LeaseParams>(std::move(params)), deadline, std::move(done));
  }
  void Ack(std::string lease_id, std::optional<std::string> result, store::AttemptDetail detail,
           Callback<Unit> done);
  void AckBatch(std::vector<AckParams> acks, std::vector<Callback<Unit>> done);
  void SubmitEvent(store::EventRecord event, std::vector<store::NewDelivery> deliveries,
                   Callback<store::EventSubmitOutcome> done);
  void AddDeliveries(std::string source, std::string event_id,
                     std::vector<store::NewDelivery> deliveries, Callback<store::StoredEvent> done);
  void SetQueuePolicy(const std::string& queue, std::optional<core::RetryPolicy> policy) {
    std::lock_guard lock(policies_mu_);
    if (policy) {
      queue_policies_[queue] = std::make_shared<const core::RetryPolicy>(*policy);
    } else {
      queue_policies_.erase(queue);
    }
  }
  void Fail(FailParams params, Callback<FailResult> done);
  void Replay(store::DeadSelector selector, store::ReplayEdits edits,
              Callback<std::vector<core::Task>> done);
  void PutSchema(std::string task_type, int version, boost::json::value schema,
                 Callback<Unit> done);
  void RefreshGauges(Callback<Unit> done);
  void RunDueWork(Callback<Unit> done);
  void Heartbeat(const WorkerHeartbeat& hb) {
    metrics_.Set(metric::kWorkerLastSeen, {{"worker_id", hb.worker_id}, {"language", hb.language}},
                 static_cast<double>(clock_.Now()) / 1000.0);
  }

  store::Store& store() { return store_; }
  Millis Now() const { return clock_.Now(); }

 private:
  store::AckRequest AckRequestFor(std::string lease_id, std::optional<std::string> result,
                                  store::AttemptDetail detail, Millis now) const;
  // Counts a finished ack and wakes what it released, then answers `done`.
  Callback<store::AttemptReport> OnAcked(Millis now, Callback<Unit> done);
  void TryLease(std::shared_ptr<const LeaseParams> params, SteadyTime deadline,
                Callback<std::vector<store::Lease>> done);
  void OnLeased(const std::vector<store::Lease>& leases, Millis now);
  void OnAttemptFailed(const store::AttemptReport& report, Millis now,
                       core::AttemptOutcome outcome);
  store::RetryDecider MakeDecider(Millis now);
  // Shared: an endpoint update may replace a queue's policy while a decision uses it.
  std::shared_ptr<const core::RetryPolicy> PolicyFor(const core::Task& task) const;
  // Counts freshly stored tasks, wakes their queues' waiters and arms the timer for the
  // scheduled ones (public submits and built-in deliveries alike).
  void OnCreated(const std::vector<CreatedTask>& created, Millis now);
  static std::vector<CreatedTask> CreatedFrom(const std::vector<store::NewDelivery>& deliveries);
  void WakeQueue(const std::string& queue, int count = 1) { waiters_.Wake({{queue, count}}); }
  // Makes sure the timer fires no later than `due`.
  void ArmNoLaterThan(Millis due);
  void OnTimer();
  using SubmitSlot = std::optional<Result<store::SubmitOutcome>>;
  void Submit(std::vector<boost::json::value> envelopes, std::string owner, int schema_retries,
              Callback<std::vector<Result<store::SubmitOutcome>>> done);
  // The envelopes at `stale` were validated against schemas another process has changed since:
  // reads the schemas, then submits those again (into their slots), at most `schema_retries`
  // more times; then finish().
  void SubmitAgain(std::vector<size_t> stale,
                   std::shared_ptr<std::vector<boost::json::value>> envelopes, std::string owner,
                   int schema_retries, std::shared_ptr<std::vector<SubmitSlot>> slots,
                   std::function<void()> finish);

  // ---- schemas (engine_schemas.cc) ----
  // Reads the stored schema set and loads it: the schemas that differ from what this process
  // compiled, and the set's version, which every submit hands the store (SubmitValidated) so
  // that a schema put through another process holds here from then on. At start, every
  // kSchemaSync on a store other processes share, and when a submit or replay needs it.
  void ReadSchemas(Callback<Unit> done);
  // Loads the set of the read numbered `read` unless a later read's is loaded already.
  void LoadSchemaSet(uint64_t read, const store::SchemaSet& set);
  void SyncSchemasLater();
  std::string SchemasVersion();

  asio::strand<asio::any_io_executor> strand_;
  store::Store& store_;
  const core::Clock& clock_;
  core::Random& random_;
  core::Metrics& metrics_;
  // Its own: handlers posted before the Engine was destroyed still run, and read it.
  const EngineConfig config_;
  SchemaRegistry schemas_;
  LeaseWaiters waiters_;
  std::atomic<bool> stopped_{false};

  asio::steady_timer timer_;  // touched only on strand_
  asio::steady_timer schema_timer_{strand_};
  std::mutex schema_text_mu_;  // guards the next three lines, and loading sets into schemas_
  std::map<std::pair<std::string, int>, std::string> schema_text_;  // as compiled, by key
  std::string schemas_version_;                                     // of the set loaded last
  uint64_t schema_reads_ = 0, schema_read_loaded_ = 0;  // reads begun; the latest loaded
  std::mutex timer_mu_;
  Millis armed_for_ = std::numeric_limits<Millis>::max();

  mutable std::mutex policies_mu_;
  std::map<std::string, std::shared_ptr<const core::RetryPolicy>> queue_policies_;

  std::mutex gauges_mu_;
  std::set<core::Labels> depth_series_;  // reset to 0 when a queue/state empties
};

}  // namespace madeira::engine
