// How a task travels: Redis hash fields <-> core::Task, and the PostgreSQL record's rows.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/task.h"
#include "store/redis_pg/pg_conn.h"
#include "store/redis_pg/redis_conn.h"

namespace madeira::store::redis_pg {

using Fields = std::unordered_map<std::string, std::string>;

// A flat [name, value, ...] array (HGETALL, a stream entry) as a map.
Fields FieldsFromFlat(const RedisReply& flat);
// A task hash as read (flat) with the changes a script made to it after (flat pairs; an empty
// value = the field was removed).
Fields FieldsWithChanges(const RedisReply& flat, const RedisReply& changes);
// Those changes applied to fields read some other way.
void ApplyChanges(const RedisReply& changes, Fields& f);
// The records of one outbox entry: field "j", a JSON array of flat [name, value, ...] arrays
// (entries written before that: a field each, every record starting at its "kind").
std::vector<Fields> RecordsFromFlat(const RedisReply& flat);

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

// Throws std::runtime_error on a malformed hash (a broken invariant).
LiveTask TaskFromFields(const Fields& f);

// What an ack reads of its task (ACK_FIELDS in scripts.cc, same order): the fields that name
// it and those its transitions change — not its payload, which nobody needs back from an ack.
extern const std::vector<std::string> kAckFields;
// A task from those fields alone: its spec holds the id, queue, type, key and content hash.
LiveTask AckedTaskFromFields(const Fields& f);
// HMGET's answer for `names` (a nil = an absent field).
Fields FieldsFromValues(const std::vector<std::string>& names, const RedisReply& values);

inline std::string Num(int64_t v) { return std::to_string(v); }

// A script that failed (a Lua error): a bug, not a user error.
inline core::Error ScriptError(const RedisReply& r) {
  return core::MakeError(core::ErrorCode::kInternal, "redis script: " + r.str);
}

// An optional script argument: "+value" or "-".
inline std::string OptArg(const std::optional<std::string>& v) { return v ? "+" + *v : "-"; }

// The PostgreSQL `tasks` columns in the order TaskFromRow reads them.
extern const char* const kPgTaskColumns;
inline std::string TaskSelect() { return std::string("SELECT ") + kPgTaskColumns + " FROM tasks"; }
core::Task TaskFromRow(const PgResult& r, int row);
extern const char* const kPgAttemptColumns;
core::Attempt AttemptFromRow(const PgResult& r, int row);

// The outbox entries of one flush as JSON arrays for json_populate_recordset: the newest
// version of each task (a full row when the batch holds its full record, else the state
// columns of its newest change), each finished attempt, and each event.
struct RecordBatch {
  std::string tasks_json;
  std::string states_json;  // rows with task_id, ver and the state columns only
  std::string attempts_json;
  std::string events_json;  // the latest copy of each event (the one with most deliveries)
  size_t tasks = 0;
  size_t states = 0;
  size_t attempts = 0;
  size_t events = 0;
};
RecordBatch BuildRecordBatch(const std::vector<Fields>& entries);

}  // namespace madeira::store::redis_pg
