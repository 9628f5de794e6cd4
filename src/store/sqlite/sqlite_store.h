// The embedded store: one SQLite file, <data_dir>/madeira.db, in WAL mode; every commit is
// fsynced before its callbacks run (commit_queue.h: the completion thread syncs the WAL).
//
// One store thread owns the connection. Every operation is queued to it; the thread takes all
// that is queued, runs it in one transaction and commits — group commit, at most one fsync per
// batch (one covers every batch committed while the previous one ran).
// An operation that fails after writing makes the batch run again with a savepoint per
// operation, so one failing operation never undoes the others.
// Callbacks run on the store's completion thread (never the thread that runs SQL), after the
// COMMIT that made their changes durable, in the order the operations were queued. A callback
// must not block waiting for another store operation (it would hold up every later callback);
// post the work elsewhere instead.
//
// After Close() (or destruction) every new operation is answered kUnavailable at once, on the
// calling thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/error.h"
#include "store/store.h"

namespace madeira::store {

struct SqliteOptions {
  // SQLite page cache. The ready queue is walked through its index, so a modest cache serves a
  // million pending tasks; raise it for large search workloads. Kept small because every commit
  // after a b-tree split that renumbered pages (most commits while draining) walks the whole
  // cache (pcache1TruncateUnsafe): at 32 MiB that walk was ~9% of the store thread. Reads of the
  // main file's first 256 MiB go through mmap (schema.cc) and do not need this cache.
  int64_t cache_kib = 8 * 1024;
};

// Opens (creating the directory and the file when missing, migrating an older schema) the store
// at <data_dir>/madeira.db and starts its thread. kUnavailable when the file cannot be opened
// or was written by a newer Madeira.
core::Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& data_dir,
                                                     SqliteOptions options = {});

}  // namespace madeira::store
