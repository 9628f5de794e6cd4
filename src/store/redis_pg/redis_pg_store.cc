#include "store/redis_pg/redis_pg_store.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "core/log.h"
#include "core/random.h"
#include "store/redis_pg/backend.h"
#include "store/redis_pg/ops.h"
#include "store/redis_pg/rate_bucket.h"
#include "store/redis_pg/recorder.h"

namespace madeira::store {

namespace {

using redis_pg::Backend;
using redis_pg::RedisCall;
using redis_pg::RedisReply;

// How long the wake-up subscriber blocks in one read (Close interrupts it at once), and waits
// before connecting again after losing Redis.
constexpr core::Millis kSubscriberRead = 5'000;
constexpr auto kSubscriberRetry = std::chrono::milliseconds(250);
// While PostgreSQL is away, how often the store thread asks whether it is back.
constexpr auto kRecordProbeInterval = std::chrono::milliseconds(500);
// Tasks or acks merged into one script call at most (one call blocks Redis for its length).
constexpr size_t kMergedPerCall = 100;
// Batches the store thread has sent to Redis and not answered yet, at most: the one Redis runs
// and the next (RedisPgStore::Loop).
constexpr size_t kBatchesInFlight = 2;
// A queue's count in the wake-up sent after the subscriber reconnects: wakes every waiter.
constexpr int kWakeAll = 1 << 20;

core::Error Unavailable(std::string message) {
  return core::MakeError(core::ErrorCode::kUnavailable, std::move(message));
}

// Runs a step; a lost connection is kUnavailable, anything else thrown (a throwing
// RetryDecider or ReplayCheck, a broken invariant) is kInternal for this operation alone.
template <typename T, typename Fn>
Result<T> Guarded(Fn&& fn) {
  try {
    return fn();
  } catch (const redis_pg::RedisIoError& e) {
    return Unavailable(e.what());
  } catch (const redis_pg::PgError& e) {
    return Unavailable(e.what());
  } catch (const std::exception& e) {
    return core::MakeError(core::ErrorCode::kInternal, e.what());
  }
}

class Op : public redis_pg::AwaitsRecord {
 public:
  explicit Op(bool writes) : writes_(writes) {}
  virtual ~Op() = default;
  // The one script call of a pipelined operation, else nullptr (then Run is used).
  virtual const RedisCall* Call() const { return nullptr; }
  virtual RedisCall* MutableCall() { return nullptr; }
  virtual void OnReply(const RedisReply& reply) {}
  virtual void Run(Backend& backend) {}
  virtual void Abort(const core::Error& error) = 0;
  // Answered already (refused before it ran).
  virtual bool settled() const = 0;
  // Answered, and not with an error.
  virtual bool succeeded() const = 0;
  // The tasks this operation makes ready now, by queue: woken as soon as Redis has them.
  const std::map<std::string, int>& ready_now() const { return ready_now_; }
  void set_ready_now(std::map<std::string, int> ready) { ready_now_ = std::move(ready); }
  bool writes() const { return writes_; }
  // Makes new tasks: refused while the record (PostgreSQL) cannot be written.
  bool needs_record() const { return needs_record_; }
  void set_needs_record() { needs_record_ = true; }
  // A submit: its ids are looked up in PostgreSQL too once claims may have left Redis.
  bool submits_ids() const { return submits_ids_; }
  void set_submits_ids() { submits_ids_ = true; }
  // A submit's tasks: per task, "seq\tstatus" of the one made, or "" (see SubmitReply); null
  // for other operations. With the tasks as sent and the submit's time: what the recorder
  // copies them from when the batch's waiting work is only tasks made (Finish).
  const std::vector<std::string>* made() const { return made_.get(); }
  void set_made(std::shared_ptr<std::vector<std::string>> made,
                std::shared_ptr<const std::vector<core::TaskSpec>> specs, Millis now) {
    made_ = std::move(made);
    specs_ = std::move(specs);
    now_ = now;
  }
  redis_pg::NewTasks::Submit made_tasks() const { return {specs_, made_, now_}; }
  // A new event (source, event_id): brought back from PostgreSQL first once events may have
  // left Redis, so that a resent one is still a duplicate.
  const std::optional<std::pair<std::string, std::string>>& new_event() const { return new_event_; }
  void set_new_event(std::string source, std::string event_id) {
    new_event_.emplace(std::move(source), std::move(event_id));
  }

 private:
  bool writes_;
  bool needs_record_ = false;
  bool submits_ids_ = false;
  std::optional<std::pair<std::string, std::string>> new_event_;
  std::shared_ptr<std::vector<std::string>> made_;
  std::shared_ptr<const std::vector<core::TaskSpec>> specs_;
  Millis now_ = 0;
  std::map<std::string, int> ready_now_;
};

template <typename T>
class TypedOp final : public Op {
 public:
  using Parse = std::function<Result<T>(const RedisReply&)>;
  using Body = std::function<Result<T>(Backend&)>;

  TypedOp(bool writes, RedisCall call, Parse parse, Callback<T> done)
      : Op(writes), call_(std::move(call)), parse_(std::move(parse)), done_(std::move(done)) {}
  TypedOp(bool writes, Body body, Callback<T> done)
      : Op(writes), body_(std::move(body)), done_(std::move(done)) {}

  const RedisCall* Call() const override { return call_ ? &*call_ : nullptr; }
  RedisCall* MutableCall() override { return call_ ? &*call_ : nullptr; }
  void OnReply(const RedisReply& reply) override {
    result_.emplace(Guarded<T>([&] { return parse_(reply); }));
  }
  void Run(Backend& backend) override {
    result_.emplace(Guarded<T>([&] { return body_(backend); }));
  }
  void Abort(const core::Error& error) override {
    result_.emplace(boost::system::in_place_error, error);
  }
  void Deliver() override {
    if (!result_) result_.emplace(boost::system::in_place_error, Unavailable("not run"));
    done_(std::move(*result_));
  }
  bool settled() const override { return result_.has_value(); }
  bool succeeded() const override { return result_.has_value() && result_->has_value(); }

