// The Lua scripts that make every Redis-side transition atomic. Each script takes the key
// prefix as ARGV[1] ("prefix\norigin": origin names the calling process in the wake-ups the
// script publishes) and builds its keys from it (see docs/architecture.md for the layout).
#pragma once

#include <array>
#include <string>
#include <vector>

namespace madeira::store::redis_pg {

enum class Script {
  kSubmit,
  kLease,
  kAck,
  kLeaseView,
  kFinishAttempt,
  kExtend,
  kExpired,
  kPromote,
  kNextWakeup,
  kGet,
  kCancel,
  kReplay,
  kCancelDead,
  kEvent,
  kGetEvent,
  kRestore,
  kTakeTokens,  // rate_bucket.cc
  kRotateEnded,
};
inline constexpr int kScriptCount = 18;

// What kLease reads of a task it leases (HMGET), in this order, and answers by position
// (LeaseReply): a value each, not a name and a value for each field HGETALL would give. Every
// field of a task's hash that is not only in its packed spec: the scripts' own, and what a replay
// edits over the spec (payload, maxr); the first three are what a lease with a type filter reads
// of every candidate.
inline constexpr std::array<const char*, 24> kLeaseFields = {
    "type",  "pv",      "ikey",  "timeout", "token",  "attempts", "ver",      "status",
    "retry", "updated", "next",  "lerr",    "result", "dedup",    "fastused", "infast",
    "queue", "prio",    "chash", "ready",   "seq",    "payload",  "maxr",     "spec"};

// The records the scripts write most (a lease's and an ack's) go to the outbox packed: each the
// msgpack values (cmsgpack.pack) of its kind ("state" or "attempt") and then these fields, in this
// order, with no names; nil or false = none. A field `m` of an entry holds such records one after
// another; task_codec.cc reads them back under these names (AppendPackedRecords). Both lists are
// also the names the JSON records use. A state record's fields after the task id are the hash
// fields that change after a task is made (STATE_FIELDS in Lua); '' is none there too ('next'
// after a lease: cheaper than an HDEL).
inline constexpr std::array<const char*, 12> kStateRecordFields = {
    "id",      "ver",    "status", "retry", "attempts", "updated",
    "next",    "lerr",   "result", "dedup", "fastused", "infast"};
inline constexpr std::array<const char*, 9> kAttemptRecordFields = {
    "task_id", "attempt", "worker", "started", "finished", "outcome", "error", "http", "excerpt"};

// The full source of a script (the shared helpers prepended).
const std::string& ScriptSource(Script script);

}  // namespace madeira::store::redis_pg
