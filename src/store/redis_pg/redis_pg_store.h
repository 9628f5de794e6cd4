// The scale-out store: Redis (with AOF, appendfsync always) holds every live task and makes each
// transition atomic with one Lua script; PostgreSQL keeps the record (every task's latest state,
// terminal tasks, the attempt log, schemas). Any number of processes may share one Redis and one
// PostgreSQL.
//
// One store thread owns a Redis and a PostgreSQL connection. Operations are queued to it; the
// thread takes all that is queued, sends the single-script ones pipelined in one round trip and
// runs the others in order. A recorder thread with connections of its own copies what changed
// (the outbox) into PostgreSQL meanwhile, so Redis round trips never wait for a commit.
// Callbacks run after Redis acknowledged the change (so after its AOF fsync): at once for
// leases, acks and the rest; for new work (submits, events) only once the recorder copied it,
// so that what was accepted can be rebuilt from PostgreSQL — its long-polls are woken as soon as
// Redis has it. A callback must not block waiting for another store operation.
//
// After Close() (or destruction) every new operation is answered kUnavailable at once, on the
// calling thread.
#pragma once

#include <memory>
#include <string>

#include "core/clock.h"
#include "core/error.h"
#include "store/store.h"

namespace madeira::store {

struct RedisPgOptions {
  std::string redis_url;     // redis://[[user]:password@]host[:port][/db]
  std::string database_url;  // anything libpq takes: postgresql://user@host:port/db, key=value
  // Keeps several Madeira installations (or tests) apart on one Redis and PostgreSQL: keys are
  // prefixed "madeira:<namespace>:" and tables live in schema "madeira_<namespace>". Empty:
  // "madeira:" and schema "madeira". Letters, digits and underscores only.
  std::string name_space;
  // Accept a Redis without appendonly yes + appendfsync always (accepted tasks may then be lost).
  bool allow_volatile_redis = false;
  core::Millis io_timeout = 10'000;
  // Besides telling the other processes about each endpoint change (Store::SetChangeHandler),
  // every process reads them again this often, in case one such message was lost.
  core::Millis change_resync = 30'000;
  // How long Redis keeps the id claims of ended tasks (between this and twice this; config
  // `ended_claims_retention`): a resubmit of an older id is told apart by PostgreSQL, which every
  // submit then asks about its ids (one query a batch). See kRotateEnded in scripts.cc.
  core::Millis ended_claims_retention = 3'600'000;
  // The clock of that retention; null = the system clock. Not owned; outlives the store.
  const core::Clock* clock = nullptr;
};

// Connects to both, checks Redis persistence, applies PostgreSQL migrations, loads the scripts and
// starts the store thread. Errors: kInvalidField (field "redis_url"/"database_url") for a URL
// that cannot be used, kUnavailable with a message starting "redis:" or "postgresql:" otherwise.
core::Result<std::unique_ptr<Store>> OpenRedisPgStore(const RedisPgOptions& options);

// What `madeira recover` wrote back into Redis.
struct RecoverReport {
  int64_t tasks = 0;               // non-terminal tasks (pending, scheduled, retrying, dead, ...)
  int64_t running_to_pending = 0;  // ... of which were running: pending again
  int64_t ended = 0;               // id claims of succeeded/cancelled tasks
  int64_t idempotency_keys = 0;    // succeeded keys still within their ttl
  int64_t events = 0;
};

// Rebuilds Redis's state from PostgreSQL after Redis lost data (see Backend::Recover). Safe to
// run against a Redis that lost nothing: it only adds what is missing. Run it with every
// `madeira serve` of the installation stopped.
core::Result<RecoverReport> RecoverRedisPg(const RedisPgOptions& options, core::Millis now,
                                           core::Millis idempotency_ttl);

// Applies the PostgreSQL migrations only (`madeira migrate`).
core::Result<int> MigrateRedisPgSchema(const RedisPgOptions& options);

}  // namespace madeira::store
