#include "store/sqlite/schema.h"

#include <string>

namespace madeira::store::sqlite {

namespace {

constexpr int kSchemaVersion = 4;

// Times are INTEGER ms since the epoch; status is the wire name so the file reads well in the
// sqlite3 shell. seq (the rowid) is submit order: FIFO tie-break and search cursor.
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE tasks(
  seq INTEGER PRIMARY KEY,
  task_id TEXT NOT NULL UNIQUE,
  task_type TEXT NOT NULL,
  queue TEXT NOT NULL,
  payload_version INTEGER NOT NULL,
  payload TEXT NOT NULL,
  schedule_time INTEGER NOT NULL,
  timeout_ms INTEGER NOT NULL,
  max_retries INTEGER NOT NULL,
  priority INTEGER NOT NULL,
  trace_id TEXT NOT NULL,
  idempotency_key TEXT,
  content_hash TEXT NOT NULL,
  status TEXT NOT NULL,
  retry_count INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  next_attempt_at INTEGER,
  ready_at INTEGER NOT NULL,
  last_error TEXT,
  result TEXT,
  deduplicated INTEGER NOT NULL DEFAULT 0,
  fast_retries_used INTEGER NOT NULL DEFAULT 0,
  in_fast_retry INTEGER NOT NULL DEFAULT 0,
  lease_id TEXT,
  fencing_token INTEGER NOT NULL DEFAULT 0,
  lease_deadline INTEGER,
  attempt_started_at INTEGER
);
-- The ready queue: Lease walks it in exactly this order, so no sort is ever needed.
CREATE INDEX tasks_ready ON tasks(queue, priority DESC, ready_at, seq) WHERE status = 'pending';
CREATE INDEX tasks_due ON tasks(next_attempt_at) WHERE status IN ('scheduled', 'retrying');
CREATE INDEX tasks_deadline ON tasks(lease_deadline) WHERE status = 'running';
-- lease_id is cleared when an attempt ends, so this index holds only the leases in flight.
CREATE UNIQUE INDEX tasks_lease ON tasks(lease_id) WHERE lease_id IS NOT NULL;
CREATE INDEX tasks_fast ON tasks(task_type) WHERE in_fast_retry = 1;
CREATE INDEX tasks_trace ON tasks(trace_id);
CREATE INDEX tasks_status ON tasks(status, seq);

CREATE TABLE attempts(
  task_seq INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  worker_id TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  finished_at INTEGER,
  outcome TEXT,
  error TEXT,
  http_status INTEGER,
  response_excerpt TEXT,
  PRIMARY KEY(task_seq, attempt)
) WITHOUT ROWID;

CREATE TABLE schemas(
  task_type TEXT NOT NULL,
  version INTEGER NOT NULL,
  schema TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY(task_type, version)
) WITHOUT ROWID;

-- state 'running' (task_id holds the lease) or 'succeeded' (until expires_at).
CREATE TABLE idempotency(
  key TEXT PRIMARY KEY,
  state TEXT NOT NULL,
  task_id TEXT NOT NULL,
  expires_at INTEGER
) WITHOUT ROWID;

-- Task counts per (queue, status), written with every commit, so that opening a store with
-- millions of tasks does not have to scan them to answer Depths().
CREATE TABLE queue_counts(
  queue TEXT NOT NULL,
  status TEXT NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY(queue, status)
) WITHOUT ROWID;
)sql";

// v2, written for the drain rate (fewer b-tree writes per leased and acked task):
// - The running attempt lives on its task row (attempt_started_at, attempt_worker); its
//   attempts row is written once, when the attempt ends. Attempts() adds the open one.
// - No index on lease_id: a lease id names its task's seq (MakeLeaseId in rows.h), so
// ack/fail/extend
//   find the row by rowid and compare the whole id. Keeping a unique index in step cost two
//   index writes per task.
// - tasks_status leaves running tasks out: a lease and its ack then cost one write in it, not
//   four. Running tasks are found through tasks_deadline (which holds exactly them); queries
//   that want this index repeat its WHERE term so the planner may use it.
constexpr const char* kMigrateV2 = R"sql(
ALTER TABLE tasks ADD COLUMN attempt_worker TEXT;
UPDATE tasks SET attempt_worker = (
  SELECT worker_id FROM attempts WHERE task_seq = tasks.seq AND attempt = tasks.attempts)
WHERE status = 'running';
DELETE FROM attempts WHERE finished_at IS NULL;
DROP INDEX tasks_lease;
DROP INDEX tasks_status;
CREATE INDEX tasks_status ON tasks(status, seq) WHERE status <> 'running';
)sql";