 private:
  std::optional<RedisCall> call_;
  Parse parse_;
  Body body_;
  Callback<T> done_;
  std::optional<Result<T>> result_;
};

class RedisPgStore final : public Store {
 public:
  RedisPgStore(std::unique_ptr<Backend> backend, std::unique_ptr<Backend> recorder,
               std::string key_prefix, std::string client_name, const RedisPgOptions& options,
               bool ids_checked)
      : backend_(std::move(backend)),
        prefix_(std::move(key_prefix)),
        change_resync_(std::chrono::milliseconds(options.change_resync)),
        clock_(options.clock),
        event_ttl_(2 * options.ended_claims_retention),
        ids_checked_(ids_checked),
        work_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)),
        subscriber_(backend_->redis_endpoint(), backend_->io_timeout(), client_name + ":wake"),
        interrupt_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (work_fd_ < 0 || interrupt_fd_ < 0) throw std::system_error(errno, std::generic_category());
    recorder->ShareConsumerWith(*backend_);
    recorder->RotateEndedClaims(options.ended_claims_retention,
                                clock_ != nullptr ? clock_ : &system_clock_, &ids_checked_);
    recorder_ = std::make_unique<redis_pg::Recorder>(std::move(recorder));
    backend_->SetCatchUpRecord([this] { recorder_->AwaitCopied(); });
    thread_ = std::thread([this] { Loop(); });
    subscriber_thread_ = std::thread([this] { SubscribeLoop(); });
  }

  void Submit(std::vector<core::TaskSpec> tasks, Millis now,
              Callback<std::vector<SubmitOutcome>> done) override {
    SubmitValidated(std::move(tasks), now, "", std::move(done));
  }
  void SubmitValidated(std::vector<core::TaskSpec> tasks, Millis now, std::string schemas_version,
                       Callback<std::vector<SubmitOutcome>> done) override {
    RedisCall call = redis_pg::SubmitCall(tasks, now, schemas_version);
    std::map<std::string, int> ready;
    for (const core::TaskSpec& t : tasks) {
      if (t.schedule_time <= now) ++ready[t.queue];
    }
    // Answered 'recheck' (this process did not know yet that ids must be looked up in
    // PostgreSQL too): nothing was made; submitted again, looking them up.
    auto recheck = std::make_shared<bool>(false);
    auto made = std::make_shared<std::vector<std::string>>();
    auto specs = std::make_shared<const std::vector<core::TaskSpec>>(std::move(tasks));
    auto op = std::make_unique<TypedOp<std::vector<SubmitOutcome>>>(
        true, std::move(call),
        [specs, recheck, made](const RedisReply& r) {
          return redis_pg::SubmitReply(*specs, r, &*recheck, &*made);
        },
        [this, specs, now, recheck, schemas_version = std::move(schemas_version),
         done = std::move(done)](Result<std::vector<SubmitOutcome>> outcome) mutable {
          if (!*recheck) return done(std::move(outcome));
          ids_checked_.store(true);
          SubmitValidated(*specs, now, std::move(schemas_version), std::move(done));
        });
    op->set_needs_record();
    op->set_submits_ids();
    op->set_made(std::move(made), specs, now);
    op->set_ready_now(std::move(ready));
    Push(std::move(op));
  }
  // While Redis is away a lease finds nothing (the engine then parks the long-poll as for an
  // empty queue) instead of failing the worker's poll: no task can be handed out meanwhile.
  void Lease(LeaseRequest request, Callback<LeaseBatch> done) override {
    // The leases' changes go to PostgreSQL from here, not through the outbox (see kLease),
    // before the leases are answered.
    Pipelined<LeaseBatch>(
        true, redis_pg::LeaseCall(request, random_),
        [this](const redis_pg::RedisReply& r) {
          std::vector<redis_pg::StateRecord> states;
          Result<LeaseBatch> batch = redis_pg::LeaseReply(r, &states);
          if (batch && !states.empty()) recorder_->Leased(std::move(states));
          return batch;
        },
        [done = std::move(done)](Result<LeaseBatch> batch) {
          if (!batch && batch.error().code == core::ErrorCode::kUnavailable) {
            return done(LeaseBatch{});
          }
          done(std::move(batch));
        });
  }
  void Ack(AckRequest request, Callback<AttemptReport> done) override {
    Push(AckOp(std::move(request), std::move(done)));
  }
  // Queued at once, so the store thread merges the whole batch into its next script call.
  void AckBatch(std::vector<AckRequest> requests,
                std::vector<Callback<AttemptReport>> done) override {
    std::vector<std::unique_ptr<Op>> ops;
    ops.reserve(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
      ops.push_back(AckOp(std::move(requests[i]), std::move(done[i])));
    }
    PushAll(ops);
  }
  void Fail(FailRequest request, RetryDecider decide, Callback<AttemptReport> done) override {
    Blocking<AttemptReport>(true, std::move(done),
                            [request = std::move(request), decide = std::move(decide)](Backend& b) {
                              return b.Fail(request, decide, false);
                            });
  }
  void Extend(ExtendRequest request, Callback<Millis> done) override {
    Pipelined<Millis>(true, redis_pg::ExtendCall(request), redis_pg::ExtendReply, std::move(done));
  }
  void ExpireLeases(Millis now, RetryDecider decide,
                    Callback<std::vector<AttemptReport>> done) override {
    Blocking<std::vector<AttemptReport>>(
        true, std::move(done),
        [now, decide = std::move(decide)](Backend& b) { return b.ExpireLeases(now, decide); });
  }
  void PromoteDue(Millis now, Callback<std::vector<std::string>> done) override {
    Pipelined<std::vector<std::string>>(true, redis_pg::PromoteCall(now), redis_pg::PromoteReply,
                                        std::move(done));
  }
  void NextWakeup(Callback<std::optional<Millis>> done) override {
    Pipelined<std::optional<Millis>>(false, redis_pg::NextWakeupCall(), redis_pg::NextWakeupReply,
                                     std::move(done));
  }
  void Cancel(std::string task_id, Millis now, Callback<core::Task> done) override {
    RedisCall call = redis_pg::CancelCall(task_id, now);
    Pipelined<core::Task>(
        true, std::move(call),
        [task_id](const RedisReply& r) { return redis_pg::CancelReply(task_id, r); },
        [this, task_id, done = std::move(done)](Result<core::Task> cancelled) mutable {
          if (cancelled || cancelled.error().code != core::ErrorCode::kNotFound ||
              !ids_checked_.load()) {
            return done(std::move(cancelled));
          }
          // Unknown to Redis: a task that ended before its claim left Redis is still terminal.
          Blocking<core::Task>(false, std::move(done), [task_id](Backend& b) -> Result<core::Task> {
            auto task = b.Get(task_id);
            if (task && core::IsTerminal(task->status)) {
              return core::MakeError(
                  core::ErrorCode::kTaskTerminal,
                  "task already " + std::string(core::TaskStatusName(task->status)));
            }
            return core::MakeError(core::ErrorCode::kNotFound, "no task " + task_id);
          });
        });
  }
  void Replay(DeadSelector selector, ReplayEdits edits, ReplayCheck check, Millis now,
              Callback<std::vector<core::Task>> done) override {
    Blocking<std::vector<core::Task>>(
        true, std::move(done),
        [selector = std::move(selector), edits = std::move(edits), check = std::move(check),
         now](Backend& b) { return b.Replay(selector, edits, check, now); });
  }
  void CancelDead(DeadSelector selector, Millis now, Callback<int64_t> done) override {
    Blocking<int64_t>(true, std::move(done), [selector = std::move(selector), now](Backend& b) {
      return b.CancelDead(selector, now);
    });
  }
  void Get(std::string task_id, Callback<core::Task> done) override {
    Blocking<core::Task>(false, std::move(done),
                         [task_id = std::move(task_id)](Backend& b) { return b.Get(task_id); });
  }
  void Attempts(std::string task_id, Callback<std::vector<core::Attempt>> done) override {
    Blocking<std::vector<core::Attempt>>(
        false, std::move(done),
        [task_id = std::move(task_id)](Backend& b) { return b.Attempts(task_id); });
  }
  void Search(SearchQuery query, Callback<SearchPage> done) override {
    Blocking<SearchPage>(false, std::move(done),
                         [query = std::move(query)](Backend& b) { return b.Search(query); });
  }
  void Depths(Callback<std::vector<DepthRow>> done) override {
    Pipelined<std::vector<DepthRow>>(false, redis_pg::DepthsCall(prefix_), redis_pg::DepthsReply,
                                     std::move(done));
  }
  void PutSchema(SchemaRecord schema, Callback<Unit> done) override {
    Blocking<Unit>(false, std::move(done),
                   [schema = std::move(schema)](Backend& b) { return b.PutSchema(schema); });
  }
  void GetSchema(std::string task_type, int version, Callback<SchemaRecord> done) override {
    Blocking<SchemaRecord>(false, std::move(done),
                           [task_type = std::move(task_type), version](Backend& b) {
                             return b.GetSchema(task_type, version);
                           });
  }
  void ListSchemas(Callback<std::vector<SchemaRecord>> done) override {
    Blocking<std::vector<SchemaRecord>>(false, std::move(done),
                                        [](Backend& b) { return b.ListSchemas(); });
  }
  void ListSchemaSet(Callback<SchemaSet> done) override {
    Blocking<SchemaSet>(false, std::move(done), [](Backend& b) { return b.ListSchemaSet(); });
  }
  // Both tell the other processes once PostgreSQL has the change (see SetChangeHandler).
  void PutEndpoint(EndpointRecord endpoint, Callback<Unit> done) override {
    Blocking<Unit>(false, std::move(done), [endpoint = std::move(endpoint)](Backend& b) {
      auto stored = b.PutEndpoint(endpoint);
      if (stored) b.PublishChange(kEndpointsChanged);
      return stored;
    });
  }
  void DeleteEndpoint(std::string endpoint_id, Callback<Unit> done) override {
    Blocking<Unit>(false, std::move(done), [endpoint_id = std::move(endpoint_id)](Backend& b) {
      auto deleted = b.DeleteEndpoint(endpoint_id);
      if (deleted) b.PublishChange(kEndpointsChanged);
      return deleted;
    });
  }
  void GetEndpoint(std::string endpoint_id, Callback<EndpointRecord> done) override {
    Blocking<EndpointRecord>(
        false, std::move(done),
        [endpoint_id = std::move(endpoint_id)](Backend& b) { return b.GetEndpoint(endpoint_id); });
  }
  void ListEndpoints(Callback<std::vector<EndpointRecord>> done) override {
    Blocking<std::vector<EndpointRecord>>(false, std::move(done),
                                          [](Backend& b) { return b.ListEndpoints(); });
  }
  void SubmitEvent(EventRecord event, std::vector<NewDelivery> deliveries, Millis now,
                   Callback<EventSubmitOutcome> done) override {
    auto unknown = std::make_shared<std::vector<size_t>>();
    auto recheck = std::make_shared<bool>(false);
    auto again =
        std::make_shared<std::pair<EventRecord, std::vector<NewDelivery>>>(event, deliveries);
    auto op = std::make_unique<TypedOp<EventSubmitOutcome>>(
        true, redis_pg::EventCall("new", event, deliveries, now, event_ttl_),
        [unknown, recheck](const RedisReply& r) {
          return redis_pg::EventReply(r, &*unknown, &*recheck);
        },
        [this, unknown, recheck, again, now,
         done = std::move(done)](Result<EventSubmitOutcome> outcome) mutable {
          if (*recheck) {  // see Submit
            ids_checked_.store(true);
            return SubmitEvent(again->first, again->second, now, std::move(done));
          }
          if (!outcome || unknown->empty()) return done(std::move(outcome));
          const bool duplicate = outcome->duplicate;
          WithRecordedStatuses(std::move(outcome->stored), std::move(*unknown),
                               [duplicate, done = std::move(done)](Result<StoredEvent> stored) {
                                 if (!stored) return done(stored.error());
                                 done(EventSubmitOutcome{duplicate, std::move(*stored)});
                               });
        });
    op->set_needs_record();
    op->set_new_event(event.source, event.event_id);
    op->set_ready_now(ReadyNow(deliveries, now));
    Push(std::move(op));
  }
  void AddDeliveries(std::string source, std::string event_id, std::vector<NewDelivery> deliveries,
                     Millis now, Callback<StoredEvent> done) override {
    AddDeliveriesTo(std::move(source), std::move(event_id), std::move(deliveries), now,
                    std::move(done), /*restored=*/false);
  }
  void GetEvent(std::string event_id, std::optional<std::string> source,
                Callback<StoredEvent> done) override {
    RedisCall call = redis_pg::GetEventCall(event_id, source);
    auto unknown = std::make_shared<std::vector<size_t>>();
    Pipelined<StoredEvent>(
        false, std::move(call),
        [event_id, unknown](const RedisReply& r) {
          return redis_pg::GetEventReply(event_id, r, &*unknown);
        },
        [this, event_id, source, unknown,
         done = std::move(done)](Result<StoredEvent> stored) mutable {
          if (stored || stored.error().code != core::ErrorCode::kNotFound || !ids_checked_.load()) {
            return StatusesFromRecord(unknown, std::move(done))(std::move(stored));
          }
          // Gone from Redis (an event leaves it event_ttl_ after its last change): from the
          // record, brought back into Redis for the reads and redeliveries that follow.
          Blocking<StoredEvent>(false, std::move(done), [this, event_id, source](Backend& b) {
            if (!b.RestoreEventFromRecord(event_id, source, event_ttl_)) {
              return Result<StoredEvent>(
                  core::MakeError(core::ErrorCode::kNotFound, "no event " + event_id));
            }
            std::vector<size_t> unknown;
            auto again = redis_pg::GetEventReply(
                event_id, b.Call(redis_pg::GetEventCall(event_id, source)), &unknown);
            if (again) FillRecordedStatuses(b, *again, unknown);
            return again;
          });
        });
  }
  // One bucket per name in Redis for every process (rate_bucket.cc). It writes no record.
  bool SharesRateLimits() const override { return true; }
  void TakeTokens(TokenRequest request, Callback<TokenGrant> done) override {
    if (request.per_second <= 0 || request.wanted <= 0) {
      return done(TokenGrant{request.wanted > 0 ? request.wanted : 0, 0});  // nothing to limit
    }
    Pipelined<TokenGrant>(false, redis_pg::TakeTokensCall(request), redis_pg::TakeTokensReply,
                          std::move(done));
  }
  void Ping(Callback<Unit> done) override {
    Blocking<Unit>(false, std::move(done), [](Backend& b) { return b.Ping(); });
  }

  bool WakesOwnSubmits() const override { return true; }
  bool SharedByProcesses() const override { return true; }

  void SetReadyHandler(ReadyHandler handler) override {
    std::lock_guard lock(handler_mu_);
    ready_handler_ = std::move(handler);
  }
  void SetDueHandler(DueHandler handler) override {
    std::lock_guard lock(handler_mu_);
    due_handler_ = std::move(handler);
  }

  void SetChangeHandler(ChangeHandler handler) override {
    std::lock_guard lock(change_mu_);  // waits for a call of the previous handler to end
    change_handler_ = std::move(handler);
  }

  void Close() override {
    {
      std::lock_guard lock(mu_);
      if (closed_) return;
      closed_ = true;
      if (awaiting_reply_) SignalWork();
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
    recorder_->Stop();
    subscriber_stop_ = true;
    const uint64_t one = 1;
    if (interrupt_fd_ >= 0 && ::write(interrupt_fd_, &one, sizeof one) < 0) {
      // The read times out by itself (kSubscriberRead).
    }
    subscriber_cv_.notify_all();
    if (subscriber_thread_.joinable()) subscriber_thread_.join();
    if (interrupt_fd_ >= 0) ::close(interrupt_fd_);
    interrupt_fd_ = -1;
  }
  ~RedisPgStore() override {
    Close();
    ::close(work_fd_);
  }

 private:
  // The statuses of deliveries whose task Redis no longer knows (it ended, and its id claim
  // left Redis), from PostgreSQL. Throws PgError.
  static void FillRecordedStatuses(Backend& b, StoredEvent& stored,
                                   const std::vector<size_t>& unknown) {
    if (unknown.empty()) return;
    std::vector<std::string> ids;
    for (size_t i : unknown) ids.push_back(stored.deliveries[i].task_id);
    const std::map<std::string, std::string> recorded = b.RecordedIds(ids);
    for (size_t i : unknown) {
      EventDelivery& d = stored.deliveries[i];
      auto it = recorded.find(d.task_id);
      auto status = it == recorded.end()
                        ? std::nullopt
                        : core::ParseTaskStatus(it->second.substr(0, it->second.find('\t')));
      if (!status) throw std::runtime_error("delivery task " + d.task_id + " is in no store");
      d.status = *status;
    }
  }
  void WithRecordedStatuses(StoredEvent stored, std::vector<size_t> unknown,
                            Callback<StoredEvent> done) {
    Blocking<StoredEvent>(
        false, std::move(done),
        [stored = std::move(stored), unknown = std::move(unknown)](Backend& b) mutable {
          FillRecordedStatuses(b, stored, unknown);
          return Result<StoredEvent>(std::move(stored));
        });
  }
  // An event gone from Redis is brought back from PostgreSQL once, then redelivered.
  void AddDeliveriesTo(std::string source, std::string event_id,
                       std::vector<NewDelivery> deliveries, Millis now, Callback<StoredEvent> done,
                       bool restored) {
    EventRecord event;
    event.source = source;
    event.event_id = event_id;
    auto unknown = std::make_shared<std::vector<size_t>>();
    std::map<std::string, int> ready = ReadyNow(deliveries, now);
    Pipelined<StoredEvent>(
        true, redis_pg::EventCall("add", event, deliveries, now, event_ttl_),
        [unknown](const RedisReply& r) -> Result<StoredEvent> {
          auto outcome = redis_pg::EventReply(r, &*unknown);
          if (!outcome) return outcome.error();
          return std::move(outcome->stored);
        },
        [this, source, event_id, deliveries, now, restored, unknown,
         done = std::move(done)](Result<StoredEvent> stored) mutable {
          if (stored || stored.error().code != core::ErrorCode::kNotFound || restored ||
              !ids_checked_.load()) {
            return StatusesFromRecord(unknown, std::move(done))(std::move(stored));
          }
          Blocking<bool>(
              false,
              [this, source, event_id, deliveries = std::move(deliveries), now,
               done = std::move(done)](Result<bool> found) mutable {
                if (!found) return done(found.error());
                if (!*found) {
                  return done(core::MakeError(core::ErrorCode::kNotFound, "no such event"));
                }
                AddDeliveriesTo(std::move(source), std::move(event_id), std::move(deliveries), now,
                                std::move(done), true);
              },
              [this, source, event_id](Backend& b) -> Result<bool> {
                return b.RestoreEventFromRecord(event_id, source, event_ttl_);
              });
        },
        /*needs_record=*/true, std::move(ready));
  }
  Callback<StoredEvent> StatusesFromRecord(std::shared_ptr<std::vector<size_t>> unknown,
                                           Callback<StoredEvent> done) {
    return [this, unknown, done = std::move(done)](Result<StoredEvent> stored) mutable {
      if (!stored || unknown->empty()) return done(std::move(stored));
      WithRecordedStatuses(std::move(*stored), std::move(*unknown), std::move(done));
    };
  }

  static std::map<std::string, int> ReadyNow(const std::vector<NewDelivery>& deliveries,
                                             Millis now) {
    std::map<std::string, int> ready;
    for (const NewDelivery& d : deliveries) {
      if (d.task.schedule_time <= now) ++ready[d.task.queue];
    }
    return ready;
  }

  template <typename T>
  void Pipelined(bool writes, RedisCall call, typename TypedOp<T>::Parse parse, Callback<T> done,
                 bool needs_record = false, std::map<std::string, int> ready_now = {}) {
    auto op =
        std::make_unique<TypedOp<T>>(writes, std::move(call), std::move(parse), std::move(done));
    if (needs_record) op->set_needs_record();
    op->set_ready_now(std::move(ready_now));
    Push(std::move(op));
  }
  static std::unique_ptr<Op> AckOp(AckRequest request, Callback<AttemptReport> done) {
    RedisCall call = redis_pg::AckCall(request);
    return std::make_unique<TypedOp<AttemptReport>>(
        true, std::move(call),
        [request = std::move(request)](const RedisReply& r) {
          return redis_pg::AckReply(request, r);
        },
        std::move(done));
  }
  template <typename T>
  void Blocking(bool writes, Callback<T> done, typename TypedOp<T>::Body body) {
    Push(std::make_unique<TypedOp<T>>(writes, std::move(body), std::move(done)));
  }

  void Push(std::unique_ptr<Op> op) { PushAll({&op, 1}); }
  void SignalWork() {  // with mu_ held
    const uint64_t one = 1;
    if (::write(work_fd_, &one, sizeof one) < 0) {
      // EAGAIN only (the counter is full): the store thread has a signal to read already.
    }
  }
  // The store thread takes all of `ops` (moved from) in one turn, or none of them.
  void PushAll(std::span<std::unique_ptr<Op>> ops) {
    {
      std::lock_guard lock(mu_);
      if (!closed_) {
        for (auto& op : ops) queue_.push_back(std::move(op));
        wake_.notify_one();
        if (awaiting_reply_) SignalWork();
        return;
      }
    }
    for (auto& op : ops) {
      op->Abort(Unavailable("redis-pg store is closed"));
      op->Deliver();
    }
  }

  // A run of single-script operations, sent as one pipeline: consecutive submits, and
  // consecutive acks, go as one call each (see ArgsPerItem).
  struct PipelinedRun {
    std::vector<RedisCall> calls;
    std::vector<std::vector<size_t>> ops_of_call;  // the operations each call carries, in order
    size_t end = 0;                                // the first operation after the run
    bool wrote = false;
  };
  struct SentBatch {
    std::deque<std::unique_ptr<Op>> ops;
    PipelinedRun run;
    bool in_flight = false;  // its calls were sent: Receive reads their replies
  };
  struct Received {
    SentBatch batch;
    std::vector<RedisReply> replies;
    std::string lost;  // why there are none: the connection was lost (RedisIoError)
  };

  // Runs the queued operations, batch after batch. A batch of script calls only is sent as soon
  // as Redis has room for it (kBatchesInFlight) and answered once its replies are read, after
  // the batches before it: so Redis runs one batch while the next waits on its connection and
  // this thread answers the last one, instead of each waiting for the other. Work queued while
  // Redis has no room waits here and goes as one batch (its acks and submits merged into few
  // script calls). Other batches run step by step, once every batch sent before them is
  // answered (nothing in flight meanwhile).
  void Loop() {
    std::deque<SentBatch> in_flight;          // sent, oldest first; answered in that order
    std::deque<std::unique_ptr<Op>> waiting;  // taken from the queue, not sent yet
    for (;;) {
      if (!TakeQueued(waiting, in_flight.empty() && waiting.empty())) break;  // closed, all done
      SendWaiting(waiting, in_flight);
      if (in_flight.empty()) continue;
      // The oldest batch's replies; or, while Redis has room for more, new work first.
      if (in_flight.size() < kBatchesInFlight && !AwaitReplyOrWork()) continue;
      Received got = ReceiveOldest(in_flight);
      // What queued meanwhile goes to Redis before this thread answers the batch it just read.
      TakeQueued(waiting, false);
      SendWaiting(waiting, in_flight);
      Answer(got);
    }
  }

  // Moves what is queued to `waiting`, first waiting for some when `wait`; false when the store
  // is closed and nothing is left. PostgreSQL is asked about submitted ids here, while Redis
  // runs the batches in flight.
  bool TakeQueued(std::deque<std::unique_ptr<Op>>& waiting, bool wait) {
    std::deque<std::unique_ptr<Op>> taken;
    {
      std::unique_lock lock(mu_);
      if (wait) {
        wake_.wait(lock, [&] { return closed_ || !queue_.empty(); });
        if (queue_.empty()) return false;
      }
      taken.swap(queue_);
    }
    if (taken.empty()) return true;
    AskRecordAboutIds(taken);
    RefuseNewWorkWithoutRecord(taken);
    for (auto& op : taken) waiting.push_back(std::move(op));
    return true;
  }

  // Sends `waiting` when it is script calls only and Redis has room for it; runs it step by
  // step, once what is in flight is answered, when it is not (or events need their record
  // brought back first, which takes the connection). Leaves it waiting otherwise.
  void SendWaiting(std::deque<std::unique_ptr<Op>>& waiting, std::deque<SentBatch>& in_flight) {
    if (waiting.empty()) return;
    const bool scripts_only = std::all_of(waiting.begin(), waiting.end(), [](const auto& op) {
      return op->settled() || op->Call() != nullptr;
    });
    const bool new_events =
        ids_checked_.load() && std::any_of(waiting.begin(), waiting.end(), [](const auto& op) {
          return !op->settled() && op->new_event();
        });
    if (scripts_only && !new_events) {
      if (in_flight.size() >= kBatchesInFlight) return;
    } else {
      while (!in_flight.empty()) {
        Received got = ReceiveOldest(in_flight);
        Answer(got);
      }
      BringBackNewEvents(waiting);
      if (!scripts_only) {
        RunBatch(waiting);
        waiting.clear();
        return;
      }
    }
    SentBatch sent = SendBatch(waiting);
    if (sent.in_flight) {
      in_flight.push_back(std::move(sent));
    } else {
      Finish(sent.ops, sent.run.wrote, {});  // nothing to send: every operation is answered
    }
  }

  // Waits for the oldest batch's replies (true) or for new work (false).
  bool AwaitReplyOrWork() {
    {
      std::lock_guard lock(mu_);
      if (!queue_.empty()) return false;
      if (closed_) return true;
      awaiting_reply_ = true;
    }
    const bool reply = backend_->AwaitReply(backend_->io_timeout(), work_fd_);
    {
      std::lock_guard lock(mu_);
      awaiting_reply_ = false;
    }
    uint64_t count = 0;
    if (::read(work_fd_, &count, sizeof count) < 0) {
      // EAGAIN: PushAll did not signal (or its signal was read already).
    }
    return reply;
  }

  // The oldest batch in flight, taken out, with its replies or how its connection was lost.
  Received ReceiveOldest(std::deque<SentBatch>& in_flight) {
    Received got{std::move(in_flight.front()), {}, {}};
    in_flight.pop_front();
    try {
      got.replies = backend_->Receive();
    } catch (const std::exception& e) {
      got.lost = e.what();
    }
    return got;
  }

  // Answers a batch ReceiveOldest read.
  void Answer(Received& got) {
    std::vector<std::string> entries;
    if (got.lost.empty()) {
      Distribute(got.batch.ops, got.batch.run, got.replies, entries);
    } else {
      Abort(got.batch.ops, got.batch.run, got.lost);
    }
    Finish(got.batch.ops, got.batch.run.wrote, std::move(entries));
  }

  // Submits and events are refused (503) while their record cannot be written, so that what
  // is accepted can always be rebuilt from PostgreSQL (`madeira recover`). Leases, acks and
  // the rest go on; the outbox keeps their changes until PostgreSQL is back.
  void RefuseNewWorkWithoutRecord(std::deque<std::unique_ptr<Op>>& batch) {
    // The store thread's own connection may have seen PostgreSQL go first (a /readyz probe, a
    // read): then it asks again, at most every kRecordProbeInterval.
    bool any = false;
    for (const auto& op : batch) any = any || op->needs_record();
    if (!any) return;
    if (!backend_->record_healthy()) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last_record_probe_ >= kRecordProbeInterval) {
        last_record_probe_ = now;
        try {
          backend_->PingRecord();
        } catch (const std::exception&) {
        }
      }
    }
    if (recorder_->ok() && backend_->record_healthy()) return;
    std::string why = recorder_->error();
    if (why.empty()) why = "connection lost";
    for (auto& op : batch) {
      if (op->needs_record()) {
        op->Abort(Unavailable("postgresql: the record cannot be written (" + why +
                              "); nothing was accepted, try again"));
      }
    }
  }

  // Once events may have left Redis (see kEvent), a new event is first brought back from
  // PostgreSQL if it is there, so that a resend is still a duplicate. Uses the Redis
  // connection: not while a batch is in flight.
  void BringBackNewEvents(std::deque<std::unique_ptr<Op>>& batch) {
    if (!ids_checked_.load()) return;
    std::vector<Op*> events;
    std::vector<std::pair<std::string, std::string>> keys;
    for (auto& op : batch) {
      if (op->settled() || !op->new_event()) continue;
      events.push_back(op.get());
      keys.push_back(*op->new_event());
    }
    if (events.empty()) return;
    try {
      backend_->RestoreEventsFromRecord(keys, event_ttl_);  // one query for the batch
    } catch (const std::exception& e) {
      for (Op* op : events) {
        op->Abort(Unavailable(std::string(e.what()) + "; nothing was accepted, try again"));
      }
      return;
    }
    for (Op* op : events) redis_pg::EventFromRecordChecked(*op->MutableCall());
  }

  // Once an id claim may have left Redis (kRotateEnded), a submitted id Redis does not know may
  // still be a task PostgreSQL has: the batch's submitted ids are looked up there, in one
  // query, and the calls carry what it said. PostgreSQL away: the submits are refused. Only
  // PostgreSQL is used, so this may run while a batch is in flight in Redis (a claim that
  // leaves Redis meanwhile was in PostgreSQL long before: kRotateEnded).
  void AskRecordAboutIds(std::deque<std::unique_ptr<Op>>& batch) {
    if (!ids_checked_.load()) return;
    std::vector<Op*> submits;
    std::vector<std::string> ids;
    for (auto& op : batch) {
      if (op->settled() || !op->submits_ids()) continue;
      submits.push_back(op.get());
      for (std::string& id : redis_pg::SubmitIds(*op->Call())) ids.push_back(std::move(id));
    }
    if (ids.empty()) return;
    std::map<std::string, std::string> recorded;
    try {
      recorded = backend_->RecordedIds(ids);
    } catch (const std::exception& e) {
      for (Op* op : submits) {
        op->Abort(Unavailable(std::string(e.what()) + "; nothing was accepted, try again"));
      }
      return;
    }
    for (Op* op : submits) redis_pg::RecordedIdsInto(*op->MutableCall(), recorded);
  }

  // The run starting at `i`, up to the first operation that is not a single script call;
  // operations answered already are passed over.
  static PipelinedRun BuildRun(const std::deque<std::unique_ptr<Op>>& batch, size_t i) {
    PipelinedRun run;
    size_t end = i;
    for (; end < batch.size(); ++end) {
      if (batch[end]->settled()) continue;
      const RedisCall* call = batch[end]->Call();
      if (call == nullptr) break;
      const size_t per = call->script ? redis_pg::ArgsPerItem(*call->script) : 0;
      if (per > 0 && !run.calls.empty() && run.calls.back().script == call->script &&
          run.calls.back().args.size() + call->args.size() <= per * kMergedPerCall) {
        run.calls.back().args.insert(run.calls.back().args.end(), call->args.begin(),
                                     call->args.end());
        run.ops_of_call.back().push_back(end);
      } else {
        run.calls.push_back(*call);
        run.ops_of_call.push_back({end});
      }
      run.wrote = run.wrote || batch[end]->writes();
    }
    run.end = end;
    return run;
  }

  // Sends a batch of script calls only (operations answered already aside), taken out of `batch`.
  SentBatch SendBatch(std::deque<std::unique_ptr<Op>>& batch) {
    PipelinedRun run = BuildRun(batch, 0);
    SentBatch sent{std::move(batch), {}};
    batch.clear();
    try {
      if (!run.calls.empty()) {
        backend_->Send(std::move(run.calls));
        sent.in_flight = true;
      }
    } catch (const std::exception& e) {
      Abort(sent.ops, run, e.what());
    }
    run.calls.clear();  // Send took them; Distribute needs only which ops each call carried
    sent.run = std::move(run);
    return sent;
  }

  // Each operation of the run gets the elements of its own tasks (or ack), an error whole. The
  // outbox entries the submit calls wrote go to `entries`.
  static void Distribute(std::deque<std::unique_ptr<Op>>& batch, const PipelinedRun& run,
                         std::vector<RedisReply>& replies, std::vector<std::string>& entries) {
    for (size_t c = 0; c < run.ops_of_call.size() && c < replies.size(); ++c) {
      const std::vector<size_t>& ops = run.ops_of_call[c];
      Op& first = *batch[ops.front()];
      const std::optional<redis_pg::Script>& script = first.Call()->script;
      if (script == redis_pg::Script::kSubmit) {
        size_t tasks = 0;
        for (size_t k : ops) tasks += redis_pg::SubmitTasks(*batch[k]->Call());
        for (std::string& e : redis_pg::TakeSubmitEntries(replies[c], tasks)) {
          entries.push_back(std::move(e));
        }
      }
      if (ops.size() == 1 && script != redis_pg::Script::kAck) {
        first.OnReply(replies[c]);
        continue;
      }
      const size_t per = redis_pg::ArgsPerItem(*script);
      const size_t values = redis_pg::ReplyValuesPerItem(*script);
      size_t next = 0;
      for (size_t k : ops) {
        Op& op = *batch[k];
        const size_t n = op.Call()->args.size() / per * values;
        if (replies[c].IsError()) {
          op.OnReply(replies[c]);
        } else {
          RedisReply mine;
          mine.type = RedisReply::Type::kArray;
          for (size_t e = next; e < next + n && e < replies[c].elements.size(); ++e) {
            mine.elements.push_back(std::move(replies[c].elements[e]));
          }
          op.OnReply(mine);
        }
        next += n;
      }
    }
  }

  static void Abort(std::deque<std::unique_ptr<Op>>& batch, const PipelinedRun& run,
                    const std::string& why) {
    for (const std::vector<size_t>& ops : run.ops_of_call) {
      for (size_t k : ops) batch[k]->Abort(Unavailable(why));
    }
  }

  // Runs a batch step by step: runs of script calls pipelined, the other operations in order.
  void RunBatch(std::deque<std::unique_ptr<Op>>& batch) {
    bool wrote = false;
    std::vector<std::string> entries;  // the submits' outbox entries
    size_t i = 0;
    while (i < batch.size()) {
      if (batch[i]->settled()) {
        ++i;
        continue;
      }
      if (batch[i]->Call() == nullptr) {
        batch[i]->Run(*backend_);
        wrote = wrote || batch[i]->writes();
        ++i;
        continue;
      }
      PipelinedRun run = BuildRun(batch, i);
      wrote = wrote || run.wrote;
      try {
        std::vector<RedisReply> replies = backend_->Pipeline(std::move(run.calls));
        Distribute(batch, run, replies, entries);
      } catch (const std::exception& e) {
        Abort(batch, run, e.what());
      }
      i = run.end;
    }
    Finish(batch, wrote, std::move(entries));
  }

  // Answers a batch that has run. New work is answered once the record has it (Recorder); its
  // long-polls wake now. When all of it is tasks its submits made, the recorder copies them
  // from here (`entries`: the outbox entries holding them), else from the outbox.
  void Finish(std::deque<std::unique_ptr<Op>>& batch, bool wrote,
              std::vector<std::string> entries) {
    std::map<std::string, int> ready;
    std::vector<std::unique_ptr<redis_pg::AwaitsRecord>> to_record;
    redis_pg::NewTasks made;
    // Whether every submit made all its tasks and nothing else waits (no duplicate, no event, no
    // submit refused after its call made some of its tasks): then `made` is all the entries hold.
    bool all_made = true;
    for (const auto& op : batch) {
      const std::vector<std::string>* tasks = op->made();
      if (tasks == nullptr) {
        all_made = all_made && !(op->needs_record() && op->succeeded());
      } else {
        // (One answer a task, each 'created': else the entries hold tasks `made` lacks.)
        all_made = all_made && op->succeeded() &&
                   tasks->size() == redis_pg::SubmitTasks(*op->Call()) &&
                   std::none_of(tasks->begin(), tasks->end(),
                                [](const std::string& m) { return m.empty(); });
      }
    }
    for (auto& op : batch) {
      if (op->needs_record() && op->succeeded()) {
        for (const auto& [queue, n] : op->ready_now()) ready[queue] += n;
        if (all_made) made.submits.push_back(op->made_tasks());
        to_record.push_back(std::move(op));
      } else {
        op->Deliver();
      }
    }
    if (!ready.empty()) Dispatch(ready);
    if (!wrote) return;
    if (all_made && !to_record.empty()) {
      made.entries = std::move(entries);
      recorder_->Written(std::move(to_record), std::move(made));
    } else {
      recorder_->Written(std::move(to_record), std::move(entries));
    }
  }

  // Wake-ups from the other processes: the scripts PUBLISH "origin\nqueue\tcount..." on
  // P wake; and their endpoint changes, "origin\nwhat" on P changed. One blocking read at a
  // time on a connection of its own; no polling.
  void SubscribeLoop() {
    const std::string wake_channel = prefix_ + "wake";
    const std::string change_channel = prefix_ + "changed";
    bool reconnect = false;
    auto last_resync = std::chrono::steady_clock::now();
    while (!subscriber_stop_) {
      // A change whose PUBLISH failed (Redis away just then) still reaches every process.
      if (std::chrono::steady_clock::now() - last_resync >= change_resync_) {
        last_resync = std::chrono::steady_clock::now();
        NotifyChange(kEndpointsChanged);
      }
      try {
        if (!subscriber_.connected()) {
          std::vector<RedisReply> replies = subscriber_.Pipeline({{"SMEMBERS", prefix_ + "queues"},
                                                                  {"SUBSCRIBE", wake_channel},
                                                                  {"SUBSCRIBE", change_channel}});
          for (size_t i = 1; i < replies.size(); ++i) {
            if (replies[i].IsError()) {
              throw redis_pg::RedisIoError("redis: SUBSCRIBE: " + replies[i].str);
            }
          }
          if (reconnect) {
            // Wake-ups published while we were away are gone: wake every parked long-poll.
            std::map<std::string, int> all;
            for (const RedisReply& q : replies[0].elements) all[q.str] = kWakeAll;
            Dispatch(all);
            DispatchDue(0);  // and due times: the timers run their due work now, then re-arm
          }
          reconnect = true;
          // Changes made before this subscribe (while away, or before the first) are read again.
          last_resync = std::chrono::steady_clock::now();
          NotifyChange(kEndpointsChanged);
        }
        std::optional<RedisReply> message = subscriber_.ReadWithin(
            std::min<core::Millis>(kSubscriberRead, change_resync_.count()), interrupt_fd_);
        if (message) OnMessage(*message, change_channel);
      } catch (const std::exception&) {
        subscriber_.Disconnect();
        std::unique_lock lock(subscriber_mu_);
        subscriber_cv_.wait_for(lock, kSubscriberRetry, [&] { return subscriber_stop_.load(); });
      }
    }
    subscriber_.Disconnect();
  }

  void OnMessage(const RedisReply& message, const std::string& change_channel) {
    // ["message", channel, payload]
    if (message.elements.size() != 3 || message.elements[0].str != "message") return;
    const std::string& payload = message.elements[2].str;
    size_t line_end = payload.find('\n');
    if (line_end == std::string::npos) return;
    if (payload.compare(0, line_end, backend_->origin()) == 0 &&
        line_end == backend_->origin().size()) {
      return;  // our own: the engine woke its waiters already, the directory has the change
    }
    if (message.elements[1].str == change_channel) {
      return NotifyChange(std::string_view(payload).substr(line_end + 1));
    }
    // "queue\tcount" lines, and "@due\tms": the earliest due time the script made.
    std::map<std::string, int> ready;
    std::optional<Millis> due;
    while (line_end < payload.size()) {
      const size_t start = line_end + 1;
      line_end = payload.find('\n', start);
      if (line_end == std::string::npos) line_end = payload.size();
      const size_t tab = payload.find('\t', start);
      if (tab == std::string::npos || tab > line_end) continue;
      try {
        const std::string name = payload.substr(start, tab - start);
        const std::string value = payload.substr(tab + 1, line_end - tab - 1);
        if (name == "@due") {
          due = std::stoll(value);
        } else {
          ready[name] += std::stoi(value);
        }
      } catch (const std::exception&) {
      }
    }
    if (!ready.empty()) Dispatch(ready);
    if (due) DispatchDue(*due);
  }

  void NotifyChange(std::string_view what) {
    std::lock_guard lock(change_mu_);  // held while it runs: see SetChangeHandler
    if (change_handler_) change_handler_(what);
  }

  void DispatchDue(Millis due) {
    DueHandler handler;
    {
      std::lock_guard lock(handler_mu_);
      handler = due_handler_;
    }
    if (handler) handler(due);
  }

  void Dispatch(const std::map<std::string, int>& ready) {
    ReadyHandler handler;
    {
      std::lock_guard lock(handler_mu_);
      handler = ready_handler_;
    }
    if (handler) handler(ready);
  }

  std::unique_ptr<Backend> backend_;              // the store thread's
  std::unique_ptr<redis_pg::Recorder> recorder_;  // copies the outbox into PostgreSQL
  std::string prefix_;
  std::chrono::milliseconds change_resync_;  // see SubscribeLoop
  const core::Clock* clock_;                 // of the id claims' generations; null = system
  core::SystemClock system_clock_;
  core::Millis event_ttl_;  // how long an event stays in Redis after its last change
  // Whether an id claim may have left Redis (see AskRecordAboutIds); only ever turns true.
  std::atomic<bool> ids_checked_;
  core::SystemRandom random_;  // lease ids
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Op>> queue_;
  bool closed_ = false;
  // The store thread waits for Redis's replies and for work at once (AwaitReplyOrWork): then
  // new work also signals `work_fd` (an eventfd), not only `wake_`.
  bool awaiting_reply_ = false;
  int work_fd_ = -1;

  std::chrono::steady_clock::time_point last_record_probe_{};  // the store thread's

  redis_pg::RedisConn subscriber_;  // the subscriber thread's
  int interrupt_fd_ = -1;           // eventfd: Close() ends the subscriber's blocking read
  std::atomic<bool> subscriber_stop_{false};
  std::mutex subscriber_mu_;
  std::condition_variable subscriber_cv_;
  std::mutex handler_mu_;
  ReadyHandler ready_handler_;
  DueHandler due_handler_;
  std::mutex change_mu_;
  ChangeHandler change_handler_;

  std::thread thread_;  // last: started after everything they use
  std::thread subscriber_thread_;
};

