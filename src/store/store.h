// The Store: what the engine needs remembered, each operation atomic in every backend.
// The engine decides (retry policy, fencing rules, validation); a store only remembers and
// applies. Operations are asynchronous: the callback runs on a store thread, exactly once.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/retry_policy.h"
#include "core/task.h"

namespace madeira::store {

using core::Millis;
using core::Result;

template <typename T>
using Callback = std::function<void(Result<T>)>;

struct Unit {};  // the value of an operation that returns nothing

// kStaleSchemas: not stored, because the schemas it was validated against (SubmitValidated) are
// no longer the installation's; validate it again and resubmit.
enum class SubmitKind { kCreated, kDuplicate, kConflict, kStaleSchemas };

struct SubmitOutcome {
  SubmitKind kind = SubmitKind::kCreated;
  std::string task_id;
  core::TaskStatus status = core::TaskStatus::kPending;  // for a duplicate: the stored status
};

struct LeaseRequest {
  std::string worker_id;
  std::vector<std::string> queues;
  // task_type -> payload versions handled; empty map = every type and version.
  std::map<std::string, std::vector<int>> task_types;
  int max_tasks = 1;
  std::optional<Millis> lease_ms;  // default and upper bound: the task's timeout_ms
  Millis now = 0;
  Millis idempotency_ttl = 24 * 3600 * 1000;
};

struct Lease {
  std::string lease_id;   // opaque; a new one for every attempt
  int64_t fencing_token;  // grows with every lease of the same task
  Millis deadline = 0;
  core::Task task;      // status running, attempts = this attempt's number
  Millis ready_at = 0;  // when the task became ready (dispatch latency = lease time - this)
};

struct LeaseBatch {
  std::vector<Lease> leases;
  // Tasks completed as succeeded + deduplicated (their idempotency_key already succeeded).
  std::vector<std::string> deduplicated;
};

// Detail of a finished attempt beyond its outcome (webhook deliveries fill these).
struct AttemptDetail {
  std::optional<int> http_status;
  std::optional<std::string> response_excerpt;
};

struct AckRequest {
  std::string lease_id;
  std::optional<std::string> result;  // JSON value
  Millis now = 0;
  Millis idempotency_ttl = 24 * 3600 * 1000;
  AttemptDetail detail;
};

// What a finished attempt did, for metrics and wake-ups.
struct AttemptReport {
  // The task after the transition. After an Ack a store may leave the spec's payload and the
  // fields set at submit other than task_id, queue, task_type and idempotency_key unset: nobody
  // reads them there, and reading the payload back costs the drain.
  core::Task task;
  Millis attempt_started_at = 0;
  core::RetryDecision decision;  // for failures
};

// The engine's retry policy, run by the store inside its atomic section so that the
// decision and the transition cannot interleave with another process's.
using RetryDecider = std::function<core::RetryDecision(
    const core::Task& task, const core::Failure& failure, int fast_in_flight_for_type)>;

struct FailRequest {
  std::string lease_id;
  core::Failure failure;
  Millis now = 0;
  AttemptDetail detail;
};

struct ExtendRequest {
  std::string lease_id;
  Millis extend_ms = 0;
  Millis now = 0;
};

// Which dead tasks a bulk operation touches: explicit ids, or a filter (all fields optional).
struct DeadFilter {
  std::optional<std::string> queue;
  std::optional<std::string> task_type;
  std::optional<Millis> since;  // died at or after
};
struct DeadSelector {
  std::vector<std::string> task_ids;  // used when non-empty
  DeadFilter filter;
};

struct ReplayEdits {
  std::optional<std::string> payload;  // validated by the engine before the store sees it
  std::optional<int> payload_version;
  std::optional<int> max_retries;
};

// Run inside the replay's atomic section: may refuse one task (e.g. the edited payload fails
// the schema of its type). A refused task stays dead; a single-task replay returns the error.
using ReplayCheck = std::function<Result<Unit>(const core::Task& task, const ReplayEdits& edits)>;

struct SearchQuery {
  std::optional<core::TaskStatus> status;
  std::optional<std::string> queue;
  std::optional<std::string> task_type;
  std::optional<std::string> trace_id;
  std::optional<std::string> owner;  // submitted by the tokens of this name (TaskSpec::owner)
  std::optional<Millis> dead_since;  // with status dead: died at or after
  int limit = 50;
  std::optional<int64_t> cursor;  // seq to continue below (newest first)
};

struct SearchPage {
  std::vector<core::Task> tasks;
  std::optional<int64_t> next_cursor;
};

struct DepthRow {
  std::string queue;
  core::TaskStatus state;
  int64_t count = 0;
};

struct SchemaRecord {
  std::string task_type;
  int version = 1;
  std::string schema;  // JSON text
  Millis created_at = 0;
};

// Every stored schema, and which set of them that is: `version` changes with every PutSchema
// of a store shared by processes ("" for the embedded store, whose process holds them all).
struct SchemaSet {
  std::vector<SchemaRecord> schemas;
  std::string version;
};

// ---- webhooks: endpoints and events (SPEC §3 "Events and webhooks") ----

// A subscription as the delivery layer configured it. The store keeps `config` (a JSON object,
// secrets included) opaque: validation and meaning are delivery/endpoint.h's.
struct EndpointRecord {
  std::string endpoint_id;
  std::string config;  // JSON object text
  Millis created_at = 0;
  Millis updated_at = 0;
};

struct EventRecord {
  std::string source;
  std::string event_id;  // unique per source
  std::string event_type;
  std::string payload;  // JSON text as received
  std::string trace_id;
  std::optional<std::string> target_uri;
  Millis received_at = 0;
};

// One delivery of an event: the webhook.delivery task made for one endpoint.
struct NewDelivery {
  std::string endpoint_id;
  core::TaskSpec task;
};

struct EventDelivery {
  std::string endpoint_id;
  std::string task_id;
  core::TaskStatus status = core::TaskStatus::kPending;  // the task's current status
};

struct StoredEvent {
  EventRecord event;
  std::vector<EventDelivery> deliveries;  // in the order they were made
};

struct EventSubmitOutcome {
  bool duplicate = false;  // (source, event_id) was already stored; nothing was written
  StoredEvent stored;      // what is stored now (the earlier event when duplicate)
};

// ---- rate limits shared by the processes of one installation (webhook endpoints) ----

struct TokenRequest {
  std::string bucket;         // a name; the deliverer uses the endpoint's queue
  double per_second = 0;      // > 0
  int burst = 1;              // the bucket's size (values below 1 act as 1)
  int wanted = 1;             // tokens to take
  Millis max_wait_ms = 0;     // tokens due this far ahead may be reserved (0: only those due now)
  std::optional<Millis> now;  // the bucket's clock: empty = the store's own (tests pass one)
};

struct TokenGrant {
  int granted = 0;     // 0..wanted, taken from the bucket
  Millis wait_ms = 0;  // granted > 0: use them from now + wait_ms on (<= max_wait_ms);
                       // granted 0: when the next token is due
};

// What a ChangeHandler is told when webhook endpoints changed.
inline constexpr std::string_view kEndpointsChanged = "endpoints";

class Store {
 public:
  virtual ~Store() = default;

