// Task counts kept in memory so Depths() and the fast-retry limit never scan the tasks table.
// Changes made by an operation are journaled, so an operation that rolls back to its savepoint
// takes its counter changes back too.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/task.h"
#include "store/sqlite/db.h"
#include "store/store.h"

namespace madeira::store::sqlite {

class TaskCounters {
 public:
  // Reads queue_counts and the fast-retry index. Throws DbError.
  void Load(Db& db);

  // One task of `queue` moved from one status to another (nullopt = did not exist).
  void Move(const std::string& queue, std::optional<core::TaskStatus> from,
            std::optional<core::TaskStatus> to);
  // One more (+1) or one fewer (-1) task of this type is in fast retry.
  void AddFast(const std::string& task_type, int delta);
  int Fast(const std::string& task_type) const;

  // Journal control around one operation.
  void BeginOp() { journal_.clear(); }
  void CommitOp() { journal_.clear(); }
  void RollbackOp();

  // Writes the counts changed since the last flush into queue_counts (inside the batch's
  // transaction, just before COMMIT).
  void Flush(Db& db);

  std::vector<DepthRow> Depths() const;

 private:
  using DepthKey = std::pair<std::string, core::TaskStatus>;
  struct Change {
    bool fast;
    DepthKey key;  // for fast changes, key.first is the task_type
    int64_t delta;
  };
  void Apply(const Change& c);

  std::map<DepthKey, int64_t> depths_;
  std::set<DepthKey> dirty_;
  std::map<std::string, int64_t> fast_;
  std::vector<Change> journal_;
};

}  // namespace madeira::store::sqlite
