// The end of an attempt (ack, fail, lease expiry), lease extension, and due-time work.
#include <algorithm>

#include "store/sqlite/task_table.h"

namespace madeira::store::sqlite {

namespace {

using core::TaskStatus;

constexpr const char* kLeaseExpiredError =
    R"({"type":"lease_expired","message":"the lease deadline passed without an ack or fail"})";

}  // namespace

Result<TaskRow> TaskTable::FindLeased(const std::string& lease_id) {
  std::optional<TaskRow> row;
  if (std::optional<int64_t> seq = LeaseSeq(lease_id)) {
    Query q = db_.Prepare("SELECT " MADEIRA_TASK_COLUMNS " FROM tasks WHERE seq = ?");
    q.Bind(*seq);
    if (q.Step()) row.emplace(ReadTaskRow(q));
  } else {
    // An id made before schema v2 names no seq: look among the running tasks (the deadline
    // index holds only those).
    Query q = db_.Prepare("SELECT " MADEIRA_TASK_COLUMNS
                          " FROM tasks INDEXED BY tasks_deadline "
                          "WHERE status = 'running' AND lease_deadline IS NOT NULL "
                          "AND lease_id = ?");
    q.Bind(lease_id);
    if (q.Step()) row.emplace(ReadTaskRow(q));
  }
  // The whole id must match: the seq only says where to look.
  if (!row || row->lease_id != lease_id || row->task.status != TaskStatus::kRunning) {
    return core::MakeError(core::ErrorCode::kLeaseLost, "lease expired or superseded");
  }
  return std::move(*row);
}

void TaskTable::FinishAttempt(const TaskRow& row, core::AttemptOutcome outcome, Millis now,
                              const std::optional<std::string>& error,
                              const AttemptDetail& detail) {
  // The attempt's one write: while it ran it lived on the task row.
  db_.Prepare(
         "INSERT INTO attempts(task_seq, attempt, worker_id, started_at, finished_at, outcome, "
         "error, http_status, response_excerpt) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)")
      .Bind(row.task.seq, row.task.attempts, row.attempt_worker.value_or(""),
            row.attempt_started_at.value_or(now), now, core::AttemptOutcomeName(outcome), error,
            detail.http_status, detail.response_excerpt)
      .Run();
}

void TaskTable::ReleaseKey(const core::Task& task) {
  if (!task.spec.idempotency_key) return;
  db_.Prepare("DELETE FROM idempotency WHERE key = ? AND state = 'running' AND task_id = ?")
      .Bind(*task.spec.idempotency_key, task.spec.task_id)
      .Run();
}

void TaskTable::ClearFastRetry(core::Task& task) {
  if (!task.in_fast_retry) return;
  task.in_fast_retry = false;
  counters_.AddFast(task.spec.task_type, -1);
}

Result<AttemptReport> TaskTable::Ack(const AckRequest& request) {
  auto found = FindLeased(request.lease_id);
  if (!found) return found.error();
  TaskRow& row = *found;
  core::Task& task = row.task;
  ClearFastRetry(task);
  task.status = TaskStatus::kSucceeded;
  task.result = request.result;
  task.updated_at = request.now;
  task.next_attempt_at.reset();
  db_.Prepare(
         "UPDATE tasks SET status = 'succeeded', result = ?, in_fast_retry = 0, lease_id = NULL, "
         "lease_deadline = NULL, next_attempt_at = NULL, updated_at = ? WHERE seq = ?")
      .Bind(task.result, request.now, task.seq)
      .Run();
  FinishAttempt(row, core::AttemptOutcome::kSucceeded, request.now, std::nullopt, request.detail);
  if (task.spec.idempotency_key) {
    db_.Prepare(
           "INSERT INTO idempotency(key, state, task_id, expires_at) VALUES(?, 'succeeded', ?, ?) "
           "ON CONFLICT(key) DO UPDATE SET state = 'succeeded', task_id = excluded.task_id, "
           "expires_at = excluded.expires_at")
        .Bind(*task.spec.idempotency_key, task.spec.task_id, request.now + request.idempotency_ttl)
        .Run();
  }
  counters_.Move(task.spec.queue, TaskStatus::kRunning, TaskStatus::kSucceeded);
  return AttemptReport{std::move(task), row.attempt_started_at.value_or(request.now), {}};
}

Result<AttemptReport> TaskTable::Fail(const FailRequest& request, const RetryDecider& decide) {
  auto found = FindLeased(request.lease_id);
  if (!found) return found.error();
  return FailAttempt(std::move(*found), request.failure, request.now, request.detail, decide);
}

Result<AttemptReport> TaskTable::FailAttempt(TaskRow row, const core::Failure& failure, Millis now,
                                             const AttemptDetail& detail,
                                             const RetryDecider& decide) {
  core::Task& task = row.task;
  int fast_in_flight = counters_.Fast(task.spec.task_type) - (task.in_fast_retry ? 1 : 0);
  core::RetryDecision decision = decide(task, failure, fast_in_flight);
  switch (decision.next) {
    case TaskStatus::kPending:
      task.retry_count += 1;
      task.fast_retries_used += 1;
      if (!task.in_fast_retry) counters_.AddFast(task.spec.task_type, 1);
      task.in_fast_retry = true;
      task.next_attempt_at = decision.due;
      break;
    case TaskStatus::kRetrying:
      task.retry_count += 1;
      ClearFastRetry(task);
      task.next_attempt_at = decision.due;
      break;
    case TaskStatus::kDead:
      ClearFastRetry(task);
      task.next_attempt_at.reset();
      break;
    default:
      return core::MakeError(core::ErrorCode::kInternal,
                             "retry decision must be pending, retrying or dead");
  }
  FinishAttempt(row, failure.outcome, now, failure.error, detail);
  task.status = decision.next;
  task.last_error = failure.error;
  task.updated_at = now;
  // ready_at = due keeps a fast retry behind tasks that became ready before it.
  db_.Prepare(
         "UPDATE tasks SET status = ?, retry_count = ?, fast_retries_used = ?, in_fast_retry = ?, "
         "next_attempt_at = ?, ready_at = COALESCE(?, ready_at), last_error = ?, "
         "lease_id = NULL, lease_deadline = NULL, updated_at = ? WHERE seq = ?")
      .Bind(StatusText(task.status), task.retry_count, task.fast_retries_used, task.in_fast_retry,
            task.next_attempt_at, task.next_attempt_at, task.last_error, now, task.seq)
      .Run();
  ReleaseKey(task);
  counters_.Move(task.spec.queue, TaskStatus::kRunning, task.status);
  return AttemptReport{std::move(task), row.attempt_started_at.value_or(now), decision};
}

Result<Millis> TaskTable::Extend(const ExtendRequest& request) {
  auto found = FindLeased(request.lease_id);
  if (!found) return found.error();
  const TaskRow& row = *found;
  Millis started = row.attempt_started_at.value_or(request.now);
  Millis current = row.lease_deadline.value_or(request.now);
  Millis deadline = std::min(request.now + request.extend_ms, started + row.task.spec.timeout_ms);
  deadline = std::max(deadline, current);
  if (deadline != current) {
    db_.Prepare("UPDATE tasks SET lease_deadline = ? WHERE seq = ?")
        .Bind(deadline, row.task.seq)
        .Run();
  }
  return deadline;
}

Result<std::vector<AttemptReport>> TaskTable::ExpireLeases(Millis now, const RetryDecider& decide) {
  std::vector<TaskRow> expired;
  {
    Query q = db_.Prepare("SELECT " MADEIRA_TASK_COLUMNS
                          " FROM tasks INDEXED BY tasks_deadline "
                          "WHERE status = 'running' AND lease_deadline <= ? "
                          "ORDER BY lease_deadline");
    q.Bind(now);
    while (q.Step()) expired.push_back(ReadTaskRow(q));
  }
  core::Failure failure;
  failure.outcome = core::AttemptOutcome::kLeaseExpired;
  failure.error = kLeaseExpiredError;
  std::vector<AttemptReport> reports;
  reports.reserve(expired.size());
  for (TaskRow& row : expired) {
    auto report = FailAttempt(std::move(row), failure, now, {}, decide);
    if (!report) return report.error();
    reports.push_back(std::move(*report));
  }
  return reports;
}

Result<std::vector<std::string>> TaskTable::PromoteDue(Millis now) {
  struct Due {
    int64_t seq;
    std::string queue;
    TaskStatus status;
  };
  std::vector<Due> due;
  {
    Query q = db_.Prepare(
        "SELECT seq, queue, status FROM tasks INDEXED BY tasks_due "
        "WHERE status IN ('scheduled', 'retrying') AND next_attempt_at <= ? "
        "ORDER BY next_attempt_at");
    q.Bind(now);
    while (q.Step()) due.push_back({q.Int(0), q.Text(1), ParseStatusText(q.Text(2))});
  }
  std::vector<std::string> queues;
  queues.reserve(due.size());
  for (Due& d : due) {
    // ready_at = the due time, not now: a task promoted late keeps its place in FIFO order.
    db_.Prepare(
           "UPDATE tasks SET status = 'pending', ready_at = next_attempt_at, updated_at = ? "
           "WHERE seq = ?")
        .Bind(now, d.seq)
        .Run();
    counters_.Move(d.queue, d.status, TaskStatus::kPending);
    queues.push_back(std::move(d.queue));
  }
  return queues;
}

Result<std::optional<Millis>> TaskTable::NextWakeup() {
  // The first entry of each partial index: one seek each. INDEXED BY because, without
  // statistics, the planner prefers the (status, seq) index and sorts every match.
  auto due = db_.QueryInt(
      "SELECT next_attempt_at FROM tasks INDEXED BY tasks_due "
      "WHERE status IN ('scheduled', 'retrying') ORDER BY next_attempt_at LIMIT 1");
  auto deadline = db_.QueryInt(
      "SELECT lease_deadline FROM tasks INDEXED BY tasks_deadline WHERE status = 'running' "
      "ORDER BY lease_deadline LIMIT 1");
  if (due && deadline) return std::optional<Millis>(std::min(*due, *deadline));
  return std::optional<Millis>(due ? due : deadline);
}

}  // namespace madeira::store::sqlite
