// Submit and Lease: the hot path, written for batches.
#include <algorithm>
#include <array>
#include <limits>
#include <set>
#include <tuple>

#include "store/sqlite/task_table.h"

namespace madeira::store::sqlite {

namespace {

using core::TaskStatus;

// A task the ready-index walk chose, read whole as it passed (a second read by rowid after the
// lease's UPDATE was a twentieth of the store thread in the drain profile).
struct Candidate {
  TaskRow row;
  Millis ready_at;
  std::string queue;
};

bool RunsBefore(const Candidate& a, const Candidate& b) {
  return std::tie(b.row.task.spec.priority, a.ready_at, a.row.task.seq) <
         std::tie(a.row.task.spec.priority, b.ready_at, b.row.task.seq);
}

bool TypeAllowed(const LeaseRequest& request, const std::string& type, int version) {
  if (request.task_types.empty()) return true;
  auto it = request.task_types.find(type);
  if (it == request.task_types.end()) return false;
  return std::find(it->second.begin(), it->second.end(), version) != it->second.end();
}

constexpr size_t kInsertColumns = 18;

// Batches are inserted this many rows per statement (and the rest by the next size down): one
// execution of a many-row INSERT opens its cursors and resets once instead of once per task.
// 48 rows bind 864 parameters, under the 999 that SQLite before 3.32 allowed by default.
constexpr std::array<size_t, 4> kInsertRows = {48, 16, 4, 1};
static_assert(kInsertRows[0] * kInsertColumns <= 999);

size_t RowsPerInsert(size_t left) {
  for (size_t rows : kInsertRows) {
    if (rows <= left) return rows;
  }
  return 1;
}

// The INSERT of `rows` tasks. The texts live as long as the process, so the statement cache
// finds them by address.
const char* InsertSql(size_t rows) {
  static const std::array<std::string, kInsertRows.size()> kSql = [] {
    std::array<std::string, kInsertRows.size()> sql;
    for (size_t i = 0; i < kInsertRows.size(); ++i) {
      std::string& text = sql[i];
      text =
          "INSERT INTO tasks(task_id, task_type, queue, payload_version, payload, "
          "schedule_time, timeout_ms, max_retries, priority, trace_id, idempotency_key, "
          "content_hash, status, created_at, updated_at, next_attempt_at, ready_at, owner) VALUES ";
      for (size_t r = 0; r < kInsertRows[i]; ++r) {
        text += r == 0 ? "(" : ", (";
        for (size_t c = 0; c < kInsertColumns; ++c) text += c == 0 ? "?" : ", ?";
        text += ")";
      }
      text += " ON CONFLICT(task_id) DO NOTHING";
    }
    return sql;
  }();
  for (size_t i = 0; i < kInsertRows.size(); ++i) {
    if (kInsertRows[i] == rows) return kSql[i].c_str();
  }
  throw DbError(SQLITE_INTERNAL, "no INSERT for " + std::to_string(rows) + " rows");
}

TaskStatus StatusAt(const core::TaskSpec& spec, Millis now) {
  return spec.schedule_time > now ? TaskStatus::kScheduled : TaskStatus::kPending;
}

}  // namespace

Result<std::vector<SubmitOutcome>> TaskTable::Submit(const std::vector<core::TaskSpec>& tasks,
                                                     Millis now) {
  std::vector<SubmitOutcome> outcomes;
  outcomes.reserve(tasks.size());
  for (size_t first = 0; first < tasks.size();) {
    const size_t rows = RowsPerInsert(tasks.size() - first);
    Query insert = db_.Prepare(InsertSql(rows));
    for (size_t r = 0; r < rows; ++r) {
      const core::TaskSpec& spec = tasks[first + r];
      const int at = static_cast<int>(r * kInsertColumns);
      insert.BindAt(at + 1, spec.task_id)
          .BindAt(at + 2, spec.task_type)
          .BindAt(at + 3, spec.queue)
          .BindAt(at + 4, spec.payload_version)
          .BindAt(at + 5, spec.payload)
          .BindAt(at + 6, spec.schedule_time)
          .BindAt(at + 7, spec.timeout_ms)
          .BindAt(at + 8, spec.max_retries)
          .BindAt(at + 9, spec.priority)
          .BindAt(at + 10, spec.trace_id)
          .BindAt(at + 11, spec.idempotency_key)
          .BindAt(at + 12, spec.content_hash)
          .BindAt(at + 13, StatusText(StatusAt(spec, now)))
          .BindAt(at + 14, now)
          .BindAt(at + 15, now)
          .BindAt(at + 16, spec.schedule_time)
          .BindAt(at + 17, spec.schedule_time)
          .BindAt(at + 18, spec.owner);
    }
    const int added = insert.Run();
    const bool all_new = static_cast<size_t>(added) == rows;
    // The rows the INSERT added got the seqs just below and up to the last rowid (seq is the
    // rowid, assigned as max + 1 row after row), so after a clash each row can be told new or
    // old by its seq.
    const int64_t last_seq_before =
        added == 0 ? std::numeric_limits<int64_t>::max() : db_.LastInsertRowid() - added;
    std::set<std::string_view> ids_before;  // task_ids of this INSERT's earlier rows
    for (size_t r = 0; r < rows; ++r) {
      const core::TaskSpec& spec = tasks[first + r];
      const TaskStatus status = StatusAt(spec, now);
      if (all_new) {
        counters_.Move(spec.queue, std::nullopt, status);
        outcomes.push_back({SubmitKind::kCreated, spec.task_id, status});
        continue;
      }
      Query q = db_.Prepare("SELECT seq, content_hash, status FROM tasks WHERE task_id = ?");
      q.Bind(spec.task_id);
      if (!q.Step()) throw DbError(SQLITE_INTERNAL, "submitted task_id without a row");
      if (q.Int(0) > last_seq_before && ids_before.insert(spec.task_id).second) {
        counters_.Move(spec.queue, std::nullopt, status);
        outcomes.push_back({SubmitKind::kCreated, spec.task_id, status});
        continue;
      }
      SubmitKind kind =
          q.Text(1) == spec.content_hash ? SubmitKind::kDuplicate : SubmitKind::kConflict;
      outcomes.push_back({kind, spec.task_id, ParseStatusText(q.Text(2))});
    }
    first += rows;
  }
  return outcomes;
}

Result<LeaseBatch> TaskTable::Lease(const LeaseRequest& request) {
  LeaseBatch batch;
  const Millis now = request.now;
  const auto want = static_cast<size_t>(std::max(request.max_tasks, 0));
  if (want == 0) return batch;

  // Walk each queue's ready index in lease order until `want` takeable tasks are found; tasks
  // whose key already succeeded are completed on the way. Then merge the queues by the order.
  std::vector<Candidate> chosen;
  std::vector<std::pair<int64_t, std::string>> dedupe;  // seq, queue
  std::set<std::string> keys_taken;
  std::set<std::string> queues(request.queues.begin(), request.queues.end());
  for (const std::string& queue : queues) {
    size_t found = 0;
    // Columns as MADEIRA_TASK_COLUMNS (seq 0, task_id 1, task_type 2, payload_version 4,
    // idempotency_key 11), then ready_at (30).
    Query walk = db_.Prepare("SELECT " MADEIRA_TASK_COLUMNS
                             ", ready_at FROM tasks INDEXED BY tasks_ready "
                             "WHERE status = 'pending' AND queue = ? "
                             "ORDER BY priority DESC, ready_at, seq");
    walk.Bind(queue);
    while (found < want && walk.Step()) {
      if (!request.task_types.empty() &&
          !TypeAllowed(request, walk.Text(2), static_cast<int>(walk.Int(4)))) {
        continue;
      }
      if (std::optional<std::string> key = walk.OptText(11)) {
        if (keys_taken.count(*key) != 0) continue;
        Query k = db_.Prepare("SELECT state, task_id, expires_at FROM idempotency WHERE key = ?");
        k.Bind(*key);
        if (k.Step()) {
          std::string state = k.Text(0);
          if (state == "running" && k.Text(1) != walk.Text(1)) continue;  // single flight
          if (state == "succeeded" && k.OptInt(2).value_or(0) > now) {
            dedupe.emplace_back(walk.Int(0), queue);
            continue;
          }
        }
        keys_taken.insert(std::move(*key));
      }
      chosen.push_back(Candidate{ReadTaskRow(walk), walk.Int(30), queue});
      ++found;
    }
  }
  std::sort(chosen.begin(), chosen.end(), RunsBefore);
  if (chosen.size() > want) chosen.resize(want);

  for (const auto& [seq, queue] : dedupe) {
    Query q = db_.Prepare(
        "UPDATE tasks SET status = 'succeeded', deduplicated = 1, next_attempt_at = NULL, "
        "updated_at = ? WHERE seq = ? RETURNING task_id, task_type, in_fast_retry");
    q.Bind(now, seq);
    if (!q.Step()) continue;
    batch.deduplicated.push_back(q.Text(0));
    std::string type = q.Text(1);
    bool fast = q.Int(2) != 0;
    q.Run();
    if (fast) {
      db_.Prepare("UPDATE tasks SET in_fast_retry = 0 WHERE seq = ?").Bind(seq).Run();
      counters_.AddFast(type, -1);
    }
    counters_.Move(queue, TaskStatus::kPending, TaskStatus::kSucceeded);
  }

  for (Candidate& c : chosen) {
    TaskRow& row = c.row;
    std::string lease_id = MakeLeaseId(now, row.task.seq, random_);
    const Millis timeout = row.task.spec.timeout_ms;
    // The row as this UPDATE leaves it (not RETURNING: SQLite buffers RETURNING rows in an
    // ephemeral b-tree, a pager opened and closed per statement).
    row.task.status = TaskStatus::kRunning;
    row.lease_id = lease_id;
    row.fencing_token += 1;
    row.task.attempts += 1;
    row.attempt_started_at = now;
    row.lease_deadline = now + std::min(request.lease_ms.value_or(timeout), timeout);
    row.task.next_attempt_at.reset();
    row.task.updated_at = now;
    row.attempt_worker = request.worker_id;
    const int changed =
        db_.Prepare(
               "UPDATE tasks SET status = 'running', lease_id = ?1, fencing_token = ?2, "
               "attempts = ?3, attempt_started_at = ?4, lease_deadline = ?5, "
               "next_attempt_at = NULL, updated_at = ?4, attempt_worker = ?6 WHERE seq = ?7")
            .Bind(lease_id, row.fencing_token, row.task.attempts, now, *row.lease_deadline,
                  request.worker_id, row.task.seq)
            .Run();
    if (changed != 1) throw DbError(SQLITE_INTERNAL, "leased task vanished");
    if (row.task.spec.idempotency_key) {
      db_.Prepare(
             "INSERT INTO idempotency(key, state, task_id, expires_at) "
             "VALUES(?, 'running', ?, NULL) ON CONFLICT(key) DO UPDATE SET state = 'running', "
             "task_id = excluded.task_id, expires_at = NULL")
          .Bind(*row.task.spec.idempotency_key, row.task.spec.task_id)
          .Run();
    }
    counters_.Move(c.queue, TaskStatus::kPending, TaskStatus::kRunning);
    batch.leases.push_back(store::Lease{std::move(lease_id), row.fencing_token,
                                        row.lease_deadline.value_or(now), std::move(row.task),
                                        c.ready_at});
  }
  return batch;
}

}  // namespace madeira::store::sqlite