struct Names {
  std::string key_prefix;
  std::string pg_schema;
};

core::Result<Names> NamesFor(const std::string& name_space) {
  for (char c : name_space) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) {
      return core::MakeError(core::ErrorCode::kInvalidField,
                             "namespace may hold only a-z, 0-9 and _", "namespace");
    }
  }
  if (name_space.empty()) return Names{"madeira:", "madeira"};
  return Names{"madeira:" + name_space + ":", "madeira_" + name_space};
}

core::Result<std::unique_ptr<Backend>> MakeBackend(const RedisPgOptions& options) {
  auto names = NamesFor(options.name_space);
  if (!names) return names.error();
  if (options.redis_url.empty()) {
    return core::MakeError(core::ErrorCode::kInvalidField, "redis url: not set", "redis_url");
  }
  if (options.database_url.empty()) {
    return core::MakeError(core::ErrorCode::kInvalidField, "database url: not set", "database_url");
  }
  auto endpoint = redis_pg::ParseRedisUrl(options.redis_url);
  if (!endpoint) return endpoint.error();
  // e.g. "madeira" or "madeira:t1234": the key prefix without its trailing colon.
  std::string client_name = names->key_prefix.substr(0, names->key_prefix.size() - 1);
  return std::make_unique<Backend>(std::move(*endpoint), options.io_timeout, options.database_url,
                                   names->pg_schema, names->key_prefix, client_name);
}

}  // namespace

