// The Lua scripts that make every Redis-side transition atomic. Each script takes the key
// prefix as ARGV[1] ("prefix\norigin": origin names the calling process in the wake-ups the
// script publishes) and builds its keys from it (see docs/architecture.md for the layout).
#pragma once

#include <array>
#include <initializer_list>
#include <string>
#include <string_view>
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

// A live task's hash in Redis holds two values: "spec", what it was made with (PackedSpec in
// task_codec.cc, never changed), and "st", these fields packed with msgpack (cmsgpack.pack of
// their values in this order, nil where the task has none): everything the scripts read or
// change, and what a replay edits over the spec (payload, maxr, pv). A transition reads one
// value and writes one instead of a field each: Redis pays for every value it moves between a
// hash, Lua, the AOF and a reply far more than for its bytes (docs/architecture.md, "Task
// layout"). Hashes written field by field (by an older Madeira) are read whole and packed by
// their next change; the names are the fields they had.
inline constexpr std::array<const char*, 27> kLiveFields = {
    "type",   "queue",    "pv",      "timeout", "prio",   "chash",    "ikey",   "seq",     "ready",
    "status", "ver",      "updated", "next",    "token",  "attempts", "retry",  "lerr",    "result",
    "dedup",  "fastused", "infast",  "lease",   "astart", "deadline", "worker", "payload", "maxr"};
// Three scripts read or write st by position rather than as a table by name (live_of /
// pack_live): a submit writes a new task's first 13 values and 14 nils, a lease reads a pending
// task's timeout and key and rewrites its values 10-15 and 22-25, copying the others as bytes
// (spliced), and an ack reads the first 25 into locals. They need the fields where they are.
constexpr bool LiveFieldsAt(size_t from, std::initializer_list<std::string_view> names) {
  for (std::string_view name : names) {
    if (name != kLiveFields[from++]) return false;
  }
  return true;
}
static_assert(kLiveFields.size() == 27 &&
                  LiveFieldsAt(0, {"type",   "queue",   "pv",     "timeout",  "prio",
                                   "chash",  "ikey",    "seq",    "ready",    "status",
                                   "ver",    "updated", "next",   "token",    "attempts",
                                   "retry",  "lerr",    "result", "dedup",    "fastused",
                                   "infast", "lease",   "astart", "deadline", "worker"}),
              "the submit, lease and ack scripts read and write these st values by position");

// The records the scripts write most (a failure's; an ack's as one, kAckedRecordFields below) go to
// the outbox packed: each the msgpack values (cmsgpack.pack) of its kind ("state" or "attempt") and
// then these fields, in this order, with no names; nil or false = none. A field `m` of an entry
// holds such records one after another; task_codec.cc reads them back under these names
// (AppendPackedRecords). Both lists are also the names the JSON records use. A state record's
// fields after the task id are the hash fields that change after a task is made (record_state_of in
// Lua); '' is none there too ('next' after a lease: cheaper than an HDEL). A lease's state record
// is made by its process from the lease's reply instead (StateRecordOf), under the same names.
inline constexpr std::array<const char*, 12> kStateRecordFields = {
    "id",   "ver",  "status", "retry", "attempts", "updated",
    "next", "lerr", "result", "dedup", "fastused", "infast"};
inline constexpr std::array<const char*, 9> kAttemptRecordFields = {
    "task_id", "attempt", "worker", "started", "finished", "outcome", "error", "http", "excerpt"};
// An ack's two records as one ("acked"): the attempt that succeeded and the task's state after
// it, the values they share packed once and the ones an ack fixes (status and outcome
// succeeded, no next, error or fast retry) not at all. task_codec.cc reads it back as the
// attempt record and then the state record. One pack of 13 values instead of two of 22: each
// value costs cmsgpack.pack a Lua string of its own (docs/benchmarks.md, twenty-first round).
inline constexpr std::array<const char*, 13> kAckedRecordFields = {
    "id",      "ver",    "attempts", "worker", "started", "finished", "http",
    "excerpt", "result", "retry",    "lerr",   "dedup",   "fastused"};

// The full source of a script (the shared helpers prepended).
const std::string& ScriptSource(Script script);

}  // namespace madeira::store::redis_pg
