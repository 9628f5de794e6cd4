// How a task and an attempt are read back from their rows.
#pragma once

#include <optional>
#include <string>
#include <string_view>

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
  "attempt_started_at"

// A task plus the lease state the engine never sees directly.
struct TaskRow {
  core::Task task;
  std::optional<std::string> lease_id;
  int64_t fencing_token = 0;
  std::optional<core::Millis> lease_deadline;
  std::optional<core::Millis> attempt_started_at;
};

// Reads the current row of a statement that selected MADEIRA_TASK_COLUMNS.
TaskRow ReadTaskRow(const Query& q);

// Reads attempt, worker_id, started_at, finished_at, outcome, error, http_status,
// response_excerpt.
core::Attempt ReadAttempt(const Query& q);

std::string_view StatusText(core::TaskStatus s);
core::TaskStatus ParseStatusText(std::string_view text);  // throws DbError on garbage
std::optional<core::AttemptOutcome> ParseOutcomeText(std::string_view text);

}  // namespace madeira::store::sqlite
