// Group commit: operations queued from any thread run on the one store thread, many per
// transaction, and their callbacks run after the COMMIT that made them durable — on a second,
// completion thread, in queue order, so the store thread spends its core on SQL only.
//
// The completion thread also makes commits durable: the connection commits without an fsync
// (synchronous=NORMAL) and the completion thread fdatasyncs the WAL before it delivers the
// callbacks of every batch committed so far. The store thread so runs the next batch while the
// disk syncs the last ones, instead of waiting ~1 ms per commit. Nothing is answered before the
// fsync that covers it, and SQLite's WAL recovery stops at the first frame that did not reach
// the disk, so a later batch never survives a crash without the earlier ones it read.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "store/sqlite/counters.h"
#include "store/sqlite/db.h"

namespace madeira::store::sqlite {

// One queued operation: runs inside the batch transaction, then delivers its result.
class StoreOp {
 public:
  explicit StoreOp(bool writes) : writes_(writes) {}
  virtual ~StoreOp() = default;
  // Runs the operation and keeps its result; false when the result is an error (so the
  // operation's writes are rolled back to its savepoint).
  virtual bool Run() = 0;
  // Replaces the result: the batch's transaction could not commit.
  virtual void Abort(const core::Error& error) = 0;
  // Invokes the callback with the result.
  virtual void Deliver() = 0;
  // Read-only operations skip the savepoint.
  bool writes() const { return writes_; }

 private:
  bool writes_;
};

class CommitQueue {
 public:
  CommitQueue(Db& db, TaskCounters& counters);
  ~CommitQueue() { Close(); }
  CommitQueue(const CommitQueue&) = delete;
  CommitQueue& operator=(const CommitQueue&) = delete;

  // Queues the operation; hands it back when the queue is closed.
  std::unique_ptr<StoreOp> Push(std::unique_ptr<StoreOp> op);
  // Runs what is queued, delivers every result, then stops both threads. Idempotent. Called
  // from a callback (on the completion thread) it only stops taking new work.
  void Close();

 private:
  using Batch = std::vector<std::unique_ptr<StoreOp>>;
  void Loop();
  void CompletionLoop();
  void RunBatch(std::vector<std::unique_ptr<StoreOp>>& ops);
  // fdatasync of the WAL (opened on first use, its directory synced then); false on failure.
  bool SyncWal();
  // The batch in one transaction without a savepoint per operation: a savepoint makes SQLite
  // copy every page an operation first touches into the statement journal, which cost about a
  // tenth of the store thread. False (everything rolled back, counts reloaded) when an
  // operation failed after it had written; the batch must then run with savepoints.
  bool RunOptimistic(std::vector<std::unique_ptr<StoreOp>>& ops);
  // Each write operation inside its own savepoint, so a failed one is undone alone.
  void RunWithSavepoints(std::vector<std::unique_ptr<StoreOp>>& ops);

  Db& db_;
  TaskCounters& counters_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<StoreOp>> queue_;
  bool closing_ = false;

  std::mutex done_mu_;
  std::condition_variable done_cv_;
  std::vector<Batch> done_;  // committed batches waiting for their callbacks
  bool store_stopped_ = false;

  const std::string wal_path_;  // <db>-wal; SQLite keeps the file while a connection is open
  int wal_fd_ = -1;             // completion thread only
  // A failed fsync leaves what was committed of unknown durability: from then on every batch
  // fails (kUnavailable) until the process restarts and SQLite recovers the file.
  std::atomic<bool> sync_failed_{false};

  std::thread completion_thread_;
  std::thread thread_;  // last: starts after everything it uses
};

}  // namespace madeira::store::sqlite
