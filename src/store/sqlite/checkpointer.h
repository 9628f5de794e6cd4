// WAL checkpoints off the store thread. By default SQLite checkpoints inside the COMMIT that
// pushes the WAL past 1000 pages: the store thread then copies pages into the main file and
// fsyncs it while every queued operation (and the callbacks of the batch just committed) wait.
// Here a second connection on its own thread runs PASSIVE checkpoints instead, woken by the
// store connection's WAL hook; PASSIVE never blocks the writer. Durability is unchanged: a
// commit is durable once its WAL frames are fsynced (CommitQueue::SyncWal), checkpoint or not.
//
// A PASSIVE checkpoint alone never lets the WAL start over while the writer keeps committing
// (SQLite rewinds the WAL only when every frame in it has been copied), so the WAL would grow
// and every page lookup would search a larger WAL index. Once the background pass is done, the
// writer's next hook therefore checkpoints the few frames committed since, after which the next
// commit rewinds the WAL: the store thread copies tens of pages instead of a thousand.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "store/sqlite/db.h"

namespace madeira::store::sqlite {

class Checkpointer {
 public:
  // Opens the second connection on `path` and hooks `writer` (the store thread's connection).
  // Throws DbError.
  Checkpointer(const std::string& path, Db& writer);
  ~Checkpointer() { Stop(); }
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // Joins the thread and closes its connection; the writer checkpoints for itself again.
  // Idempotent. Call before the writer's connection closes.
  void Stop();

 private:
  static int OnCommit(void* self, sqlite3* db, const char* schema, int wal_pages);
  void Loop();

  Db& writer_;
  std::unique_ptr<Db> reader_;
  int db_fd_ = -1;  // the main file, to flush what a pass copied
  std::mutex mu_;
  std::condition_variable cv_;
  bool wanted_ = false;
  std::atomic<bool> pass_done_{false};  // a background pass finished since the writer's last
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace madeira::store::sqlite
