#include "store/sqlite/checkpointer.h"

#include <fcntl.h>
#include <unistd.h>

namespace madeira::store::sqlite {

namespace {

// Wake the checkpointer when the WAL holds this many pages (SQLite's own default threshold).
constexpr int kCheckpointPages = 1000;
// If the checkpointer cannot keep up (a PASSIVE checkpoint only copies what no reader still
// needs, and the WAL restarts from its start only once every frame was copied), the store
// thread checkpoints the rest itself past this size, so the WAL stays bounded (~64 MiB).
constexpr int kWriterCheckpointPages = 16384;

}  // namespace

Checkpointer::Checkpointer(const std::string& path, Db& writer)
    : writer_(writer),
      reader_(std::make_unique<Db>(path)),
      db_fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
  reader_->Exec("PRAGMA busy_timeout = 5000");
  // The checkpoint fsyncs the main file before it lets the WAL be reused, as with FULL.
  reader_->Exec("PRAGMA synchronous = FULL");
  thread_ = std::thread([this] { Loop(); });
  // Replaces SQLite's autocheckpoint hook on the writer (both are the one WAL hook).
  sqlite3_wal_hook(writer_.handle(), &Checkpointer::OnCommit, this);
}

void Checkpointer::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
  // Back to SQLite's default for whatever the writer still does before it closes.
  sqlite3_wal_autocheckpoint(writer_.handle(), kCheckpointPages);
  reader_.reset();
  if (db_fd_ >= 0) ::close(db_fd_);
  db_fd_ = -1;
}

int Checkpointer::OnCommit(void* self, sqlite3* db, const char* schema, int wal_pages) {
  auto* me = static_cast<Checkpointer*>(self);
  if (wal_pages < kCheckpointPages) return SQLITE_OK;
  if (me->pass_done_.exchange(false) || wal_pages >= kWriterCheckpointPages) {
    // On the store thread, after the COMMIT is durable (its callbacks wait, its data does not).
    // After a background pass this copies only what was committed since, and lets the next
    // commit rewind the WAL.
    sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
  } else {
    {
      std::lock_guard lock(me->mu_);
      me->wanted_ = true;
    }
    me->cv_.notify_one();
  }
  return SQLITE_OK;
}

void Checkpointer::Loop() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || wanted_; });
      if (stopping_) return;
      wanted_ = false;
    }
    // Errors (SQLITE_BUSY while another checkpoint runs, I/O errors) are left for the next
    // wake-up or the writer's own checkpoint: no committed data depends on this one.
    sqlite3_wal_checkpoint_v2(reader_->handle(), "main", SQLITE_CHECKPOINT_PASSIVE, nullptr,
                              nullptr);
    // A pass that did not reach the WAL's end (the writer committed meanwhile) leaves the pages
    // it copied unsynced, and the writer's catch-up checkpoint then flushed them all on the store
    // thread (5-10 ms stalls in the drain). Flush them here; durability does not depend on it.
    if (db_fd_ >= 0) ::fdatasync(db_fd_);
    pass_done_ = true;
  }
}

}  // namespace madeira::store::sqlite
