// How a task travels: Redis hash fields <-> core::Task, and the PostgreSQL record's rows.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "core/task.h"
#include "store/redis_pg/pg_conn.h"
#include "store/redis_pg/redis_conn.h"
#include "store/redis_pg/scripts.h"

namespace madeira::store::redis_pg {

using Fields = std::unordered_map<std::string, std::string>;

// A task's packed spec (hash field "spec"): the fields a task is created with, name and value
// after name and value, each a msgpack string (`id`, `t-1`, `payload`, `{...}`, ...). The
// scripts never look inside it: a new task's hash holds the fields they read or change (packed
// too, "st": see kLiveFields) plus this one value, and its record for PostgreSQL is this text
// with its seq and status put in front. Redis pays per value it stores, logs and answers, far
// more than per byte, so one value instead of sixteen is most of a submit's cost
// (docs/architecture.md, "Task layout"). Specs an older Madeira wrote are the inside of a flat JSON
// array (`"id","t-1",...`); they are read as well (a JSON spec starts with a quote, a msgpack
// string never does). msgpack rather than JSON: reading a lease's 100 JSON specs was a quarter
// of madeira's instructions for a drained task (docs/benchmarks.md, twenty-seventh round).
std::string PackedSpec(const core::TaskSpec& t, core::Millis now);
// Fills the fields of `f`'s packed spec that `f` does not hold itself (the hash's own fields are
// newer: a replay's edit, a transition) and drops "spec". A hash without one is left as it is.
void UnpackSpec(Fields& f);

// Replaces `f`'s "st" (a task's packed fields, see kLiveFields) by the fields it holds. Throws
// std::runtime_error when it cannot be read whole. A hash without one is left as it is.
void UnpackLive(Fields& f);

// A flat [name, value, ...] array (HGETALL, a stream entry) as a map, its packed fields and spec
// unpacked.
Fields FieldsFromFlat(const RedisReply& flat);
// The records the outbox carries to PostgreSQL. A task's change ("state") and a finished attempt
// ("attempt"), which every lease and every ack makes, are held by position: the values of
// kStateRecordFields and kAttemptRecordFields (scripts.h) in order, none = absent. Reading them
// into maps of names cost the recorder more than the rows it makes of them (docs/benchmarks.md,
// twenty-eighth round). A whole task ("task") and an event ("event"), rare, go by name, "kind"
// included.
struct StateRecord {
  std::array<std::optional<std::string>, kStateRecordFields.size()> values;
  // The task's id; "" when the record lacks one (BuildRecordBatch refuses it).
  std::string_view id() const { return values[0] ? std::string_view(*values[0]) : ""; }
  bool operator==(const StateRecord&) const = default;
};
static_assert(std::string_view(kStateRecordFields[0]) == "id");
struct AttemptRecord {
  std::array<std::optional<std::string>, kAttemptRecordFields.size()> values;
  bool operator==(const AttemptRecord&) const = default;
};
using Record = std::variant<StateRecord, AttemptRecord, Fields>;

// The records of one outbox entry, in order: fields "j", each a JSON array of flat [name, value,
// ...] arrays, "m", packed state, attempt and acked records one after another (see
// kStateRecordFields; an acked record reads as its attempt and state), and new tasks as "t"
// ("seq\tstatus") then "s" (the packed spec); a submit's entry starts with "o" (its process).
// Entries written before that: a field each, every record starting at its "kind".
std::vector<Record> RecordsFromFlat(const RedisReply& flat);
// The record of a new task from its entry's "t" (`meta`: "seq\tstatus") and "s" (its packed
// spec) values: what RecordsFromFlat reads of them.
Fields NewTaskRecord(const std::string& meta, const std::string& spec);
// The state record of a task as `task` holds it, '' as none: what the scripts would pack, for a
// change its process copies itself (a lease: Recorder::Leased).
StateRecord StateRecordOf(const Fields& task);

// A task as Redis holds it: the task plus the live attempt's lease state.
struct LiveTask {
  core::Task task;
  std::string lease_id;  // empty unless running
  int64_t fencing_token = 0;
  core::Millis deadline = 0;
  core::Millis attempt_started_at = 0;
  std::string worker;
  core::Millis ready_at = 0;
  int64_t ver = 0;
};

// Throws std::runtime_error on a malformed hash (a broken invariant). The counters and flags
// that start at 0 (retry, attempts, dedup, fastused, infast, token) are absent until set.
LiveTask TaskFromFields(const Fields& f);
// A task as the lease script answers it: its "st" as leased (none: a hash without one) and its
// packed spec, read as TaskFromFields reads the hash {st, spec} (FieldsFromFlat), but straight into
// the task, without the map (docs/benchmarks.md, twenty-seventh round). `state`, when given,
// gets the task's state record (StateRecordOf).
LiveTask LeasedTask(std::optional<std::string_view> st, std::string_view spec, StateRecord* state);

inline std::string Num(int64_t v) { return std::to_string(v); }

// A script that failed (a Lua error): a bug, not a user error.
inline core::Error ScriptError(const RedisReply& r) {
  return core::MakeError(core::ErrorCode::kInternal, "redis script: " + r.str);
}

// An optional script argument: "+value" or "-".
inline std::string OptArg(const std::optional<std::string>& v) { return v ? "+" + *v : "-"; }

// A task's PostgreSQL columns ("task_id, seq, ..."), in the order TaskFromRow reads them and
// full rows are COPYed in. They are the view `task_rows`: `tasks` holds what a task is made with
// (PgSpecColumns), `task_states` what changes (PgStateColumns, and seq); see migration 6.
const std::string& PgTaskColumns();
inline std::string TaskSelect() { return "SELECT " + PgTaskColumns() + " FROM task_rows"; }
core::Task TaskFromRow(const PgResult& r, int row);
extern const char* const kPgAttemptColumns;
core::Attempt AttemptFromRow(const PgResult& r, int row);

// The columns of a state row (a task's columns that change after creation) and of an attempt
// row, in the order of their COPY text.
const std::string& PgStateColumns();
// The columns of `tasks`.
const std::string& PgSpecColumns();
// "c = FROM.c, ..." for every column but task_id of `tasks`, or of a state row: the SET of
// the statements that apply the COPYed rows.
std::string PgSpecAssignments(std::string_view from);
std::string PgStateAssignments(std::string_view from);
extern const char* const kPgAttemptRowColumns;

// The outbox entries of one flush for PostgreSQL: the newest version of each task (a full row
// when the batch holds its full record, else the state columns of its newest change), each
// finished attempt, and each event. Task, state and attempt rows go by COPY (PostgreSQL reads
// its text format at about a third of what json_populate_recordset costs a row); events, rare,
// as a JSON array for json_populate_recordset.
struct RecordBatch {
  // Rows in COPY's text format: full task rows (PgTaskColumns), state rows (PgStateColumns),
  // attempts (kPgAttemptRowColumns).
  std::string tasks_copy;
  std::string states_copy;
  std::string attempts_copy;
  std::string events_json;  // the latest copy of each event (the one with most deliveries)
  size_t tasks = 0;
  size_t states = 0;
  size_t attempts = 0;
  size_t events = 0;
};
RecordBatch BuildRecordBatch(const std::vector<const Record*>& records);
inline RecordBatch BuildRecordBatch(const std::vector<Record>& records) {
  std::vector<const Record*> all;
  all.reserve(records.size());
  for (const Record& r : records) all.push_back(&r);
  return BuildRecordBatch(all);
}

// A task a submit just made, as its process copies it (Backend::CopyNewTasks): what the submit
// sent and what the script answered.
struct MadeTask {
  const core::TaskSpec* spec = nullptr;
  std::string_view meta;  // "seq\tstatus"
  core::Millis now = 0;   // the submit's time
};
// The rows of tasks submits just made: what BuildRecordBatch makes of their records
// (NewTaskRecord(meta, PackedSpec(*spec, now))), in the same order (by id), straight from the
// specs rather than packing each one and parsing it back.
RecordBatch NewTasksRecordBatch(std::vector<MadeTask> tasks);

}  // namespace madeira::store::redis_pg
