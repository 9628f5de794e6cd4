// The operations that are one script call each: how to build the call and read its reply.
// The store pipelines these (many in one round trip) on its thread.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/random.h"
#include "store/redis_pg/backend.h"

namespace madeira::store::redis_pg {

// Calls of the submit and ack scripts queued together are sent as one call (its arguments
// concatenated; its reply one flat array, a run of values per task or ack, in order): one script
// call costs Redis far more than the work of one task.
inline constexpr size_t kSubmitArgsPerTask = 13;  // now, known, schemas + AppendTaskArgs' 10
inline constexpr size_t kAckArgs = 6;
inline constexpr size_t kSubmitReplyValues = 3;  // kind, status, seq
inline constexpr size_t kAckReplyValues = 1;     // the ack script's answer; AckReply reads it
inline constexpr size_t kLeaseReplyValues = 3;   // lease id, st, spec (LeaseReply)
// The arguments each task or ack of a merged call takes; 0 for the other scripts.
inline size_t ArgsPerItem(Script script) {
  if (script == Script::kSubmit) return kSubmitArgsPerTask;
  if (script == Script::kAck) return kAckArgs;
  return 0;
}
// The reply values each task or ack of a merged call answers; 0 for the other scripts.
inline size_t ReplyValuesPerItem(Script script) {
  if (script == Script::kSubmit) return kSubmitReplyValues;
  if (script == Script::kAck) return kAckReplyValues;
  return 0;
}

// How many tasks a submit call (SubmitCall, or several merged) carries.
inline size_t SubmitTasks(const RedisCall& submit) {
  return submit.args.size() / kSubmitArgsPerTask;
}

// Made with PostgreSQL not asked about the ids ("-", see kSubmit) but those made here (nothing
// to ask); SubmitIds lists the ids to ask about, RecordedIdsInto tells the call what it said.
// `schemas`: the SchemaSet version the payloads were validated against ("" = not checked).
RedisCall SubmitCall(const std::vector<core::TaskSpec>& tasks, Millis now,
                     const std::string& schemas);
std::vector<std::string> SubmitIds(const RedisCall& submit);
void RecordedIdsInto(RedisCall& submit, const std::map<std::string, std::string>& recorded);
// A reply with a 'recheck' (ids PostgreSQL was not asked about, once it must be) sets *recheck
// and is an error: the caller submits again, asking. 'schemas' is SubmitKind::kStaleSchemas.
// `made` gets, per task in order, the "seq\tstatus" its outbox record holds, or "" when the
// call made no task of it.
Result<std::vector<SubmitOutcome>> SubmitReply(const std::vector<core::TaskSpec>& tasks,
                                               const RedisReply& r, bool* recheck,
                                               std::vector<std::string>* made);
// The outbox entries of a submit call's reply (after its `tasks` per-task elements), taken out
// of it; none when the reply has none.
std::vector<std::string> TakeSubmitEntries(RedisReply& reply, size_t tasks);

// Lease ids are made by the caller (unguessable: 128 random bits).
RedisCall LeaseCall(const LeaseRequest& request, core::Random& random);
// `states` gets each leased task's state record (StateRecordOf), for its process to copy: the
// script writes none to the outbox.
Result<LeaseBatch> LeaseReply(const RedisReply& r, std::vector<StateRecord>* states = nullptr);

RedisCall AckCall(const AckRequest& request);
// The report holds what AttemptReport promises after an ack (store.h) and no more: the task's
// id, queue, type, key, attempts, status and result.
Result<AttemptReport> AckReply(const AckRequest& request, const RedisReply& r);

RedisCall ExtendCall(const ExtendRequest& request);
Result<Millis> ExtendReply(const RedisReply& r);

RedisCall CancelCall(const std::string& task_id, Millis now);
Result<core::Task> CancelReply(const std::string& task_id, const RedisReply& r);

RedisCall PromoteCall(Millis now);
Result<std::vector<std::string>> PromoteReply(const RedisReply& r);

RedisCall NextWakeupCall();
Result<std::optional<Millis>> NextWakeupReply(const RedisReply& r);

// mode "new" (SubmitEvent) or "add" (AddDeliveries; only source and event_id of `event` used).
// The event leaves Redis `ttl` ms after this call (PostgreSQL keeps it). Made as if PostgreSQL
// was not asked about the event; EventFromRecordChecked: the caller has brought it back into
// Redis from there, if PostgreSQL had it (Backend::RestoreEventFromRecord).
RedisCall EventCall(const std::string& mode, const EventRecord& event,
                    const std::vector<NewDelivery>& deliveries, Millis now, Millis ttl);
void EventFromRecordChecked(RedisCall& event);
// The deliveries whose task Redis no longer knows (ended, its id claim gone from Redis) have
// their index in *unknown and the status to read from PostgreSQL. A 'recheck' (see kEvent)
// sets *recheck and is an error: the caller brings the event back and submits again.
Result<EventSubmitOutcome> EventReply(const RedisReply& r, std::vector<size_t>* unknown,
                                      bool* recheck = nullptr);
RedisCall GetEventCall(const std::string& event_id, const std::optional<std::string>& source);
Result<StoredEvent> GetEventReply(const std::string& event_id, const RedisReply& r,
                                  std::vector<size_t>* unknown);

RedisCall DepthsCall(const std::string& key_prefix);
Result<std::vector<DepthRow>> DepthsReply(const RedisReply& r);

}  // namespace madeira::store::redis_pg