core::Result<std::unique_ptr<Store>> OpenRedisPgStore(const RedisPgOptions& options) {
  auto backend = MakeBackend(options);
  if (!backend) return backend.error();
  auto started = (*backend)->Start(options.allow_volatile_redis);
  if (!started) return started.error();
  auto recorder = MakeBackend(options);
  if (!recorder) return recorder.error();
  std::string prefix = NamesFor(options.name_space)->key_prefix;
  std::string client_name = prefix.substr(0, prefix.size() - 1);
  bool ids_checked = false;
  try {
    ids_checked = (*backend)->EndedClaimsChecked();
  } catch (const redis_pg::RedisIoError& e) {
    return Unavailable(e.what());
  }
  return std::unique_ptr<Store>(new RedisPgStore(std::move(*backend), std::move(*recorder),
                                                 std::move(prefix), std::move(client_name), options,
                                                 ids_checked));
}

core::Result<RecoverReport> RecoverRedisPg(const RedisPgOptions& options, core::Millis now,
                                           core::Millis idempotency_ttl) {
  auto backend = MakeBackend(options);
  if (!backend) return backend.error();
  auto started = (*backend)->Start(options.allow_volatile_redis, /*check_lost_data=*/false);
  if (!started) return started.error();
  return Guarded<RecoverReport>(
      [&] { return (*backend)->Recover(now, idempotency_ttl, options.ended_claims_retention); });
}

}  // namespace madeira::store

namespace madeira::store {

core::Result<int> MigrateRedisPgSchema(const RedisPgOptions& options) {
  auto names = NamesFor(options.name_space);
  if (!names) return names.error();
  if (options.database_url.empty()) {
    return core::MakeError(core::ErrorCode::kInvalidField, "database url: not set", "database_url");
  }
  try {
    redis_pg::PgConn pg(options.database_url, names->pg_schema);
    redis_pg::MigratePg(pg, names->pg_schema);
    return redis_pg::kPgSchemaVersion;
  } catch (const redis_pg::PgError& e) {
    return Unavailable(e.what());
  }
}

}  // namespace madeira::store