  // Inserts each task unless its task_id exists: same content_hash -> kDuplicate, else
  // kConflict. Status is scheduled when schedule_time > now, else pending. Durable before
  // the callback runs.
  virtual void Submit(std::vector<core::TaskSpec> tasks, Millis now,
                      Callback<std::vector<SubmitOutcome>> done) = 0;
  // Submit, for tasks whose payloads were validated against the schemas of SchemaSet
  // `schemas_version` (ListSchemaSet): a store shared by processes answers kStaleSchemas for
  // each task, and stores none of them, once another PutSchema has changed the set since; so
  // a schema holds for every submit, through any process, that begins after its PutSchema
  // ended. The embedded store is never shared and ignores the version.
  virtual void SubmitValidated(std::vector<core::TaskSpec> tasks, Millis now,
                               std::string schemas_version,
                               Callback<std::vector<SubmitOutcome>> done) {
    Submit(std::move(tasks), now, std::move(done));
  }

  // Leases up to max_tasks pending tasks of the queues: priority DESC, then ready time, then
  // submit order. A task whose idempotency_key has a running sibling is skipped; one whose key
  // succeeded within the ttl is completed as succeeded + deduplicated instead.
  virtual void Lease(LeaseRequest request, Callback<LeaseBatch> done) = 0;

