#include "store/sqlite/commit_queue.h"

namespace madeira::store::sqlite {

CommitQueue::CommitQueue(Db& db, TaskCounters& counters)
    : db_(db),
      counters_(counters),
      completion_thread_([this] { CompletionLoop(); }),
      thread_([this] { Loop(); }) {}

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
    for (Batch& batch : ready) {
      for (auto& op : batch) op->Deliver();
    }
    ready.clear();  // ops (and the callbacks they hold) die here, not on the store thread
  }
}

void CommitQueue::RunBatch(std::vector<std::unique_ptr<StoreOp>>& ops) {
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
