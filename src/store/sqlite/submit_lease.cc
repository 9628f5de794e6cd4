// Submit and Lease: the hot path, written for batches.
#include <algorithm>
#include <set>
#include <tuple>

#include "store/sqlite/task_table.h"

namespace madeira::store::sqlite {

namespace {

using core::TaskStatus;

// What the ready-index walk needs to choose a task, without reading its payload.
struct Candidate {
  int64_t seq;
  int priority;
  Millis ready_at;
  std::string queue;
  std::optional<std::string> idempotency_key;
};

bool RunsBefore(const Candidate& a, const Candidate& b) {
  return std::tie(b.priority, a.ready_at, a.seq) < std::tie(a.priority, b.ready_at, b.seq);
}

bool TypeAllowed(const LeaseRequest& request, const std::string& type, int version) {
  if (request.task_types.empty()) return true;
  auto it = request.task_types.find(type);
  if (it == request.task_types.end()) return false;
  return std::find(it->second.begin(), it->second.end(), version) != it->second.end();
}

}  // namespace

Result<std::vector<SubmitOutcome>> TaskTable::Submit(const std::vector<core::TaskSpec>& tasks,
                                                     Millis now) {
  std::vector<SubmitOutcome> outcomes;
  outcomes.reserve(tasks.size());
  for (const core::TaskSpec& spec : tasks) {
    TaskStatus status = spec.schedule_time > now ? TaskStatus::kScheduled : TaskStatus::kPending;
    // Insert first and look only on a clash: the common case (a new id) costs one statement.
    int inserted =
        db_.Prepare(
               "INSERT INTO tasks(task_id, task_type, queue, payload_version, payload, "
               "schedule_time, timeout_ms, max_retries, priority, trace_id, idempotency_key, "
               "content_hash, status, created_at, updated_at, next_attempt_at, ready_at) "
               "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
               "ON CONFLICT(task_id) DO NOTHING")
            .Bind(spec.task_id, spec.task_type, spec.queue, spec.payload_version, spec.payload,
                  spec.schedule_time, spec.timeout_ms, spec.max_retries, spec.priority,
                  spec.trace_id, spec.idempotency_key, spec.content_hash, StatusText(status), now,
                  now, spec.schedule_time, spec.schedule_time)
            .Run();
    if (inserted == 1) {
      counters_.Move(spec.queue, std::nullopt, status);
      outcomes.push_back({SubmitKind::kCreated, spec.task_id, status});
      continue;
    }
    Query q = db_.Prepare("SELECT content_hash, status FROM tasks WHERE task_id = ?");
    q.Bind(spec.task_id);
    if (!q.Step()) throw DbError(SQLITE_INTERNAL, "task_id clash without a row");
    SubmitKind kind =
        q.Text(0) == spec.content_hash ? SubmitKind::kDuplicate : SubmitKind::kConflict;
    outcomes.push_back({kind, spec.task_id, ParseStatusText(q.Text(1))});
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
    Query walk = db_.Prepare(
        "SELECT seq, priority, ready_at, task_type, payload_version, idempotency_key, task_id "
        "FROM tasks INDEXED BY tasks_ready WHERE status = 'pending' AND queue = ? "
        "ORDER BY priority DESC, ready_at, seq");
    walk.Bind(queue);
    while (found < want && walk.Step()) {
      if (!TypeAllowed(request, walk.Text(3), static_cast<int>(walk.Int(4)))) continue;
      Candidate c{walk.Int(0), static_cast<int>(walk.Int(1)), walk.Int(2), queue, walk.OptText(5)};
      if (c.idempotency_key) {
        const std::string& key = *c.idempotency_key;
        if (keys_taken.count(key) != 0) continue;
        Query k = db_.Prepare("SELECT state, task_id, expires_at FROM idempotency WHERE key = ?");
        k.Bind(key);
        if (k.Step()) {
          std::string state = k.Text(0);
          if (state == "running" && k.Text(1) != walk.Text(6)) continue;  // single flight
          if (state == "succeeded" && k.OptInt(2).value_or(0) > now) {
            dedupe.emplace_back(c.seq, queue);
            continue;
          }
        }
        keys_taken.insert(key);
      }
      chosen.push_back(std::move(c));
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

  for (const Candidate& c : chosen) {
    std::string lease_id = MakeLeaseId(now, c.seq, random_);
    // Not UPDATE ... RETURNING: SQLite buffers RETURNING rows in an ephemeral b-tree (a pager
    // opened and closed per statement), which costs more than a second seek by rowid.
    db_.Prepare(
           "UPDATE tasks SET status = 'running', lease_id = ?1, fencing_token = fencing_token + 1, "
           "attempts = attempts + 1, attempt_started_at = ?2, "
           "lease_deadline = ?2 + MIN(COALESCE(?3, timeout_ms), timeout_ms), "
           "next_attempt_at = NULL, updated_at = ?2, attempt_worker = ?5 WHERE seq = ?4")
        .Bind(lease_id, now, request.lease_ms, c.seq, request.worker_id)
        .Run();
    Query q = db_.Prepare("SELECT " MADEIRA_TASK_COLUMNS " FROM tasks WHERE seq = ?");
    q.Bind(c.seq);
    if (!q.Step()) throw DbError(SQLITE_INTERNAL, "leased task vanished");
    TaskRow row = ReadTaskRow(q);
    if (c.idempotency_key) {
      db_.Prepare(
             "INSERT INTO idempotency(key, state, task_id, expires_at) "
             "VALUES(?, 'running', ?, NULL) ON CONFLICT(key) DO UPDATE SET state = 'running', "
             "task_id = excluded.task_id, expires_at = NULL")
          .Bind(*c.idempotency_key, row.task.spec.task_id)
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