  // kLeaseLost unless lease_id is the task's current lease and the task is running.
  virtual void Ack(AckRequest request, Callback<AttemptReport> done) = 0;
  // A worker's batch of acks (done[i] answers requests[i], each alone): a store that groups
  // what is queued takes them together rather than as they trickle in one by one.
  virtual void AckBatch(std::vector<AckRequest> requests,
                        std::vector<Callback<AttemptReport>> done) {
    for (size_t i = 0; i < requests.size(); ++i) Ack(std::move(requests[i]), std::move(done[i]));
  }
  virtual void Fail(FailRequest request, RetryDecider decide, Callback<AttemptReport> done) = 0;
  // New deadline = min(now + extend_ms, attempt start + timeout_ms).
  virtual void Extend(ExtendRequest request, Callback<Millis> done) = 0;

  // Every running task whose lease deadline <= now fails with outcome lease_expired.
  virtual void ExpireLeases(Millis now, RetryDecider decide,
                            Callback<std::vector<AttemptReport>> done) = 0;
  // scheduled/retrying tasks due at or before now become pending; returns their queues
  // (a queue once per task made ready).
  virtual void PromoteDue(Millis now, Callback<std::vector<std::string>> done) = 0;
  // The earliest due time of a scheduled/retrying task or lease deadline; empty if none.
  virtual void NextWakeup(Callback<std::optional<Millis>> done) = 0;

  // scheduled/pending/retrying/dead -> cancelled. running -> kTaskRunning; succeeded or
  // cancelled -> kTaskTerminal; unknown -> kNotFound.
  virtual void Cancel(std::string task_id, Millis now, Callback<core::Task> done) = 0;
  // dead -> pending with retry_count 0 and the edits applied; the attempt log is kept.
  // Single id that is not dead -> kTaskNotDead. Returns the replayed tasks.
  virtual void Replay(DeadSelector selector, ReplayEdits edits, ReplayCheck check, Millis now,
                      Callback<std::vector<core::Task>> done) = 0;
  virtual void CancelDead(DeadSelector selector, Millis now, Callback<int64_t> done) = 0;

  virtual void Get(std::string task_id, Callback<core::Task> done) = 0;
  virtual void Attempts(std::string task_id, Callback<std::vector<core::Attempt>> done) = 0;
  virtual void Search(SearchQuery query, Callback<SearchPage> done) = 0;
  virtual void Depths(Callback<std::vector<DepthRow>> done) = 0;

  virtual void PutSchema(SchemaRecord schema, Callback<Unit> done) = 0;
  virtual void GetSchema(std::string task_type, int version, Callback<SchemaRecord> done) = 0;
  virtual void ListSchemas(Callback<std::vector<SchemaRecord>> done) = 0;
  // ListSchemas with the version of the set (see SchemaSet).
  virtual void ListSchemaSet(Callback<SchemaSet> done) {
    ListSchemas([done = std::move(done)](Result<std::vector<SchemaRecord>> schemas) {
      if (!schemas) return done(schemas.error());
      done(SchemaSet{std::move(*schemas), ""});
    });
  }

