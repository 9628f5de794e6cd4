// Key: P{bucket}:rate   string   the bucket's "theoretical arrival time" (GCRA), in microseconds
// of the bucket's clock: the bucket is full when it is in the past, so the key expires then and
// idle endpoints leave nothing behind. The deliverer names a bucket after the endpoint's queue,
// so the key shares the queue's hash tag (one Cluster slot with the queue's keys).
//
// Clock: Redis's TIME unless the caller passes `now` (tests). Every process then compares against
// one clock, so a process whose clock runs ahead cannot take the tokens of one whose clock lags
// (with the callers' clocks, the one ahead would always find the bucket refilled first), and the
// answer's wait is a duration, which each caller adds to its own clock.
#include "store/redis_pg/rate_bucket.h"

#include <algorithm>
#include <cstdio>

namespace madeira::store::redis_pg {

// GCRA: a token takes `interval` to earn, and the j-th token of a call is due at
// tat + (j - burst) intervals (tat: the stored time, or now if that is past). The call takes the
// tokens due by now + max_wait (a reservation: the caller uses them when the last one is due,
// and using a token after it is due never exceeds the rate), moving tat by one interval each.
// Reserving saves a round trip per refusal and keeps grants back to back under contention. A
// call that takes nothing writes nothing.
const char* const kTakeTokensLua = R"LUA(
local key = P .. '{' .. ARGV[2] .. '}:rate'
local interval = 1000000 / tonumber(ARGV[3])
local burst = tonumber(ARGV[4])
local wanted = tonumber(ARGV[5])
local max_wait = tonumber(ARGV[6]) * 1000
local now
local given = opt(ARGV[7])
if given then
  now = tonumber(given) * 1000
else
  -- Redis < 7 replicates a script that read TIME only as its effects.
  if redis.replicate_commands then redis.replicate_commands() end
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local tat = tonumber(redis.call('GET', key) or '0')
if tat < now then tat = now end
local room = math.floor((now + max_wait - tat) / interval + burst + 1e-6)
local granted = math.min(wanted, math.max(room, 0))
local wait
if granted > 0 then
  tat = tat + granted * interval
  redis.call('SET', key, s(math.floor(tat + 0.5)), 'PX',
             s(math.max(1, math.ceil((tat - now) / 1000))))
  wait = tat - burst * interval - now  -- when the last one taken is due
else
  wait = tat + (1 - burst) * interval - now  -- when the next one is due
end
return {granted, math.max(0, math.ceil(wait / 1000))}
)LUA";

RedisCall TakeTokensCall(const TokenRequest& request) {
  char rate[32];
  std::snprintf(rate, sizeof rate, "%.17g", request.per_second);
  return {
      Script::kTakeTokens,
      {request.bucket, rate, Num(std::max(request.burst, 1)), Num(std::max(request.wanted, 0)),
       Num(std::max<Millis>(request.max_wait_ms, 0)), request.now ? "+" + Num(*request.now) : "-"}};
}

Result<TokenGrant> TakeTokensReply(const RedisReply& r) {
  if (r.IsError()) return ScriptError(r);
  TokenGrant grant;
  grant.granted = static_cast<int>(r.elements.at(0).integer);
  grant.wait_ms = r.elements.at(1).integer;
  return grant;
}

}  // namespace madeira::store::redis_pg
