#include "store/sqlite/counters.h"

#include "store/sqlite/rows.h"

namespace madeira::store::sqlite {

void TaskCounters::Load(Db& db) {
  depths_.clear();
  dirty_.clear();
  fast_.clear();
  journal_.clear();
  {
    Query q = db.Prepare("SELECT queue, status, count FROM queue_counts");
    while (q.Step()) depths_[{q.Text(0), ParseStatusText(q.Text(1))}] = q.Int(2);
  }
  Query q = db.Prepare(
      "SELECT task_type, COUNT(*) FROM tasks WHERE in_fast_retry = 1 GROUP BY task_type");
  while (q.Step()) fast_[q.Text(0)] = q.Int(1);
}

void TaskCounters::Apply(const Change& c) {
  if (c.fast) {
    fast_[c.key.first] += c.delta;
  } else {
    depths_[c.key] += c.delta;
    dirty_.insert(c.key);
  }
}

void TaskCounters::Move(const std::string& queue, std::optional<core::TaskStatus> from,
                        std::optional<core::TaskStatus> to) {
  if (from == to) return;
  if (from) {
    Change c{false, {queue, *from}, -1};
    Apply(c);
    journal_.push_back(std::move(c));
  }
  if (to) {
    Change c{false, {queue, *to}, 1};
    Apply(c);
    journal_.push_back(std::move(c));
  }
}

void TaskCounters::AddFast(const std::string& task_type, int delta) {
  Change c{true, {task_type, core::TaskStatus::kPending}, delta};
  Apply(c);
  journal_.push_back(std::move(c));
}

int TaskCounters::Fast(const std::string& task_type) const {
  auto it = fast_.find(task_type);
  return it == fast_.end() ? 0 : static_cast<int>(it->second);
}

void TaskCounters::RollbackOp() {
  for (auto it = journal_.rbegin(); it != journal_.rend(); ++it) {
    Change undo = *it;
    undo.delta = -undo.delta;
    Apply(undo);
  }
  journal_.clear();
}

void TaskCounters::Flush(Db& db) {
  for (const DepthKey& key : dirty_) {
    Query q = db.Prepare(
        "INSERT INTO queue_counts(queue, status, count) VALUES(?, ?, ?) "
        "ON CONFLICT(queue, status) DO UPDATE SET count = excluded.count");
    q.Bind(key.first, StatusText(key.second), depths_[key]).Run();
  }
  dirty_.clear();
}

std::vector<DepthRow> TaskCounters::Depths() const {
  std::vector<DepthRow> rows;
  rows.reserve(depths_.size());
  for (const auto& [key, count] : depths_) rows.push_back({key.first, key.second, count});
  return rows;
}

}  // namespace madeira::store::sqlite
