// The token buckets the processes sharing one Redis draw from (Store::TakeTokens), so that a
// webhook endpoint's rate limit holds across processes. One script call each, pipelined by the
// store like the other single-script operations.
#pragma once

#include "store/redis_pg/backend.h"

namespace madeira::store::redis_pg {

// The Lua body of Script::kTakeTokens (scripts.cc wraps it like every other script).
extern const char* const kTakeTokensLua;

RedisCall TakeTokensCall(const TokenRequest& request);
Result<TokenGrant> TakeTokensReply(const RedisReply& r);

}  // namespace madeira::store::redis_pg
