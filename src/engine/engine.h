// The dispatcher: validates and submits tasks, hands them out by lease, applies retry policy,
// wakes long-polling workers, and runs the timers for due tasks and expired leases.
// It talks to store::Store only; it never writes SQL or Redis commands.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/json/value.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/envelope.h"
#include "core/metrics.h"
#include "core/random.h"
#include "core/retry_policy.h"
#include "engine/schema_registry.h"
#include "store/store.h"

namespace madeira::engine {

using core::Millis;
using core::Result;
using store::Callback;
using store::Unit;

struct EngineConfig {
  core::EnvelopeLimits limits;
  Millis idempotency_ttl = 24 * 3600 * 1000;
  core::RetryPolicy default_retry = core::RetryPolicy::TaskDefaults();
  std::map<std::string, core::RetryPolicy> retry_by_type;   // [retry."order.close_timeout"]
  std::map<std::string, core::RetryPolicy> retry_by_queue;  // [retry."queue:orders"]
  // The wake-up timer is armed for the exact next due time or lease deadline; this caps one
  // wait only as a guard against wall-clock jumps (due times are wall-clock, the timer steady).
  Millis max_timer_interval = 10'000;
  // The scheduler's duty: promote due tasks and expire leases on timers. Off in a process whose
  // --role leaves that to another process sharing the store (redis-pg).
  bool run_timers = true;
};

struct LeaseParams {
  std::string worker_id;
  std::vector<std::string> queues;
  std::map<std::string, std::vector<int>> task_types;
  int max_tasks = 1;   // 1..100
  Millis wait_ms = 0;  // 0..30000
  std::optional<Millis> lease_ms;
};

struct AckParams {
  std::string lease_id;
  std::optional<std::string> result;  // JSON value
};

struct FailParams {
  std::string lease_id;
  std::string error;  // JSON object {"type","message","stack"?}
  core::RetryMode retry = core::RetryMode::kAuto;
  std::optional<Millis> retry_after_ms;
  // A receiver's Retry-After bounds the computed delay below instead of replacing it.
  bool retry_after_is_floor = false;
  store::AttemptDetail detail;
};

struct FailResult {
  core::TaskStatus status;  // pending, retrying or dead
  std::optional<Millis> next_attempt_at;
};

struct WorkerHeartbeat {
  std::string worker_id;
  std::string language;
  std::string sdk_version;
  std::vector<std::string> queues;
};

class Engine {
 public:
  Engine(boost::asio::any_io_executor executor, store::Store& store, const core::Clock& clock,
         core::Random& random, core::Metrics& metrics, EngineConfig config);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Loads schemas, arms the wake-up timer.
  void Start(Callback<Unit> done);
  // Cancels timers and answers parked long-polls with no leases.
  void Stop();

  // Each envelope judged alone (batch submit); one result per envelope, in order. `owner`: the
  // name of the token submitting them (TaskSpec::owner), "" for none.
  void Submit(std::vector<boost::json::value> envelopes, std::string owner,
              Callback<std::vector<Result<store::SubmitOutcome>>> done);

  // Long-polls up to wait_ms when nothing is ready; answers as soon as a task becomes ready.
  void Lease(LeaseParams params, Callback<std::vector<store::Lease>> done);
  void Ack(std::string lease_id, std::optional<std::string> result, Callback<Unit> done);
  // The same, keeping what the attempt saw (a webhook delivery's HTTP status and excerpt).
  void Ack(std::string lease_id, std::optional<std::string> result, store::AttemptDetail detail,
           Callback<Unit> done);
  // A worker's batch of acks, handed to the store together; done[i] answers acks[i].
  void AckBatch(std::vector<AckParams> acks, std::vector<Callback<Unit>> done);
  void Fail(FailParams params, Callback<FailResult> done);
  void Extend(std::string lease_id, Millis extend_ms, Callback<Millis> done);
  void Heartbeat(WorkerHeartbeat heartbeat);

  void Cancel(std::string task_id, Callback<core::Task> done);
  void Replay(std::string task_id, store::ReplayEdits edits, Callback<core::Task> done);
  void ReplayDead(store::DeadSelector selector, store::ReplayEdits edits, Callback<int64_t> done);
  void CancelDead(store::DeadSelector selector, Callback<int64_t> done);

  // Built-in tasks (webhook deliveries) skip the public envelope rules (their queues are
  // internal) but are stored, counted and woken like any other: the event and its deliveries
  // in one atomic step.
  void SubmitEvent(store::EventRecord event, std::vector<store::NewDelivery> deliveries,
                   Callback<store::EventSubmitOutcome> done);
  void AddDeliveries(std::string source, std::string event_id,
                     std::vector<store::NewDelivery> deliveries, Callback<store::StoredEvent> done);
  // A retry policy for one queue that outranks the configured ones (an endpoint's `retry`);
  // nullopt removes it.
  void SetQueuePolicy(const std::string& queue, std::optional<core::RetryPolicy> policy);

  void Get(std::string task_id, Callback<core::Task> done);
  void Attempts(std::string task_id, Callback<std::vector<core::Attempt>> done);
  void Search(store::SearchQuery query, Callback<store::SearchPage> done);

  void PutSchema(std::string task_type, int version, boost::json::value schema,
                 Callback<Unit> done);
  void GetSchema(std::string task_type, int version, Callback<store::SchemaRecord> done);
  void ListSchemas(Callback<std::vector<store::SchemaRecord>> done);

  // Refreshes the queue-depth gauges, then calls done (before /metrics renders).
  void RefreshGauges(Callback<Unit> done);
  void Ping(Callback<Unit> done);

  // Promotes due tasks and expires leases as of clock.Now(), then re-arms the timer.
  // The timer calls it; tests call it after moving a FakeClock.
  void RunDueWork(Callback<Unit> done);

  const EngineConfig& config() const;

 private:
  class Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace madeira::engine
