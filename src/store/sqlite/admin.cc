// Cancel, replay and the read side: get, attempts, search, depths, schemas.
#include <algorithm>

#include "store/sqlite/task_table.h"

namespace madeira::store::sqlite {

namespace {

using core::ErrorCode;
using core::MakeError;
using core::TaskStatus;

constexpr int kMaxSearchLimit = 1000;

}  // namespace

std::optional<TaskRow> TaskTable::FindById(const std::string& task_id) {
  Query q = db_.Prepare("SELECT " MADEIRA_TASK_COLUMNS " FROM tasks WHERE task_id = ?");
  q.Bind(task_id);
  if (!q.Step()) return std::nullopt;
  return ReadTaskRow(q);
}

Result<core::Task> TaskTable::Cancel(const std::string& task_id, Millis now) {
  auto row = FindById(task_id);
  if (!row) return MakeError(ErrorCode::kNotFound, "no task " + task_id);
  core::Task& task = row->task;
  if (task.status == TaskStatus::kRunning) {
    return MakeError(ErrorCode::kTaskRunning, "task is running; it can be cancelled once it ends");
  }
  if (IsTerminal(task.status)) {
    return MakeError(ErrorCode::kTaskTerminal,
                     "task already " + std::string(core::TaskStatusName(task.status)));
  }
  TaskStatus from = task.status;
  ClearFastRetry(task);
  task.status = TaskStatus::kCancelled;
  task.next_attempt_at.reset();
  task.updated_at = now;
  db_.Prepare(
         "UPDATE tasks SET status = 'cancelled', in_fast_retry = 0, next_attempt_at = NULL, "
         "updated_at = ? WHERE seq = ?")
      .Bind(now, task.seq)
      .Run();
  ReleaseKey(task);
  counters_.Move(task.spec.queue, from, TaskStatus::kCancelled);
  return std::move(task);
}

Result<std::vector<TaskRow>> TaskTable::SelectDead(const DeadSelector& selector) {
  std::vector<TaskRow> rows;
  if (!selector.task_ids.empty()) {
    const bool single = selector.task_ids.size() == 1;
    for (const std::string& id : selector.task_ids) {
      auto row = FindById(id);
      if (!row) {
        if (single) return MakeError(ErrorCode::kNotFound, "no task " + id);
        continue;
      }
      if (row->task.status != TaskStatus::kDead) {
        if (single) return MakeError(ErrorCode::kTaskNotDead, "task " + id + " is not dead");
        continue;
      }
      rows.push_back(std::move(*row));
    }
    return rows;
  }
  const DeadFilter& f = selector.filter;
  std::string sql =
      "SELECT " MADEIRA_TASK_COLUMNS " FROM tasks WHERE status = 'dead' AND status <> 'running'";
  if (f.queue) sql += " AND queue = ?";
  if (f.task_type) sql += " AND task_type = ?";
  if (f.since) sql += " AND updated_at >= ?";  // a dead task's updated_at is when it died
  sql += " ORDER BY seq";
  Query q = db_.Prepare(sql);
  int i = 0;
  if (f.queue) q.BindAt(++i, *f.queue);
  if (f.task_type) q.BindAt(++i, *f.task_type);
  if (f.since) q.BindAt(++i, *f.since);
  while (q.Step()) rows.push_back(ReadTaskRow(q));
  return rows;
}

Result<std::vector<core::Task>> TaskTable::Replay(const DeadSelector& selector,
                                                  const ReplayEdits& edits,
                                                  const ReplayCheck& check, Millis now) {
  auto rows = SelectDead(selector);
  if (!rows) return rows.error();
  const bool single = selector.task_ids.size() == 1;
  std::vector<core::Task> replayed;
  for (TaskRow& row : *rows) {
    core::Task& task = row.task;
    if (check) {
      auto verdict = check(task, edits);
      if (!verdict) {
        if (single) return verdict.error();
        continue;  // a refused task stays dead
      }
    }
    if (edits.payload) task.spec.payload = *edits.payload;
    if (edits.payload_version) task.spec.payload_version = *edits.payload_version;
    if (edits.max_retries) task.spec.max_retries = *edits.max_retries;
    ClearFastRetry(task);
    task.status = TaskStatus::kPending;
    task.retry_count = 0;
    task.fast_retries_used = 0;
    task.next_attempt_at = now;
    task.updated_at = now;
    db_.Prepare(
           "UPDATE tasks SET status = 'pending', payload = ?1, payload_version = ?2, "
           "max_retries = ?3, retry_count = 0, fast_retries_used = 0, in_fast_retry = 0, "
           "next_attempt_at = ?4, ready_at = ?4, updated_at = ?4 WHERE seq = ?5")
        .Bind(task.spec.payload, task.spec.payload_version, task.spec.max_retries, now, task.seq)
        .Run();
    counters_.Move(task.spec.queue, TaskStatus::kDead, TaskStatus::kPending);
    replayed.push_back(std::move(task));
  }
  return replayed;
}

Result<int64_t> TaskTable::CancelDead(const DeadSelector& selector, Millis now) {
  auto rows = SelectDead(selector);
  if (!rows) return rows.error();
  for (const TaskRow& row : *rows) {
    db_.Prepare("UPDATE tasks SET status = 'cancelled', updated_at = ? WHERE seq = ?")
        .Bind(now, row.task.seq)
        .Run();
    counters_.Move(row.task.spec.queue, TaskStatus::kDead, TaskStatus::kCancelled);
  }
  return static_cast<int64_t>(rows->size());
}

Result<core::Task> TaskTable::Get(const std::string& task_id) {
  auto row = FindById(task_id);
  if (!row) return MakeError(ErrorCode::kNotFound, "no task " + task_id);
  return std::move(row->task);
}

Result<std::vector<core::Attempt>> TaskTable::Attempts(const std::string& task_id) {
  auto row = FindById(task_id);
  if (!row) return MakeError(ErrorCode::kNotFound, "no task " + task_id);
  std::vector<core::Attempt> attempts;
  Query q = db_.Prepare(
      "SELECT attempt, worker_id, started_at, finished_at, outcome, error, http_status, "
      "response_excerpt FROM attempts WHERE task_seq = ? ORDER BY attempt");
  q.Bind(row->task.seq);
  while (q.Step()) attempts.push_back(ReadAttempt(q));
  // The running attempt has no row until it ends; it is read from the task.
  const TaskRow& t = *row;
  if (t.task.status == TaskStatus::kRunning &&
      (attempts.empty() || attempts.back().attempt < t.task.attempts)) {
    core::Attempt open;
    open.attempt = t.task.attempts;
    open.worker_id = t.attempt_worker.value_or("");
    open.started_at = t.attempt_started_at.value_or(0);
    attempts.push_back(std::move(open));
  }
  return attempts;
}

Result<SearchPage> TaskTable::Search(const SearchQuery& query) {
  const int limit = std::clamp(query.limit, 1, kMaxSearchLimit);
  std::optional<TaskStatus> status = query.status;
  if (query.dead_since) status = TaskStatus::kDead;  // died at or after: only dead tasks died
  std::string sql = "SELECT " MADEIRA_TASK_COLUMNS " FROM tasks";
  // Running tasks are not in tasks_status; tasks_deadline holds exactly them (a few per worker,
  // so sorting them by seq is cheap; left alone the planner would scan the table in seq order).
  // Other states repeat tasks_status's WHERE term so the planner can use that partial index.
  if (status == TaskStatus::kRunning) {
    sql += " INDEXED BY tasks_deadline WHERE status = 'running'";
    status.reset();
  } else if (status) {
    sql += " WHERE status = ? AND status <> 'running'";
  } else {
    sql += " WHERE 1";
  }
  if (query.queue) sql += " AND queue = ?";
  if (query.task_type) sql += " AND task_type = ?";
  if (query.trace_id) sql += " AND trace_id = ?";
  if (query.owner) sql += " AND owner = ?";
  if (query.dead_since) sql += " AND updated_at >= ?";
  if (query.cursor) sql += " AND seq < ?";
  sql += " ORDER BY seq DESC LIMIT ?";
  Query q = db_.Prepare(sql);
  int i = 0;
  if (status) q.BindAt(++i, StatusText(*status));
  if (query.queue) q.BindAt(++i, *query.queue);
  if (query.task_type) q.BindAt(++i, *query.task_type);
  if (query.trace_id) q.BindAt(++i, *query.trace_id);
  if (query.owner) q.BindAt(++i, *query.owner);
  if (query.dead_since) q.BindAt(++i, *query.dead_since);
  if (query.cursor) q.BindAt(++i, *query.cursor);
  q.BindAt(++i, limit + 1);  // one more than asked: tells whether another page exists
  SearchPage page;
  while (q.Step()) {
    if (static_cast<int>(page.tasks.size()) == limit) {
      page.next_cursor = page.tasks.back().seq;
      break;
    }
    page.tasks.push_back(ReadTaskRow(q).task);
  }
  return page;
}

Result<std::vector<DepthRow>> TaskTable::Depths() { return counters_.Depths(); }

Result<Unit> TaskTable::PutSchema(const SchemaRecord& schema) {
  db_.Prepare(
         "INSERT INTO schemas(task_type, version, schema, created_at) VALUES(?, ?, ?, ?) "
         "ON CONFLICT(task_type, version) DO UPDATE SET schema = excluded.schema, "
         "created_at = excluded.created_at")
      .Bind(schema.task_type, schema.version, schema.schema, schema.created_at)
      .Run();
  return Unit{};
}

Result<SchemaRecord> TaskTable::GetSchema(const std::string& task_type, int version) {
  Query q =
      db_.Prepare("SELECT schema, created_at FROM schemas WHERE task_type = ? AND version = ?");
  q.Bind(task_type, version);
  if (!q.Step()) {
    return MakeError(ErrorCode::kNotFound,
                     "no schema for " + task_type + " version " + std::to_string(version));
  }
  return SchemaRecord{task_type, version, q.Text(0), q.Int(1)};
}

Result<std::vector<SchemaRecord>> TaskTable::ListSchemas() {
  std::vector<SchemaRecord> schemas;
  Query q = db_.Prepare(
      "SELECT task_type, version, schema, created_at FROM schemas ORDER BY task_type, version");
  while (q.Step()) {
    schemas.push_back({q.Text(0), static_cast<int>(q.Int(1)), q.Text(2), q.Int(3)});
  }
  return schemas;
}

}  // namespace madeira::store::sqlite
