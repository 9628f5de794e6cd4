// The store operations as SQL, each run by the store thread inside the batch transaction (and
// its own savepoint). They return user errors as values and throw DbError on SQLite failures.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/random.h"
#include "store/sqlite/counters.h"
#include "store/sqlite/db.h"
#include "store/sqlite/rows.h"
#include "store/store.h"

namespace madeira::store::sqlite {

class TaskTable {
 public:
  TaskTable(Db& db, TaskCounters& counters, core::Random& random)
      : db_(db), counters_(counters), random_(random) {}

  // submit_lease.cc
  Result<std::vector<SubmitOutcome>> Submit(const std::vector<core::TaskSpec>& tasks, Millis now);
  Result<LeaseBatch> Lease(const LeaseRequest& request);

  // attempts.cc
  Result<AttemptReport> Ack(const AckRequest& request);
  Result<AttemptReport> Fail(const FailRequest& request, const RetryDecider& decide);
  Result<Millis> Extend(const ExtendRequest& request);
  Result<std::vector<AttemptReport>> ExpireLeases(Millis now, const RetryDecider& decide);
  Result<std::vector<std::string>> PromoteDue(Millis now);
  Result<std::optional<Millis>> NextWakeup();

  // admin.cc
  Result<core::Task> Cancel(const std::string& task_id, Millis now);
  Result<std::vector<core::Task>> Replay(const DeadSelector& selector, const ReplayEdits& edits,
                                         const ReplayCheck& check, Millis now);
  Result<int64_t> CancelDead(const DeadSelector& selector, Millis now);
  Result<core::Task> Get(const std::string& task_id);
  Result<std::vector<core::Attempt>> Attempts(const std::string& task_id);
  Result<SearchPage> Search(const SearchQuery& query);
  Result<std::vector<DepthRow>> Depths();
  Result<Unit> PutSchema(const SchemaRecord& schema);
  Result<SchemaRecord> GetSchema(const std::string& task_type, int version);
  Result<std::vector<SchemaRecord>> ListSchemas();

  // webhooks.cc
  Result<Unit> PutEndpoint(const EndpointRecord& endpoint);
  Result<Unit> DeleteEndpoint(const std::string& endpoint_id);
  Result<EndpointRecord> GetEndpoint(const std::string& endpoint_id);
  Result<std::vector<EndpointRecord>> ListEndpoints();
  Result<EventSubmitOutcome> SubmitEvent(const EventRecord& event,
                                         const std::vector<NewDelivery>& deliveries, Millis now);
  Result<StoredEvent> AddDeliveries(const std::string& source, const std::string& event_id,
                                    const std::vector<NewDelivery>& deliveries, Millis now);
  Result<StoredEvent> GetEvent(const std::string& event_id,
                               const std::optional<std::string>& source);

 private:
  std::optional<TaskRow> FindById(const std::string& task_id);
  // The running task holding this lease, or kLeaseLost.
  Result<TaskRow> FindLeased(const std::string& lease_id);
  // The shared end of Fail and ExpireLeases.
  Result<AttemptReport> FailAttempt(TaskRow row, const core::Failure& failure, Millis now,
                                    const AttemptDetail& detail, const RetryDecider& decide);
  void FinishAttempt(const TaskRow& row, core::AttemptOutcome outcome, Millis now,
                     const std::optional<std::string>& error, const AttemptDetail& detail);
  // Lets a sibling with the same idempotency_key run (the key is no longer held by this task).
  void ReleaseKey(const core::Task& task);
  void ClearFastRetry(core::Task& task);
  // Dead tasks picked by ids (unknown or not-dead ids skipped) or by filter. A selector of one id
  // is an error instead when that task is unknown (kNotFound) or not dead (kTaskNotDead).
  Result<std::vector<TaskRow>> SelectDead(const DeadSelector& selector);
  // The stored event (by its seq), with its deliveries and their tasks' current status.
  // Without a source: the one received last.
  std::optional<std::pair<int64_t, StoredEvent>> FindEvent(
      const std::string& event_id, const std::optional<std::string>& source);
  std::vector<EventDelivery> DeliveriesOf(int64_t event_seq);
  // Submits the deliveries' tasks as Submit does. kTaskIdConflict when a task_id exists, maybe
  // after earlier ones were written: the failed operation's savepoint takes them back.
  Result<std::vector<EventDelivery>> SubmitDeliveryTasks(const std::vector<NewDelivery>& deliveries,
                                                         Millis now);
  // Rows for the deliveries of the event, numbered from `position` on.
  void RecordDeliveries(int64_t event_seq, int64_t position,
                        const std::vector<EventDelivery>& deliveries);

  Db& db_;
  TaskCounters& counters_;
  core::Random& random_;
};

}  // namespace madeira::store::sqlite
