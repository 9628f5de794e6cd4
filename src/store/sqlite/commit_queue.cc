#include "store/sqlite/commit_queue.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

namespace madeira::store::sqlite {

namespace {

core::Error SyncFailed() {
  return core::MakeError(core::ErrorCode::kUnavailable,
                         "sqlite store: fsync of the write-ahead log failed; restart the server");
}

}  // namespace

CommitQueue::CommitQueue(Db& db, TaskCounters& counters)
    : db_(db),
      counters_(counters),
      wal_path_(std::string(sqlite3_db_filename(db.handle(), "main")) + "-wal"),
      completion_thread_([this] { CompletionLoop(); }),
      thread_([this] { Loop(); }) {
  // Commits are made durable by SyncWal before anyone hears of them (see the header).
  db_.Exec("PRAGMA synchronous = NORMAL");
}

std::unique_ptr<StoreOp> CommitQueue::Push(std::unique_ptr<StoreOp> op) {
  {
    std::lock_guard lock(mu_);
    if (closing_) return op;
    queue_.push_back(std::move(op));
  }
  cv_.notify_one();
  return nullptr;
}

void CommitQueue::Close() {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
  }
  cv_.notify_one();
  if (completion_thread_.get_id() == std::this_thread::get_id()) {
    // Closed from a callback: both loops end once the queue is drained; no one can join here.
    if (thread_.joinable()) thread_.detach();
    completion_thread_.detach();
    return;
  }
  if (thread_.joinable()) thread_.join();
  if (completion_thread_.joinable()) completion_thread_.join();
  if (wal_fd_ >= 0) {
    ::close(wal_fd_);
    wal_fd_ = -1;
  }
}

void CommitQueue::Loop() {
  Batch batch;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return closing_ || !queue_.empty(); });
      if (queue_.empty()) break;  // closing and drained
      batch.swap(queue_);
    }
    RunBatch(batch);
    {
      std::lock_guard lock(done_mu_);
      done_.push_back(std::move(batch));
    }
    done_cv_.notify_one();
    batch.clear();
  }
  {
    std::lock_guard lock(done_mu_);
    store_stopped_ = true;
  }
  done_cv_.notify_one();
}

void CommitQueue::CompletionLoop() {
  std::vector<Batch> ready;
  for (;;) {
    {
      std::unique_lock lock(done_mu_);
      done_cv_.wait(lock, [this] { return store_stopped_ || !done_.empty(); });
      if (done_.empty()) return;  // the store thread stopped and everything was delivered
      ready.swap(done_);
    }
    // One fsync covers every batch committed before it started.
    const bool durable = SyncWal();
    if (!durable) sync_failed_ = true;
    for (Batch& batch : ready) {
      for (auto& op : batch) {
        if (!durable) op->Abort(SyncFailed());
        op->Deliver();
      }
    }
    ready.clear();  // ops (and the callbacks they hold) die here, not on the store thread
  }
}

bool CommitQueue::SyncWal() {
  if (wal_fd_ < 0) {
    wal_fd_ = ::open(wal_path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (wal_fd_ < 0) return false;
    // The log's directory entry must be durable too (SQLite's FULL mode syncs it on first use).
    const std::string dir = std::filesystem::path(wal_path_).parent_path().string();
    const int dir_fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) return false;
    const int rc = ::fsync(dir_fd);
    ::close(dir_fd);
    if (rc != 0) return false;
  }
  // Any descriptor of the file will do: fdatasync flushes the file's pages, whoever wrote them.
  return ::fdatasync(wal_fd_) == 0;
}

void CommitQueue::RunBatch(std::vector<std::unique_ptr<StoreOp>>& ops) {
  if (sync_failed_) {
    for (auto& op : ops) op->Abort(SyncFailed());
    return;
  }
  try {
    if (!RunOptimistic(ops)) RunWithSavepoints(ops);
  } catch (const DbError& e) {
    // Nothing of this batch is durable: every operation in it fails, and the in-memory counts
    // are re-read from what the file holds.
    try {
      if (db_.InTransaction()) db_.Exec("ROLLBACK");
      counters_.Load(db_);
    } catch (const DbError&) {
      // The connection is unusable; later batches will fail the same way and say so.
    }
    core::Error error =
        core::MakeError(core::ErrorCode::kUnavailable, std::string("sqlite store: ") + e.what());
    for (auto& op : ops) op->Abort(error);
  }
}

bool CommitQueue::RunOptimistic(std::vector<std::unique_ptr<StoreOp>>& ops) {
  sqlite3* handle = db_.handle();
  db_.Prepare("BEGIN IMMEDIATE").Run();
  for (auto& op : ops) {
    if (!op->writes()) {
      op->Run();
      continue;
    }
    counters_.BeginOp();
    const int64_t changes_before = sqlite3_total_changes64(handle);
    if (op->Run()) {
      counters_.CommitOp();
      continue;
    }
    // Almost every failure (lease lost, not found, task running...) is found before the
    // operation writes anything: then there is nothing to undo but its counter changes.
    if (db_.InTransaction() && sqlite3_total_changes64(handle) == changes_before) {
      counters_.RollbackOp();
      continue;
    }
    // It failed after changing rows, which only a savepoint could take back alone: undo the
    // whole batch (counts included) and run it again the careful way. Nothing of the first run
    // was seen by anyone (results are delivered after COMMIT), so running again is safe.
    if (db_.InTransaction()) db_.Exec("ROLLBACK");
    counters_.Load(db_);
    return false;
  }
  counters_.Flush(db_);
  db_.Prepare("COMMIT").Run();
  return true;
}

void CommitQueue::RunWithSavepoints(std::vector<std::unique_ptr<StoreOp>>& ops) {
  db_.Prepare("BEGIN IMMEDIATE").Run();
  for (auto& op : ops) {
    if (!op->writes()) {
      op->Run();
      continue;
    }
    db_.Prepare("SAVEPOINT op").Run();
    counters_.BeginOp();
    if (op->Run()) {
      db_.Prepare("RELEASE op").Run();
      counters_.CommitOp();
    } else {
      db_.Prepare("ROLLBACK TO op").Run();
      db_.Prepare("RELEASE op").Run();
      counters_.RollbackOp();
    }
  }
  counters_.Flush(db_);
  db_.Prepare("COMMIT").Run();
}

}  // namespace madeira::store::sqlite
