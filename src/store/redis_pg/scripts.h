// The Lua scripts that make every Redis-side transition atomic. Each script takes the key
// prefix as ARGV[1] ("prefix\norigin": origin names the calling process in the wake-ups the
// script publishes) and builds its keys from it (see docs/architecture.md for the layout).
#pragma once

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

// The full source of a script (the shared helpers prepended).
const std::string& ScriptSource(Script script);

}  // namespace madeira::store::redis_pg