  // Create or replace by endpoint_id.
  virtual void PutEndpoint(EndpointRecord endpoint, Callback<Unit> done) = 0;
  // kNotFound when absent. The endpoint's delivery tasks stay as they are.
  virtual void DeleteEndpoint(std::string endpoint_id, Callback<Unit> done) = 0;
  virtual void GetEndpoint(std::string endpoint_id, Callback<EndpointRecord> done) = 0;
  // Oldest first.
  virtual void ListEndpoints(Callback<std::vector<EndpointRecord>> done) = 0;

  // Stores the event and submits its deliveries' tasks in one atomic, durable step, unless
  // (source, event_id) is already stored: then nothing is written and the outcome is the stored
  // event, marked duplicate. Delivery tasks are submitted as Submit would (pending or
  // scheduled); a task_id that already exists (whatever its content) is kTaskIdConflict and
  // nothing is written.
  virtual void SubmitEvent(EventRecord event, std::vector<NewDelivery> deliveries, Millis now,
                           Callback<EventSubmitOutcome> done) = 0;
  // Adds deliveries (a redelivery) to a stored event, atomically. kNotFound when the event is
  // not stored. Returns the event with every delivery it now has.
  virtual void AddDeliveries(std::string source, std::string event_id,
                             std::vector<NewDelivery> deliveries, Millis now,
                             Callback<StoredEvent> done) = 0;
  // The event with this id; with no source given and the id used by several sources, the one
  // received last. kNotFound when absent.
  virtual void GetEvent(std::string event_id, std::optional<std::string> source,
                        Callback<StoredEvent> done) = 0;

  // Readiness: the backend answers.
  virtual void Ping(Callback<Unit> done) = 0;

  // A store shared by several processes keeps token buckets they all draw from, so that a rate
  // limit holds across processes. The embedded store is never shared: it says so, and grants
  // whatever is asked (the caller's own limit is the only one).
  virtual bool SharesRateLimits() const { return false; }
  virtual void TakeTokens(TokenRequest request, Callback<TokenGrant> done) {
    done(TokenGrant{request.wanted, 0});
  }

  // Work another process sharing this store made ready: tasks per queue. A store shared by
  // several processes calls the handler (on a thread of its own) so that long-polls parked
  // here wake at once; the embedded store is never shared and ignores it. nullptr unsets it.
  using ReadyHandler = std::function<void(const std::map<std::string, int>& ready_by_queue)>;
  virtual void SetReadyHandler(ReadyHandler handler) {}
  // Work another process sharing this store made due at a time (a delayed task, a retry, a
  // lease deadline): a process that runs the timers may not be the one that took the submit or
  // the lease (roles, or a process that died), so it arms its due-work timer no later than
  // that. Called like the ready handler; the embedded store ignores it. nullptr unsets it.
  using DueHandler = std::function<void(Millis due_at)>;
  virtual void SetDueHandler(DueHandler handler) {}
  // True when the store also calls the ready handler for the tasks this process submits, as
  // soon as they can be leased (before Submit's callback, which may wait for their record):
  // the engine then leaves waking its long-polls for them to the store.
  virtual bool WakesOwnSubmits() const { return false; }
  // True when other processes may change what this one has loaded (schemas): the engine then
  // reads them again every second. The embedded store is never shared.
  virtual bool SharedByProcesses() const { return false; }

  // Shared configuration that `what` names (kEndpointsChanged: what PutEndpoint / DeleteEndpoint
  // write) may have changed under this process, so the caller should read it again: another
  // process sharing the store changed it, or the store may have missed such news (it also calls
  // the handler after it (re)subscribes and periodically). A store shared by several processes
  // calls the handler on a thread of its own; the embedded store is never shared and ignores
  // it. The handler must not block nor set the handler; once SetChangeHandler returns, the
  // previous handler is not running and is never called again. nullptr unsets it.
  using ChangeHandler = std::function<void(std::string_view what)>;
  virtual void SetChangeHandler(ChangeHandler handler) {}

  // Finishes queued work, flushes, and stops the store's threads. Idempotent.
  virtual void Close() = 0;
};

}  // namespace madeira::store
