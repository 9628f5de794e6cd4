// How a task and an attempt are read back from their rows.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/random.h"
#include "core/task.h"
#include "store/sqlite/db.h"

namespace madeira::store::sqlite {

// The column list every task SELECT uses, so ReadTaskRow can read by position. A macro so that
// SQL text can be concatenated at compile time.
#define MADEIRA_TASK_COLUMNS                                                              \
  "seq, task_id, task_type, queue, payload_version, payload, schedule_time, timeout_ms, " \
  "max_retries, priority, trace_id, idempotency_key, content_hash, status, retry_count, " \
  "attempts, created_at, updated_at, next_attempt_at, last_error, result, deduplicated, " \
  "fast_retries_used, in_fast_retry, lease_id, fencing_token, lease_deadline, "           \
  "attempt_started_at, attempt_worker, owner"

// A task plus the lease state the engine never sees directly.
struct TaskRow {
  core::Task task;
  std::optional<std::string> lease_id;
  int64_t fencing_token = 0;
  std::optional<core::Millis> lease_deadline;
  std::optional<core::Millis> attempt_started_at;
  std::optional<std::string> attempt_worker;  // the worker of the running attempt
};

// Reads the current row of a statement that selected MADEIRA_TASK_COLUMNS.
TaskRow ReadTaskRow(const Query& q);

// Reads attempt, worker_id, started_at, finished_at, outcome, error, http_status,
// response_excerpt.
core::Attempt ReadAttempt(const Query& q);

// A new lease id: an unguessable ordered token, then '-' and the task's seq in hex. The seq lets
// ack/fail/extend find the task by rowid instead of through an index on lease_id; the whole id
// is still compared with the stored one, so the token is what fences.
std::string MakeLeaseId(core::Millis now, int64_t seq, core::Random& random);
// The seq a lease id names; nullopt for ids without one (made before schema v2, or garbage).
std::optional<int64_t> LeaseSeq(std::string_view lease_id);

std::string_view StatusText(core::TaskStatus s);
core::TaskStatus ParseStatusText(std::string_view text);  // throws DbError on garbage
std::optional<core::AttemptOutcome> ParseOutcomeText(std::string_view text);

}  // namespace madeira::store::sqlite