// v3, webhooks: endpoints and the events fanned out to them. seq (the rowid) is the order of
// arrival, stable across VACUUM because it is declared: ListEndpoints walks it, GetEvent breaks
// received_at ties with it, and a delivery names its event by it (as an attempt names its task).
// A replaced endpoint keeps its seq, so it keeps its place in the list.
constexpr const char* kMigrateV3 = R"sql(
CREATE TABLE endpoints(
  seq INTEGER PRIMARY KEY,
  endpoint_id TEXT NOT NULL UNIQUE,
  config TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);

CREATE TABLE events(
  seq INTEGER PRIMARY KEY,
  source TEXT NOT NULL,
  event_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  payload TEXT NOT NULL,
  trace_id TEXT NOT NULL,
  target_uri TEXT,
  received_at INTEGER NOT NULL,
  UNIQUE(source, event_id)
);
-- GetEvent without a source: the newest received of an id used by several sources.
CREATE INDEX events_by_id ON events(event_id, received_at);

-- position: the order the deliveries were made in (a redelivery appends).
CREATE TABLE event_deliveries(
  event_seq INTEGER NOT NULL,
  position INTEGER NOT NULL,
  endpoint_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  PRIMARY KEY(event_seq, position)
) WITHOUT ROWID;
)sql";

// v4: the name of the token that submitted a task (TaskSpec::owner); "" for tasks from before.
constexpr const char* kMigrateV4 = R"sql(
ALTER TABLE tasks ADD COLUMN owner TEXT NOT NULL DEFAULT '';
)sql";

}  // namespace

void PrepareDatabase(Db& db, int64_t cache_kib) {
  db.Exec("PRAGMA busy_timeout = 5000");
  db.Exec("PRAGMA journal_mode = WAL");
  // FULL: a commit is fsynced before its callbacks run ("accepted means durable").
  db.Exec("PRAGMA synchronous = FULL");
  db.Exec("PRAGMA temp_store = MEMORY");
  db.Exec("PRAGMA cache_size = -" + std::to_string(cache_kib));
  db.Exec("PRAGMA foreign_keys = OFF");
  // Reads of the main file map its pages instead of copying them through read(); the WAL is
  // still read the ordinary way. 256 MiB of address space, not memory.
  db.Exec("PRAGMA mmap_size = 268435456");

  int64_t version = db.QueryInt("PRAGMA user_version").value_or(0);
  if (version > kSchemaVersion) {
    throw DbError(SQLITE_ERROR, "database schema version " + std::to_string(version) +
                                    " is newer than this Madeira supports");
  }
  if (version == kSchemaVersion) return;
  // A new file gets v1 and then every migration, so there is one path to the current layout.
  db.Exec("BEGIN IMMEDIATE");
  try {
    if (version < 1) db.Exec(kSchemaV1);
    if (version < 2) db.Exec(kMigrateV2);
    if (version < 3) db.Exec(kMigrateV3);
    if (version < 4) db.Exec(kMigrateV4);
    db.Exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
    db.Exec("COMMIT");
  } catch (const DbError&) {
    db.Exec("ROLLBACK");
    throw;
  }
}

}  // namespace madeira::store::sqlite
