// Key layout (P = the key prefix, "madeira:" in production; q = a queue):
//   P{q}:st          hash   the queue's live tasks by id: what the scripts read or change of
//                           each (state, lease, fencing token, ver, ...), packed (kLiveFields,
//                           scripts.h)
//   P{q}:spec        hash   the queue's live tasks by id: the rest of each, as it was made
//                           (PackedSpec)
//   P{q}:task:<id>   hash   a live task an older Madeira (or its madeira recover) made: "st" and
//                           "spec" as above, or its fields one by one (see read_task_at)
//   P{q}:ready       zset   pending tasks, all score 0, member = sort key + id, so ZRANGE walks
//                           priority DESC, ready time, submit order (see member())
//   P{q}:due         zset   scheduled/retrying ids scored by due time
//   P{q}:leases      zset   running ids scored by lease deadline
//   P ids / ended    hash   task_id -> queue while live; -> "status\tcontent_hash" once ended
//   P ended:prev     hash   the generation of id claims before P ended (see kRotateEnded);
//                           older claims are only in PostgreSQL
//   P ended:gen      hash   started (ms) of P ended, closed = the outbox id P ended:prev was
//                           closed at, checked = 1 once a generation was closed (from then on
//                           submits look their ids up in PostgreSQL too)
//   P lease:<id>     string lease id -> "queue\ttask_id": only for lease ids made before they
//                           named their task (<random hex>~<queue>~<task id>, see lease_target)
//   P idem:<key>     hash   idempotency key state (running by task / succeeded until exp;
//                           then gone an hour later, by PEXPIRE)
//   P seq, queues, depth, fast   submit counter, queue names, per-queue counts, fast retries
//   P schemas        string the version of the stored payload schemas: a random id, set anew by
//                           every PutSchema once PostgreSQL has the schema (see kSubmit)
//   P outbox         stream every changed task and finished attempt, for the PostgreSQL record
//                           (an entry: up to 64 records, as field j a JSON array, as field m
//                           packed ones, or as t and s a new task; see record()); a lease's
//                           change is not in it: its process copies it (Recorder::Leased)
//   P event:<source>\t<event_id>   hash + :deliveries list   a received event and its tasks
//   P eventids:<event_id>           zset   the sources that sent this id, by time received
//   P{b}:rate        string   a rate limit's token bucket shared by the processes (rate_bucket.cc)
// Optional arguments are passed as "+value" or "-" (absent). Numbers that are written back are
// formatted with %d: Lua's default number format would turn large ones into exponents.
#include "store/redis_pg/scripts.h"

#include <array>
#include <span>
#include <string_view>

#include "store/redis_pg/rate_bucket.h"

namespace madeira::store::redis_pg {

namespace {

constexpr const char* kHelpers = R"LUA(
local P, ORIGIN = ARGV[1], ''
do
  local nl = string.find(P, '\n', 1, true)
  if nl then
    ORIGIN = string.sub(P, nl + 1)
    P = string.sub(P, 1, nl - 1)
  end
end
-- Keys of the id claims (P ids, P ended, P ended:prev) made once a call: a script that reads or
-- writes them once a task would otherwise make (and Redis's Lua hash) the same string every time.
local IDS_KEY, ENDED_KEY, PREV_ENDED_KEY = P .. 'ids', P .. 'ended', P .. 'ended:prev'
local WOKEN = {}
local function s(n) return string.format('%d', n) end
-- Numbers held as text, and counters (nil = 0) plus one, remembered for the call: the tasks one
-- call touches mostly share their times and counts, and a table lookup costs Redis's Lua a
-- fraction of tonumber's strtod and string.format's sprintf (docs/benchmarks.md, twenty-first
-- round).
local NUMBERS = {}
local function num(v)
  local n = NUMBERS[v]
  if not n then
    n = tonumber(v)
    NUMBERS[v] = n
  end
  return n
end
local PLUS1 = {}
local function plus1(v)
  v = v or '0'
  local r = PLUS1[v]
  if not r then
    r = s(tonumber(v) + 1)
    PLUS1[v] = r
  end
  return r
end
local PLUS = string.byte('+')  -- a byte compared makes no string, string.sub(v, 1, 1) does
local function opt(v)
  if v == nil or string.byte(v) ~= PLUS then return nil end
  return string.sub(v, 2)
end
-- The head cmsgpack.pack writes before a string v (fixstr, str 8, str 16 or 32), made once a length
-- a call: a script that writes a packed value with a few values changed, or of values it knows
-- are strings or nil, writes head(v) .. v (nil: '\192') in one concatenation, where cmsgpack.pack
-- would make a Lua string of every value and then join them (docs/benchmarks.md, twenty-fifth
-- round).
local HEADS = {}
local NILS_AFTER_NEXT = string.rep('\192', 14)  -- a new task's st after its 13th value
local function head(v)
  local n = #v
  local h = HEADS[n]
  if not h then
    if n < 32 then
      h = string.char(0xa0 + n)
    elseif n < 256 then
      h = '\217' .. string.char(n)
    else
      h = string.sub(cmsgpack.pack(v), 1, n < 65536 and 3 or 5)
    end
    HEADS[n] = h
  end
  return h
end
-- Queue keys, made once a script call: every concatenation makes (and interns) a new string.
local QKEYS = {}
local function qkey(q, name)
  local keys = QKEYS[q]
  if not keys then
    keys = {}
    QKEYS[q] = keys
  end
  local k = keys[name]
  if not k then
    k = P .. '{' .. q .. '}:' .. name
    keys[name] = k
  end
  return k
end
local function tkey(q, id) return P .. '{' .. q .. '}:task:' .. id end
local function split2(v)
  local i = string.find(v, '\t', 1, true)
  return string.sub(v, 1, i - 1), string.sub(v, i + 1)
end
-- Writes gathered while a script runs and made once at its end (flush_gathered, in the order
-- first used): every redis.call costs Redis more than the work it does, so one call carries the
-- changes of all the tasks a script touches. Only for keys the script does not read again.
local GATHERED, GATHER_ORDER = {}, {}  -- GATHERED[cmd][key or ''] = slot
local function later(cmd, key, a, b)
  local by_key = GATHERED[cmd]
  if not by_key then
    by_key = {}
    GATHERED[cmd] = by_key
  end
  local slot = by_key[key or '']
  if not slot then
    slot = {cmd = cmd, key = key, args = {}}
    by_key[key or ''] = slot
    GATHER_ORDER[#GATHER_ORDER + 1] = slot
  end
  local args = slot.args
  args[#args + 1] = a
  if b ~= nil then args[#args + 1] = b end
end
-- Per-queue counts by state (P depth), summed while the script runs.
local DEPTH = {}  -- DEPTH[q][state] = change
local function depth(q, from, to)
  local d = DEPTH[q]
  if not d then
    d = {}
    DEPTH[q] = d
  end
  if from then d[from] = (d[from] or 0) - 1 end
  if to then d[to] = (d[to] or 0) + 1 end
end
-- The submit counter (P seq), read once and written back once.
local SEQ, SEQ_READ = 0, false
local function next_seq()
  if not SEQ_READ then
    SEQ, SEQ_READ = tonumber(redis.call('GET', P .. 'seq') or '0'), true
  end
  SEQ = SEQ + 1
  return SEQ
end
local QUEUES_ADDED = {}
local function add_queue(q)
  if QUEUES_ADDED[q] then return end
  QUEUES_ADDED[q] = true
  redis.call('SADD', P .. 'queues', q)
end
-- The records for PostgreSQL (P outbox): each a flat {name, value, ...} table starting with
-- 'kind', a packed one (a string: state and attempt records, see kStateRecordFields), or a new
-- task's {meta = "seq\tstatus", spec = its packed spec}. An entry holds up to RECORDS_PER_ENTRY
-- of them, in order: runs of flat ones as one JSON array in a field 'j', runs of packed ones
-- one after another in a field 'm', a new task as the fields 't' (meta) and 's' (spec). Packed
-- records cost the script no table and no names (cmsgpack packs the values in C): 3 % of Redis's
-- instructions in a lease, 7 % in an ack fewer than JSON ones (docs/benchmarks.md, fifteenth
-- round). One value for many records, not two a field:
-- Redis pays for every value of an entry (the listpack, the AOF, the XREADGROUP reply) far more
-- than for its bytes, and cjson packs them in C. But a spec goes as the argument it came as:
-- Redis's Lua hashes every byte of every string it makes, so joining specs costs more than a
-- value each.
local RECORDS, RECORDS_PER_ENTRY = {}, 64
-- The outbox entries this call wrote, in order. A submit answers them after its per-task
-- replies (RETURNS_ENTRIES): its process copies the new tasks into PostgreSQL from what it sent
-- and the reply, and passes over these entries when it reads them back (Recorder).
local ENTRY_IDS, RETURNS_ENTRIES = {}, false
local function outbox_entry()
  if #RECORDS > 0 then
    -- A submit's entry names its process first ('o'): that process copies it from what it sent.
    local args, run, packed = RETURNS_ENTRIES and {'o', ORIGIN} or {}, {}, {}
    local function end_runs()
      if #run > 0 then
        args[#args + 1], args[#args + 2] = 'j', cjson.encode(run)
        run = {}
      end
      if #packed > 0 then
        args[#args + 1], args[#args + 2] = 'm', table.concat(packed)
        packed = {}
      end
    end
    for _, r in ipairs(RECORDS) do
      if type(r) == 'string' then
        if #run > 0 then end_runs() end
        packed[#packed + 1] = r
      elseif r.spec then
        end_runs()
        args[#args + 1], args[#args + 2], args[#args + 3], args[#args + 4] = 't', r.meta, 's',
          r.spec
      else
        if #packed > 0 then end_runs() end
        run[#run + 1] = r
      end
    end
    end_runs()
    ENTRY_IDS[#ENTRY_IDS + 1] = redis.call('XADD', P .. 'outbox', '*', unpack(args))
  end
  RECORDS = {}
end
local function record(rec)
  RECORDS[#RECORDS + 1] = rec
  if #RECORDS >= RECORDS_PER_ENTRY then outbox_entry() end
end
-- A record of `kind` whose fields are a flat hash (a task's or an event's), after `head`.
local function record_hash(kind, flat, head)
  local o = {'kind', kind}
  for i = 1, #head do o[2 + i] = head[i] end
  local n = #o
  for i = 1, #flat do o[n + i] = flat[i] end
  record(o)
end
local CHUNK = 4000  -- even (pairs stay whole), and well under Lua's unpack limit
local function flush_gathered()
  for _, slot in ipairs(GATHER_ORDER) do
    local args = slot.args
    for from = 1, #args, CHUNK do
      local to = math.min(from + CHUNK - 1, #args)
      if slot.key then
        redis.call(slot.cmd, slot.key, unpack(args, from, to))
      else
        redis.call(slot.cmd, unpack(args, from, to))
      end
    end
  end
  for q, d in pairs(DEPTH) do
    for state, n in pairs(d) do
      if n ~= 0 then redis.call('HINCRBY', P .. 'depth', q .. '\t' .. state, n) end
    end
  end
  if SEQ_READ then redis.call('SET', P .. 'seq', string.format('%d', SEQ)) end
  outbox_entry()
end
-- The head of a ready member (priority, ready time), made again only when a task's differ from
-- the last one's: a call's tasks come in runs that share both, and each number formatted costs
-- an sprintf.
-- The submit order goes in as its text (s(seq)) after the zeros that make it 16 digits, as %016d
-- would: a string.format a task cost a submit ~2 % of Redis's instructions.
local HEAD_PRIO, HEAD_READY, HEAD = nil, nil, nil
local ZEROS = {}  -- ZEROS[n] = n zeros, made once a length a call
local function zeros(n)
  if n <= 0 then return '' end
  local z = ZEROS[n]
  if not z then
    z = string.rep('0', n)
    ZEROS[n] = z
  end
  return z
end
local function member(prio, ready, seq_text, id)
  if ready < 0 then ready = 0 end
  if prio ~= HEAD_PRIO or ready ~= HEAD_READY then
    HEAD_PRIO, HEAD_READY, HEAD = prio, ready, string.format('%04d%016d', 1000 - prio, ready)
  end
  return HEAD .. zeros(16 - #seq_text) .. seq_text .. id
end
local function member_of(h, id)
  return member(tonumber(h.prio), tonumber(h.ready), s(tonumber(h.seq)), id)
end
-- A succeeded idempotency key's hash expires (PEXPIRE) this long after its own expiry: the
-- Redis expiry only frees the memory; whether the key still holds is 'exp' against the
-- engine's clock, and the slack covers processes whose clocks disagree with Redis's.
local IDEM_SLACK_MS = 3600000
-- Counts work made ready per queue; published once at the end of the script (P wake) so the
-- long-polls parked in other processes wake. n = how many tasks became ready (or 1 for a
-- released idempotency key: its skipped siblings may be taken now).
local function wake(q, n) WOKEN[q] = (WOKEN[q] or 0) + (n or 1) end
local function ready_add(q, m)
  later('ZADD', qkey(q, 'ready'), 0, m)
  wake(q)
end
-- The earliest due time this script made (a delayed task, a retry, a lease deadline), told to
-- the other processes in the same message ('@due' is no queue name): the one that runs timers
-- may not be the one that took the submit or the lease (--role, or a process that died).
local DUE = nil
local function due_at(ms)
  ms = tonumber(ms)
  if DUE == nil or ms < DUE then DUE = ms end
end
local function publish_wakes()
  local parts = {}
  for q, n in pairs(WOKEN) do parts[#parts + 1] = q .. '\t' .. s(n) end
  if DUE ~= nil then parts[#parts + 1] = '@due\t' .. s(DUE) end
  if #parts > 0 then
    redis.call('PUBLISH', P .. 'wake', ORIGIN .. '\n' .. table.concat(parts, '\n'))
  end
end
)LUA";

// kHelpers goes on after the task's packed fields (LiveFieldsLua, from kLiveFields) and the
// state records (StateRecordLua, from kStateRecordFields).
constexpr const char* kHelpersAfterStateRecords = R"LUA(
-- A task hash without "st" (written field by field by an older Madeira) read whole, its names
-- as they are and marked BY_FIELD (write_task packs it); nil when there is no hash.
local function read_by_field(k)
  local flat = redis.call('HGETALL', k)
  if #flat == 0 then return nil end
  local h = {}
  for i = 1, #flat, 2 do h[flat[i]] = flat[i + 1] end
  h[BY_FIELD] = true
  return h
end
-- A live task's fields by name (kLiveFields; nil where it has none), or nil when it has no
-- hash.
local function read_task(k)
  local v = redis.call('HGET', k, 'st')
  if v then return live_of(v) end
  return read_by_field(k)
end
-- Writes h's fields back as the task's "st"; returns that value.
local function write_task(k, h)
  local st = pack_live(h)
  if h[BY_FIELD] then
    redis.call('HDEL', k, unpack(LIVE_FIELDS))
    h[BY_FIELD] = nil
  end
  redis.call('HSET', k, 'st', st)
  return st
end
-- Where a live task is: a task made by this Madeira is a field of its queue's two hashes,
-- P{q}:st and P{q}:spec (field = task id), so that a lease or an ack reads and writes all of its
-- tasks in one command each, where a hash a task cost Redis a command a task (docs/benchmarks.md,
-- thirty-second round); so is a task `madeira recover` writes back. A task an older Madeira
-- made (or an older `madeira recover` wrote back) keeps a hash of its own (tkey) until it ends:
-- its table is marked OWN_KEY.
local OWN_KEY = {}
-- The st of the tasks this call made: their HSETs are gathered (flush_gathered), so they are read
-- from here. No script changes or ends a task it made in the same call (the gathered HSET would
-- come after the change).
local NEW_ST = {}
local function read_task_at(q, id)
  local st = NEW_ST[id] or redis.call('HGET', qkey(q, 'st'), id)
  if st then return live_of(st) end
  local h = read_task(tkey(q, id))
  if h then h[OWN_KEY] = true end
  return h
end
local function write_task_at(q, id, h)
  if h[OWN_KEY] then return write_task(tkey(q, id), h) end
  local st = pack_live(h)
  redis.call('HSET', qkey(q, 'st'), id, st)
  return st
end
-- The task's values as its hash holds them (HGETALL's flat answer): st and spec, or the fields of
-- its own hash. `st`: h packed already (write_task_at's answer), if the caller has it.
local function task_flat(q, id, h, st)
  if h[OWN_KEY] then return redis.call('HGETALL', tkey(q, id)) end
  return {'st', st or pack_live(h), 'spec', redis.call('HGET', qkey(q, 'spec'), id)}
end
local function drop_task(q, id, h)
  if h[OWN_KEY] then
    redis.call('DEL', tkey(q, id))
  else
    redis.call('HDEL', qkey(q, 'st'), id)
    redis.call('HDEL', qkey(q, 'spec'), id)
  end
end
-- The task's full record for PostgreSQL (P outbox, kind task), once h is written: when it is
-- edited or brought back. Its fields by name: the live ones (h), then `rest`, the others as its
-- hash holds them, flat (its spec, and for a hash written field by field the rest).
local function snapshot_of(h, rest)
  local flat = {}
  for _, name in ipairs(LIVE_FIELDS) do
    if h[name] ~= nil then
      flat[#flat + 1] = name
      flat[#flat + 1] = h[name]
    end
  end
  for i = 1, #rest, 2 do
    if rest[i] ~= 'st' then
      flat[#flat + 1] = rest[i]
      flat[#flat + 1] = rest[i + 1]
    end
  end
  record_hash('task', flat, {})
  return flat
end
local function snapshot(k, h) return snapshot_of(h, redis.call('HGETALL', k)) end
local function snapshot_at(q, id, h)
  if h[OWN_KEY] then return snapshot(tkey(q, id), h) end
  return snapshot_of(h, {'spec', redis.call('HGET', qkey(q, 'spec'), id)})
end
local function touch(h, now)
  h.ver, h.updated = plus1(h.ver), now
end
-- The task ends: its state to the record, its claim to P ended, its hash gone. Returns the hash
-- as it was last (for the caller's answer).
local function finish(q, id, h, status)
  record_state_of(h, id)
  if h[OWN_KEY] then write_task(tkey(q, id), h) end
  local flat = task_flat(q, id, h)
  redis.call('HSET', ENDED_KEY, id, status .. '\t' .. h.chash)
  redis.call('HDEL', IDS_KEY, id)
  drop_task(q, id, h)
  return flat
end
-- A lease id is <128 random bits in hex>~<queue>~<task id> ('~' is in neither name), so the
-- task is found without a key per lease. Ids without '~' were made before: P lease:<id>.
local function lease_target(lease_id)
  local a = string.find(lease_id, '~', 1, true)
  if not a then
    local v = redis.call('GET', P .. 'lease:' .. lease_id)
    if not v then return nil end
    return split2(v)
  end
  local b = string.find(lease_id, '~', a + 1, true)
  if not b then return nil end
  return string.sub(lease_id, a + 1, b - 1), string.sub(lease_id, b + 1)
end
local function drop_lease_key(lease_id)
  if not string.find(lease_id, '~', 1, true) then redis.call('DEL', P .. 'lease:' .. lease_id) end
end
local function find_lease(lease_id)
  local q, id = lease_target(lease_id)
  if not q then return nil end
  local h = read_task_at(q, id)
  if not h or h.lease ~= lease_id or h.status ~= 'running' then return nil end
  return q, id, h
end
local function end_lease(q, id, h, lease_id)
  redis.call('ZREM', qkey(q, 'leases'), id)
  drop_lease_key(lease_id)
  h.lease, h.deadline = nil, nil
end
local function release_key(h, id)
  if not h.ikey then return end
  local ik = P .. 'idem:' .. h.ikey
  local st = redis.call('HMGET', ik, 'state', 'task')
  if st[1] == 'running' and st[2] == id then
    redis.call('DEL', ik)
    wake(h.queue)
  end
end
local function clear_fast(h)
  if h.infast == '1' then
    redis.call('HINCRBY', P .. 'fast', h.type, -1)
    h.infast = '0'
  end
end
-- The finished attempt's record, from the task held as a table (its attempts, worker, astart),
-- packed in kAttemptRecordFields' order (scripts.h); the last value in parentheses so that it
-- stays one value (nil) when the argument is absent.
local function attempt_record_of(h, id, now, outcome, err, http, excerpt)
  record(cmsgpack.pack('attempt', id, h.attempts, h.worker or '', h.astart or now, now, outcome,
                       opt(err), opt(http), (opt(excerpt))))
end
-- The queue of a live task (P ids), counting those this script created (their P ids entries
-- are gathered).
local NEW_IDS = {}
local function live_queue(id) return NEW_IDS[id] or redis.call('HGET', IDS_KEY, id) end
-- A new task from TASK_ARGS arguments at a[i]: id type queue pv sched timeout prio ikey? chash
-- spec (AppendTaskArgs in ops.cc). Returns its status and its submit order (seq, as text).
local TASK_ARGS = 10
local function create_task(now, a, i)
  local id, q, sched, prio = a[i], a[i + 2], a[i + 4], a[i + 6]
  local ikey, spec = opt(a[i + 7]), a[i + 9]
  local seq = next_seq()
  local status = 'pending'
  if num(sched) > num(now) then status = 'scheduled' end
  -- "st" holds what the scripts read or change; the rest of the task is only in its packed
  -- spec (PackedSpec in task_codec.cc), whose own values these override. Counters and flags
  -- that start at 0 (retry attempts dedup fastused infast token) are absent until set.
  -- Packed as pack_live would (values 1-13, then 14 nils: LiveFieldsAt in scripts.h), by one
  -- concatenation: a table of the 13 and cmsgpack.pack's string a value cost a submit ~9 % of
  -- its instructions (docs/benchmarks.md, twenty-fifth round).
  local seq_text, ty, pv, timeout, chash = s(seq), a[i + 1], a[i + 3], a[i + 5], a[i + 8]
  local nh = head(now)
  local st = head(ty) .. ty .. head(q) .. q .. head(pv) .. pv .. head(timeout) ..
    timeout .. head(prio) .. prio .. head(chash) .. chash .. (ikey and head(ikey) or '\192') ..
    (ikey or '') .. head(seq_text) .. seq_text .. head(sched) .. sched .. head(status) .. status ..
    head('1') .. '1' .. nh .. now .. head(sched) .. sched .. NILS_AFTER_NEXT
  later('HSET', qkey(q, 'st'), id, st)
  later('HSET', qkey(q, 'spec'), id, spec)
  NEW_ST[id] = st
  record({meta = seq_text .. '\t' .. status, spec = spec})
  NEW_IDS[id] = q
  later('HSET', IDS_KEY, id, q)
  add_queue(q)
  if status == 'scheduled' then
    later('ZADD', qkey(q, 'due'), sched, id)
    due_at(sched)
  else
    ready_add(q, member(num(prio), num(sched), seq_text, id))
  end
  depth(q, nil, status)
  return status, seq_text
end
-- The claim of an ended task ("status\tcontent_hash") while Redis still holds it (its
-- generation or the one before), else false.
local HAS_PREV_ENDED = nil
local function ended_claim(id)
  local v = redis.call('HGET', ENDED_KEY, id)
  if v then return v end
  if HAS_PREV_ENDED == nil then
    HAS_PREV_ENDED = redis.call('EXISTS', PREV_ENDED_KEY) == 1
  end
  if HAS_PREV_ENDED then return redis.call('HGET', PREV_ENDED_KEY, id) end
  return false
end
local function status_of(id)
  local q = live_queue(id)
  if q then
    local h = read_task_at(q, id)
    return h and h.status or false
  end
  local ended = ended_claim(id)
  if ended then
    local st = split2(ended)
    return st
  end
  return 'unknown'
end
local function event_key(source, event_id) return P .. 'event:' .. source .. '\t' .. event_id end
-- An event leaves Redis `ttl` ms after its last change (PEXPIRE; PostgreSQL keeps it, and the
-- store brings it back from there when it is read, resent or redelivered).
local function expire_event(ek, event_id, ttl)
  for _, k in ipairs({ek, ek .. ':deliveries', P .. 'eventids:' .. event_id}) do
    redis.call('PEXPIRE', k, ttl)
  end
end
-- An event as stored: its fields and its deliveries {endpoint, task_id, status}, in order.
local function stored_event(ek)
  local ds = {}
  for _, d in ipairs(redis.call('LRANGE', ek .. ':deliveries', 0, -1)) do
    local ep, id = split2(d)
    ds[#ds + 1] = {ep, id, status_of(id)}
  end
  return {redis.call('HGETALL', ek), ds}
end
-- The event's record for PostgreSQL (P outbox, kind event): its fields and every delivery
-- ("endpoint\ttask_id" lines), so `madeira recover` can bring it back.
local function event_snapshot(ek)
  local ds = redis.call('LRANGE', ek .. ':deliveries', 0, -1)
  record_hash('event', redis.call('HGETALL', ek),
              {'deliveries', table.concat(ds, '\n'), 'ndeliveries', s(#ds)})
end
)LUA";

// ARGV: P, then 3 + TASK_ARGS per task: now, known, schemas, then create_task's. Three values
// per task, in order, in one flat array (the store sends the submits queued together as one
// call; a task made is 'created', status, seq), then the ids of the outbox entries written.
// `schemas` is the version of the schema set (P schemas, "0" while there is none) its payload
// was validated against, or "" (not checked): another version is answered 'schemas' and nothing
// made, for the caller to validate again (a schema put through another process). `known` is
// what PostgreSQL said of the id: "+status\tcontent_hash" (it has the task), "0" (it has not),
// "n" (the server just made the id: no claim of it can exist, so Redis is not asked either),
// "-" (not asked: the caller believes no id claim has left Redis). An unasked id Redis does
// not know is answered 'recheck' (and nothing made) once a claim may have left (P ended:gen
// checked): the caller asks PostgreSQL and submits again.
constexpr const char* kSubmit = R"LUA(
local checked, schemas = nil, nil
local function submit(now, known, seen, i)
  if seen ~= '' then
    if schemas == nil then schemas = redis.call('GET', P .. 'schemas') or '0' end
    if seen ~= schemas then return 'schemas', 'pending', '' end
  end
  local id, chash = ARGV[i], ARGV[i + 8]
  local live, ended = nil, nil
  if known ~= 'n' then
    live = live_queue(id)
    ended = (not live) and ended_claim(id)
  end
  if not live and not ended and string.sub(known, 1, 1) == '+' then ended = string.sub(known, 2) end
  if live then
    local h = read_task_at(live, id) or {}
    return h.chash == chash and 'duplicate' or 'conflict', h.status or '', ''
  end
  if ended then
    local st, ch = split2(ended)
    return ch == chash and 'duplicate' or 'conflict', st, ''
  end
  if known == '-' and checked == nil then
    checked = redis.call('HGET', P .. 'ended:gen', 'checked') == '1'
  end
  if known == '-' and checked then return 'recheck', '', '' end
  local status, seq_text = create_task(now, ARGV, i)
  return 'created', status, seq_text
end
RETURNS_ENTRIES = true
-- Three values a task (kind, status, seq; kSubmitReplyValues in ops.h), in one flat array: a
-- table a task cost the reply more than its values.
local out = {}
for j = 2, #ARGV, 3 + TASK_ARGS do
  local n = #out
  out[n + 1], out[n + 2], out[n + 3] = submit(ARGV[j], ARGV[j + 1], ARGV[j + 2], j + 3)
end
return out
)LUA";

// ARGV: P, now, mode ("new" | "add"), source, event_id, type, payload, trace, target?, received,
// n, then n x (endpoint_id + the TASK_ARGS task arguments of create_task), then known, ttl_ms.
// The event and its delivery tasks are written together or not at all: a taken task_id refuses
// the whole call. known: "0" when the caller brought the event back from PostgreSQL if it was
// there, "-" when it did not ask (it believes nothing has left Redis yet): a new event is then
// answered 'recheck' once something may have (P ended:gen checked).
constexpr const char* kEvent = R"LUA(
local now, mode, source, event_id = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local known, ttl = ARGV[#ARGV - 1], ARGV[#ARGV]
local ek = event_key(source, event_id)
local exists = redis.call('EXISTS', ek) == 1
if mode == 'new' and exists then return {'duplicate', stored_event(ek)} end
if mode == 'add' and not exists then return {'notfound'} end
if mode == 'new' and known == '-' and redis.call('HGET', P .. 'ended:gen', 'checked') == '1' then
  return {'recheck'}
end
local n = tonumber(ARGV[11])
local seen = {}
for j = 0, n - 1 do
  local id = ARGV[13 + j * (1 + TASK_ARGS)]
  if seen[id] or live_queue(id) or ended_claim(id) then
    return {'conflict', id}
  end
  seen[id] = true
end
for j = 0, n - 1 do
  local base = 12 + j * (1 + TASK_ARGS)
  create_task(now, ARGV, base + 1)
  redis.call('RPUSH', ek .. ':deliveries', ARGV[base] .. '\t' .. ARGV[base + 1])
end
if mode == 'new' then
  local seq = redis.call('INCR', P .. 'eventseq')
  redis.call('HSET', ek, 'source', source, 'event_id', event_id, 'type', ARGV[6],
             'payload', ARGV[7], 'trace', ARGV[8], 'received', ARGV[10], 'seq', s(seq))
  local target = opt(ARGV[9])
  if target then redis.call('HSET', ek, 'target', target) end
  -- Without a source, GetEvent takes the one received last (then the one stored last).
  redis.call('ZADD', P .. 'eventids:' .. event_id, 0,
             string.format('%016d%016d', tonumber(ARGV[10]), seq) .. source)
end
expire_event(ek, event_id, ttl)
event_snapshot(ek)
return {'ok', stored_event(ek)}
)LUA";

// ARGV: P, event_id, source?
constexpr const char* kGetEvent = R"LUA(
local source = opt(ARGV[3])
if not source then
  local m = redis.call('ZRANGE', P .. 'eventids:' .. ARGV[2], -1, -1)
  if #m == 0 then return false end
  source = string.sub(m[1], 33)
end
local ek = event_key(source, ARGV[2])
if redis.call('EXISTS', ek) == 0 then return false end
return stored_event(ek)
)LUA";

// ARGV: P, now, max, lease_ms?, worker, nq, queues..., nf, "type\tversion"..., lease ids (max)
constexpr const char* kLease = R"LUA(
-- A task as a lease reads it. With a type filter: its fields (read_task), the spec read once it is
-- taken; a hash without a packed spec (written field by field by an older Madeira, or by its
-- madeira recover) is answered whole (HGETALL) once leased.
-- Without a filter: its st looked into only as far as a lease needs (spliced, below), not made a
-- table. Answers st, spec, the byte offset past st's ninth value, the timeout and the idempotency
-- key; nil for a hash without st (written field by field, or none).
local unpack_limit = cmsgpack.unpack_limit
local function peek_for_lease(k)
  local v = redis.call('HMGET', k, 'st', 'spec')
  local st = v[1]
  if not st then return nil end
  local o9, _, _, _, timeout, _, _, ikey = unpack_limit(st, 9)
  return st, v[2], o9, timeout, ikey
end
-- A pending task's st as a lease leaves it, made from the old one's bytes: its values 10-15
-- (status, ver, updated, next, token, attempts) and 22-25 (lease, astart, deadline, worker; the
-- positions static_assert'ed in scripts.h) written anew and the rest copied as they are. The
-- same bytes as live_of, the changes and pack_live would make, at about half of Redis's time: a
-- table of 27 fields made and 27 values packed one Lua string each cost more than the lease's
-- other work on a task (docs/benchmarks.md, twenty-fifth round).
local function spliced(st, o9, lease_id, now, deadline, worker)
  local o15, _, ver, _, _, token, attempts = unpack_limit(st, 6, o9)
  local o21 = unpack_limit(st, 6, o15)
  local o25 = unpack_limit(st, 4, o21)
  local ver1, token1, attempts1, nh = plus1(ver), plus1(token), plus1(attempts), head(now)
  return string.sub(st, 1, o9) .. '\167running' .. head(ver1) .. ver1 .. nh .. now .. '\160' ..
    head(token1) .. token1 .. head(attempts1) .. attempts1 .. string.sub(st, o15 + 1, o21) ..
    head(lease_id) .. lease_id .. nh .. now .. head(deadline) .. deadline .. head(worker) ..
    worker .. string.sub(st, o25 + 1)
end
local now = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local lease_ms = opt(ARGV[4])
local worker = ARGV[5]
local nq = tonumber(ARGV[6])
local queues, seen = {}, {}
for j = 1, nq do
  local q = ARGV[6 + j]
  if not seen[q] then
    seen[q] = true
    queues[#queues + 1] = q
  end
end
table.sort(queues)
local pos = 7 + nq
local nf = tonumber(ARGV[pos])
local allowed = nil
if nf > 0 then
  allowed = {}
  for j = 1, nf do allowed[ARGV[pos + j]] = true end
end
pos = pos + nf + 1
-- A lease's deadline (text) for a task's timeout: now + the shorter of it and lease_ms, once a
-- timeout a call (one call's tasks mostly share theirs).
local DEADLINES = {}
local function lease_deadline(timeout)
  local d = DEADLINES[timeout]
  if not d then
    local span = tonumber(timeout)
    if lease_ms and tonumber(lease_ms) < span then span = tonumber(lease_ms) end
    d = s(now + span)
    DEADLINES[timeout] = d
    due_at(d)
  end
  return d
end
local chosen, dedupe, taken = {}, {}, {}
for _, q in ipairs(queues) do
  local rk, stk, speck = qkey(q, 'ready'), qkey(q, 'st'), qkey(q, 'spec')
  local found, start = 0, 0
  while found < want do
    -- Without a filter nearly every candidate is taken: as many as are wanted, their st and spec
    -- read in one command each.
    local span = 100
    if allowed == nil and want - found < span then span = want - found end
    local ms = redis.call('ZRANGE', rk, start, start + span - 1)
    if #ms == 0 then break end
    start = start + #ms
    local ids, sts, specs = {}, nil, nil
    for j, m in ipairs(ms) do ids[j] = string.sub(m, 37) end
    if allowed == nil then
      sts = redis.call('HMGET', stk, unpack(ids))
      specs = redis.call('HMGET', speck, unpack(ids))
    end
    for j, m in ipairs(ms) do
      if found >= want then break end
      local id = ids[j]
      -- A task with no idempotency key is not made a table (peek_for_lease).
      local k = nil  -- its own hash (OWN_KEY), if it has one
      local h, spec, st, o9, timeout, ikey = nil, nil, nil, nil, nil, nil
      if allowed == nil then
        st = sts[j]
        if st then
          spec = specs[j]
          local _
          o9, _, _, _, timeout, _, _, ikey = unpack_limit(st, 9)
          if ikey then h, st = live_of(st), nil end
        else
          k = tkey(q, id)
          st, spec, o9, timeout, ikey = peek_for_lease(k)
          if not st then  -- no st: the hash whole (or none)
            h = read_by_field(k)
            spec = h and (h.spec or false)
          elseif ikey then  -- the key's checks and changes read the task whole
            h, st = live_of(st), nil
          end
          if h then h[OWN_KEY] = true end
        end
      else
        h = read_task_at(q, id)
        if h and h[OWN_KEY] then k = tkey(q, id) end
      end
      if h then ikey = h.ikey end
      if (h or st) and (allowed == nil or allowed[h.type .. '\t' .. h.pv]) then
        local take = true
        if ikey then
          if taken[ikey] then
            take = false
          else
            local st = redis.call('HMGET', P .. 'idem:' .. ikey, 'state', 'task', 'exp')
            if st[1] == 'running' and st[2] ~= id then
              take = false
            elseif st[1] == 'succeeded' and tonumber(st[3]) > now then
              dedupe[#dedupe + 1] = {q, id, m, h}
              take = false
            end
            if take then taken[ikey] = true end
          end
        end
        if take then
          chosen[#chosen + 1] = {m, q, id, h, spec, st, o9, timeout, k}
          found = found + 1
        end
      end
    end
  end
end
-- Across queues, the best first (one queue's ZRANGE is in that order already).
if #queues > 1 then table.sort(chosen, function(a, b) return a[1] < b[1] end) end
local deduped = {}
for _, d in ipairs(dedupe) do
  local q, id, m, h = d[1], d[2], d[3], d[4]
  redis.call('ZREM', qkey(q, 'ready'), m)
  clear_fast(h)
  h.status, h.dedup, h.next = 'succeeded', '1', nil
  touch(h, ARGV[2])
  depth(q, 'pending', 'succeeded')
  finish(q, id, h, 'succeeded')
  deduped[#deduped + 1] = id
end
local leases = {}
for j = 1, math.min(#chosen, want) do
  -- The key as the first pass made it: made again, Redis's Lua would hash its bytes again.
  local m, q, id, k = chosen[j][1], chosen[j][2], chosen[j][3], chosen[j][9]
  local lease_id = ARGV[pos + j - 1] .. '~' .. q .. '~' .. id
  local h, spec, st = chosen[j][4], chosen[j][5], chosen[j][6]
  if spec == nil then  -- read with a type filter: the spec is read only for what is taken
    if h and h[BY_FIELD] then
      spec = h.spec or false
    elseif k then
      spec = redis.call('HGET', k, 'spec')
    else
      spec = redis.call('HGET', qkey(q, 'spec'), id)
    end
  end
  local deadline
  if st then  -- peeked (peek_for_lease): no idempotency key, a packed st
    deadline = lease_deadline(chosen[j][8])
    st = spliced(st, chosen[j][7], lease_id, ARGV[2], deadline, worker)
    if k then
      redis.call('HSET', k, 'st', st)
    else
      later('HSET', qkey(q, 'st'), id, st)
    end
  else
    deadline = lease_deadline(h.timeout)
    h.token, h.attempts = plus1(h.token), plus1(h.attempts)
    h.status, h.lease, h.astart, h.deadline, h.worker = 'running', lease_id, ARGV[2], deadline,
      worker
    h.ver, h.updated, h.next = plus1(h.ver), ARGV[2], ''
    st = write_task_at(q, id, h)
    if h.ikey then
      redis.call('DEL', P .. 'idem:' .. h.ikey)
      redis.call('HSET', P .. 'idem:' .. h.ikey, 'state', 'running', 'task', id)
    end
  end
  later('ZREM', qkey(q, 'ready'), m)
  later('ZADD', qkey(q, 'leases'), deadline, id)
  depth(q, 'pending', 'running')
  -- No state record: the leasing process copies the lease's change into PostgreSQL from this
  -- reply (Recorder::Leased), which spares Redis a tenth of a lease's instructions (packing
  -- the record, the outbox entry, its AOF copy and its reading back; docs/benchmarks.md,
  -- twentieth round).
  -- The task as leased (LeaseReply in ops.cc), three values a lease in one flat array (a
  -- table a lease cost the reply more than its values): the lease id, its "st" as written and
  -- its spec, or for a hash without a spec the hash whole (an array) and 'flat'.
  local n = #leases
  if spec then
    leases[n + 1], leases[n + 2], leases[n + 3] = lease_id, st, spec
  else
    leases[n + 1], leases[n + 2], leases[n + 3] = lease_id, redis.call('HGETALL', k), 'flat'
  end
end
return {leases, deduped}
)LUA";

// ARGV: P, then 6 per ack: lease_id now ttl result? http? excerpt?. One value per ack, in
// order, in one flat array (the store sends the acks queued together as one call, and slices
// the answer: a table per ack cost the reply more than its values).
constexpr const char* kAck = R"LUA(
local acked = {}  -- the tasks acked by this call: their hashes go at its end
-- The answer: one value an ack (kAckReplyValues in ops.h), in order, in one flat array: 'lost', or
-- what the engine reads of the acked task joined by tabs (AckReply in ops.cc). Redis turns each
-- value of an answer into its reply at a cost of its own, well above one short string's.
local out = {}
local function lost() out[#out + 1] = 'lost' end
local function ack(q, id, st, lease_id, now, ttl, result, http, excerpt)
  if not q then return lost() end
  if acked[id] then return lost() end
  -- The task's values by their position in st (LiveFieldsAt in scripts.h), not a table of its
  -- 27 fields: the task goes at the end of the ack, so nothing is written back, and the table
  -- alone cost an ack a tenth of its time (docs/benchmarks.md, twenty-fifth round).
  local k = nil  -- its own hash, when an older Madeira made it (OWN_KEY)
  if not st then
    k = tkey(q, id)
    st = redis.call('HGET', k, 'st')
  end
  local ty, chash, ikey, status, ver, attempts, retry, lerr, dedup, fastused, infast, lease, astart,
    worker
  if st then
    local _
    ty, _, _, _, _, chash, ikey, _, _, status, ver, _, _, _, attempts, retry, lerr, _, dedup, fastused,
      infast, lease, astart, _, worker = cmsgpack.unpack(st)
  else
    local h = read_by_field(k)
    if not h then return lost() end
    ty, chash, ikey, status, ver, attempts, retry, lerr, dedup, fastused, infast, lease, astart,
      worker = h.type, h.chash, h.ikey, h.status, h.ver, h.attempts, h.retry, h.lerr, h.dedup,
      h.fastused, h.infast, h.lease, h.astart, h.worker
  end
  if lease ~= lease_id or status ~= 'running' then return lost() end
  acked[id] = true
  if infast == '1' then redis.call('HINCRBY', P .. 'fast', ty, -1) end
  result, ver = opt(result), plus1(ver)
  later('ZREM', qkey(q, 'leases'), id)
  drop_lease_key(lease_id)
  if ikey then
    local ik = P .. 'idem:' .. ikey
    redis.call('HSET', ik, 'state', 'succeeded', 'task', id, 'exp', s(tonumber(now) + tonumber(ttl)))
    redis.call('PEXPIRE', ik, s(tonumber(ttl) + IDEM_SLACK_MS))
    wake(q)
  end
  depth(q, 'running', 'succeeded')
  -- The attempt's record and the task's state after it, as one (kAckedRecordFields, scripts.h).
  -- (cmsgpack.pack's bytes: every value a string or nil; see head)
  worker, astart, http, excerpt = worker or '', astart or now, opt(http), opt(excerpt)
  record('\165acked' .. head(id) .. id .. head(ver) .. ver ..
         (attempts and head(attempts) or '\192') .. (attempts or '') ..
         head(worker) .. worker .. head(astart) .. astart .. head(now) .. now ..
         (http and head(http) or '\192') .. (http or '') ..
         (excerpt and head(excerpt) or '\192') .. (excerpt or '') ..
         (result and head(result) or '\192') .. (result or '') ..
         (retry and head(retry) or '\192') .. (retry or '') ..
         (lerr and head(lerr) or '\192') .. (lerr or '') ..
         (dedup and head(dedup) or '\192') .. (dedup or '') ..
         (fastused and head(fastused) or '\192') .. (fastused or ''))
  -- The task ends: its hash goes, so nothing else of it needs writing.
  later('HSET', ENDED_KEY, id, 'succeeded\t' .. chash)
  later('HDEL', IDS_KEY, id)
  if k then
    later('DEL', nil, k)
  else
    later('HDEL', qkey(q, 'st'), id)
    later('HDEL', qkey(q, 'spec'), id)
  end
  -- What the engine reads of an acked task (AckReply in ops.cc); the key, which may hold tabs,
  -- last.
  out[#out + 1] = 'ok\t' .. id .. '\t' .. q .. '\t' .. ty .. '\t' .. astart .. '\t' ..
    (attempts or '0') .. '\t' .. (ikey or '')
end
-- The acked tasks' st, read in one command a queue (HMGET; a task not there has a hash of its
-- own, which ack reads), by position: sts[a] is the a-th ack's.
local qs, ids, n, one_q, all = {}, {}, 0, nil, true
for i = 2, #ARGV, 6 do
  n = n + 1
  local q, id = lease_target(ARGV[i])
  qs[n], ids[n] = q or false, id or false
  if not q then
    all = false
  elseif one_q == nil then
    one_q = q
  elseif one_q ~= q then
    all = false
  end
end
local sts
if all and one_q then  -- one queue, as a worker's acks mostly are
  sts = redis.call('HMGET', qkey(one_q, 'st'), unpack(ids))
else
  sts = {}
  local at = {}  -- at[q]: the positions of its acks
  for a = 1, n do
    local q = qs[a]
    if q then
      local p = at[q]
      if not p then
        p = {}
        at[q] = p
      end
      p[#p + 1] = a
    end
  end
  for q, p in pairs(at) do
    local these = {}
    for j, a in ipairs(p) do these[j] = ids[a] end
    local v = redis.call('HMGET', qkey(q, 'st'), unpack(these))
    for j, a in ipairs(p) do sts[a] = v[j] end
  end
end
for a = 1, n do
  local i = 2 + (a - 1) * 6
  ack(qs[a], ids[a], sts[a], ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4],
      ARGV[i + 5])
end
return out
)LUA";

// ARGV: P, lease_id. The task holding the lease and the fast retries in flight for its type.
constexpr const char* kLeaseView = R"LUA(
local q, id, h = find_lease(ARGV[2])
if not q then return {'lost'} end
return {'ok', task_flat(q, id, h), tonumber(redis.call('HGET', P .. 'fast', h.type) or '0')}
)LUA";

// ARGV: P, lease_id, ver, now, status, retry, fastused, infast, next?, error?, outcome, http?,
// excerpt?, expire_only. Applies a decision made from the task at `ver` (else 'changed').
constexpr const char* kFinishAttempt = R"LUA(
local lease_id, now, status = ARGV[2], ARGV[4], ARGV[5]
local q, id, h = find_lease(lease_id)
if not q then return {'lost'} end
if h.ver ~= ARGV[3] then return {'changed'} end
if ARGV[14] == '1' and tonumber(h.deadline) > tonumber(now) then return {'lost'} end
if h.infast == '1' and ARGV[8] ~= '1' then redis.call('HINCRBY', P .. 'fast', h.type, -1) end
if h.infast ~= '1' and ARGV[8] == '1' then redis.call('HINCRBY', P .. 'fast', h.type, 1) end
attempt_record_of(h, id, now, ARGV[11], ARGV[10], ARGV[12], ARGV[13])
h.status, h.retry, h.fastused, h.infast = status, ARGV[6], ARGV[7], ARGV[8]
local err = opt(ARGV[10])
if err then h.lerr = err end
local nxt = opt(ARGV[9])
if nxt then
  h.next, h.ready = nxt, nxt
else
  h.next = nil
end
end_lease(q, id, h, lease_id)
touch(h, now)
release_key(h, id)
if status == 'pending' then
  ready_add(q, member_of(h, id))
elseif status == 'retrying' then
  redis.call('ZADD', qkey(q, 'due'), nxt, id)
  due_at(nxt)
end
depth(q, 'running', status)
record_state_of(h, id)
return {'ok', task_flat(q, id, h, write_task_at(q, id, h))}
)LUA";

// ARGV: P, lease_id, extend_ms, now
constexpr const char* kExtend = R"LUA(
local q, id, h = find_lease(ARGV[2])
if not q then return {'lost'} end
local d = math.min(tonumber(ARGV[4]) + tonumber(ARGV[3]), tonumber(h.astart) + tonumber(h.timeout))
d = math.max(d, tonumber(h.deadline))
if d ~= tonumber(h.deadline) then
  h.deadline = s(d)
  write_task_at(q, id, h)
  redis.call('ZADD', qkey(q, 'leases'), d, id)
end
return {'ok', s(d)}
)LUA";

// ARGV: P, now. The lease ids whose deadline <= now, earliest first.
constexpr const char* kExpired = R"LUA(
local found = {}
for _, q in ipairs(redis.call('SMEMBERS', P .. 'queues')) do
  local r = redis.call('ZRANGEBYSCORE', qkey(q, 'leases'), '-inf', ARGV[2], 'WITHSCORES')
  for j = 1, #r, 2 do
    local h = read_task_at(q, r[j])
    local lease = h and h.lease
    if lease then found[#found + 1] = {tonumber(r[j + 1]), lease} end
  end
end
table.sort(found, function(a, b) return a[1] < b[1] end)
local out = {}
for _, f in ipairs(found) do out[#out + 1] = f[2] end
return out
)LUA";

// ARGV: P, now. Moves due scheduled/retrying tasks to the ready set; returns their queues.
constexpr const char* kPromote = R"LUA(
local out = {}
for _, q in ipairs(redis.call('SMEMBERS', P .. 'queues')) do
  local dk = qkey(q, 'due')
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', dk, '-inf', ARGV[2])) do
    local h = read_task_at(q, id)
    redis.call('ZREM', dk, id)
    if h and (h.status == 'scheduled' or h.status == 'retrying') then
      local was = h.status
      h.status, h.ready = 'pending', h.next
      touch(h, ARGV[2])
      ready_add(q, member_of(h, id))
      depth(q, was, 'pending')
      record_state_of(h, id)
      write_task_at(q, id, h)
      out[#out + 1] = q
    end
  end
end
return out
)LUA";

// ARGV: P. The earliest due time or lease deadline, or nil.
constexpr const char* kNextWakeup = R"LUA(
local best = nil
for _, q in ipairs(redis.call('SMEMBERS', P .. 'queues')) do
  for _, name in ipairs({'due', 'leases'}) do
    local r = redis.call('ZRANGE', qkey(q, name), 0, 0, 'WITHSCORES')
    if #r > 0 then
      local v = tonumber(r[2])
      if best == nil or v < best then best = v end
    end
  end
end
if best == nil then return false end
return s(best)
)LUA";

// ARGV: P, id. The live task's fields, or nil when it is not live in Redis.
constexpr const char* kGet = R"LUA(
local q = redis.call('HGET', IDS_KEY, ARGV[2])
if not q then return false end
local h = read_task_at(q, ARGV[2])
if not h then return {} end
return task_flat(q, ARGV[2], h)
)LUA";

// ARGV: P, id, now
constexpr const char* kCancel = R"LUA(
local id, now = ARGV[2], ARGV[3]
local q = redis.call('HGET', IDS_KEY, id)
if not q then
  local ended = ended_claim(id)
  if ended then
    local st = split2(ended)
    return {'terminal', st}
  end
  return {'notfound'}
end
local h = read_task_at(q, id)
if not h then return {'notfound'} end
local st = h.status
if st == 'running' then return {'running'} end
if st == 'succeeded' or st == 'cancelled' then return {'terminal', st} end
if st == 'pending' then
  redis.call('ZREM', qkey(q, 'ready'), member_of(h, id))
else
  redis.call('ZREM', qkey(q, 'due'), id)
end
clear_fast(h)
h.status, h.next = 'cancelled', nil
touch(h, now)
release_key(h, id)
depth(q, st, 'cancelled')
return {'ok', finish(q, id, h, 'cancelled')}
)LUA";

// ARGV: P, now, then 5 per task: id ver payload? pv? maxr?. Dead tasks still at `ver` only.
constexpr const char* kReplay = R"LUA(
local now = ARGV[2]
local out = {}
for i = 3, #ARGV, 5 do
  local id = ARGV[i]
  local q = redis.call('HGET', IDS_KEY, id)
  if q then
    local h = read_task_at(q, id)
    if h and h.status == 'dead' and h.ver == ARGV[i + 1] then
      local payload, pv, maxr = opt(ARGV[i + 2]), opt(ARGV[i + 3]), opt(ARGV[i + 4])
      if payload then h.payload = payload end
      if pv then h.pv = pv end
      if maxr then h.maxr = maxr end
      clear_fast(h)
      h.status, h.retry, h.fastused, h.next, h.ready = 'pending', '0', '0', now, now
      touch(h, now)
      ready_add(q, member_of(h, id))
      depth(q, 'dead', 'pending')
      write_task_at(q, id, h)
      out[#out + 1] = snapshot_at(q, id, h)
    end
  end
end
return out
)LUA";

// ARGV: P, now, ids... Cancels those still dead; returns how many.
constexpr const char* kCancelDead = R"LUA(
local now = ARGV[2]
local n = 0
for i = 3, #ARGV do
  local id = ARGV[i]
  local q = redis.call('HGET', IDS_KEY, id)
  if q then
    local h = read_task_at(q, id)
    if h and h.status == 'dead' then
      h.status, h.next = 'cancelled', nil
      touch(h, now)
      depth(q, 'dead', 'cancelled')
      finish(q, id, h, 'cancelled')
      n = n + 1
    end
  end
end
return n
)LUA";

// The id claims of ended tasks leave Redis a generation at a time, so that its memory holds
// those of the last `retention` to 2 x `retention` instead of every task there ever was. Once
// P ended is `retention` old it becomes P ended:prev and a new P ended begins; the P ended:prev
// it replaces is dropped, but only when PostgreSQL has every record written before that one
// was closed (the outbox is copied past the id noted then): a claim leaves Redis only once
// PostgreSQL holds its task as ended. The first close sets `checked`, a retention before any
// claim is dropped: submits look their ids up in PostgreSQL from then on (see kSubmit).
// ARGV: P, now, retention_ms, bound, bound_read: the outbox id up to which PostgreSQL has every
// entry: all before `bound`, and `bound` itself when bound_read is '1' (TrimOutbox's bound).
// Returns {checked (0/1), claims dropped}.
constexpr const char* kRotateEnded = R"LUA(
local now, retention = tonumber(ARGV[2]), tonumber(ARGV[3])
local gk, ek, pk = P .. 'ended:gen', ENDED_KEY, PREV_ENDED_KEY
local g = redis.call('HMGET', gk, 'started', 'closed', 'checked')
local checked = g[3] == '1' and 1 or 0
if not g[1] then
  redis.call('HSET', gk, 'started', s(now))
  return {checked, 0}
end
if now - tonumber(g[1]) < retention then return {checked, 0} end
local function id_parts(id)
  local dash = string.find(id, '-', 1, true)
  return tonumber(string.sub(id, 1, dash - 1)), tonumber(string.sub(id, dash + 1))
end
local dropped = 0
if redis.call('EXISTS', pk) == 1 then
  local cm, cs = id_parts(g[2] or '0-0')
  local bm, bs = id_parts(ARGV[4])
  local copied = (cm < bm) or (cm == bm and (cs < bs or (cs == bs and ARGV[5] == '1')))
  if not (cm == 0 and cs == 0) and not copied then return {checked, 0} end
  dropped = redis.call('HLEN', pk)
  redis.call('UNLINK', pk)
end
local closed = '0-0'
if redis.call('EXISTS', P .. 'outbox') == 1 then
  local info = redis.call('XINFO', 'STREAM', P .. 'outbox')
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' then closed = info[i + 1] end
  end
end
if redis.call('EXISTS', ek) == 1 then redis.call('RENAME', ek, pk) end
redis.call('HSET', gk, 'started', s(now), 'closed', closed, 'checked', '1')
return {1, dropped}
)LUA";

// `madeira recover`: writes back what PostgreSQL recorded, never over what Redis still has.
// ARGV: P, mode, then per mode:
//   counter  name value            raises P<name> to value (never lowers it)
//   tasks    per task: n, then n field/value pairs: "id", "spec" (PackedSpec) and the live
//            fields (kLiveFields), written into the queue's hashes as a submit writes them.
//            Fields starting with "_" are not stored: "_snap" = copy the task to the record
//            again (it was changed: a running task made pending), "_astart" = when that lost
//            attempt started.
//   ended    pairs id, "status\tcontent_hash"   (the id claims of succeeded/cancelled tasks)
//   checked  (none)   PostgreSQL holds ended tasks whose claims were not written back: submits
//                     look their ids up there (P ended:gen checked, see kRotateEnded)
//   idem     4 per key: key, task_id, expiry, ms left until it (succeeded idempotency keys)
//   events   ttl_ms, then 9 per event: source event_id type payload trace target? received seq
//            deliveries
// Returns {how many it wrote, how many running tasks it made pending} (what Redis still had is
// left alone and not counted).
constexpr const char* kRestore = R"LUA(
local mode = ARGV[2]
local n_done, n_snap = 0, 0
local function live_or_ended(id)
  return redis.call('HEXISTS', IDS_KEY, id) == 1 or ended_claim(id) ~= false
end
if mode == 'counter' then
  local k = P .. ARGV[3]
  local cur = tonumber(redis.call('GET', k) or '0')
  if tonumber(ARGV[4]) > cur then
    redis.call('SET', k, ARGV[4])
    n_done = 1
  end
elseif mode == 'tasks' then
  local i = 3
  while i <= #ARGV do
    -- A task as its queue's two hashes hold it, as a submit would have made it: its live fields
    -- by name (packed into its st) and its packed spec ('spec'); '_' names are for this script.
    local n = tonumber(ARGV[i])
    local h = {}
    for j = 1, n do h[ARGV[i + 2 * j - 1]] = ARGV[i + 2 * j] end
    i = i + 1 + 2 * n
    local id, q, st, spec = h['id'], h['queue'], h['status'], h['spec']
    if not live_or_ended(id) then
      write_task_at(q, id, h)
      redis.call('HSET', qkey(q, 'spec'), id, spec)
      redis.call('HSET', IDS_KEY, id, q)
      add_queue(q)
      if st == 'pending' then
        ready_add(q, member_of(h, id))
      elseif st == 'scheduled' or st == 'retrying' then
        redis.call('ZADD', qkey(q, 'due'), h['next'], id)
      end
      if h['infast'] == '1' then redis.call('HINCRBY', P .. 'fast', h['type'], 1) end
      depth(q, nil, st)
      if h['_snap'] then
        record({'kind', 'attempt', 'task_id', id, 'attempt', h['attempts'], 'worker', '',
                'started', h['_astart'], 'finished', h['updated'], 'outcome', 'lease_expired',
                'error', '{"type":"redis_data_lost","message":"Redis lost this lease; madeira recover made the task pending again"}'})
        snapshot_of(h, {'spec', spec})
        n_snap = n_snap + 1
      end
      n_done = n_done + 1
    end
  end
elseif mode == 'ended' then
  for i = 3, #ARGV, 2 do
    if not live_or_ended(ARGV[i]) then
      redis.call('HSET', ENDED_KEY, ARGV[i], ARGV[i + 1])
      n_done = n_done + 1
    end
  end
elseif mode == 'checked' then
  if redis.call('HGET', P .. 'ended:gen', 'checked') ~= '1' then
    redis.call('HSET', P .. 'ended:gen', 'checked', '1')
    n_done = 1
  end
elseif mode == 'idem' then
  for i = 3, #ARGV, 4 do
    local ik = P .. 'idem:' .. ARGV[i]
    if redis.call('EXISTS', ik) == 0 then
      redis.call('HSET', ik, 'state', 'succeeded', 'task', ARGV[i + 1], 'exp', ARGV[i + 2])
      redis.call('PEXPIRE', ik, s(tonumber(ARGV[i + 3]) + IDEM_SLACK_MS))
      n_done = n_done + 1
    end
  end
elseif mode == 'events' then
  for i = 4, #ARGV, 9 do
    local source, event_id = ARGV[i], ARGV[i + 1]
    local ek = event_key(source, event_id)
    if redis.call('EXISTS', ek) == 0 then
      redis.call('HSET', ek, 'source', source, 'event_id', event_id, 'type', ARGV[i + 2],
                 'payload', ARGV[i + 3], 'trace', ARGV[i + 4], 'received', ARGV[i + 6],
                 'seq', ARGV[i + 7])
      local target = opt(ARGV[i + 5])
      if target then redis.call('HSET', ek, 'target', target) end
      redis.call('DEL', ek .. ':deliveries')
      for line in string.gmatch(ARGV[i + 8], '[^\n]+') do
        redis.call('RPUSH', ek .. ':deliveries', line)
      end
      redis.call('ZADD', P .. 'eventids:' .. event_id, 0,
                 string.format('%016d%016d', tonumber(ARGV[i + 6]), tonumber(ARGV[i + 7])) .. source)
      expire_event(ek, event_id, ARGV[3])
      n_done = n_done + 1
    end
  end
end
return {n_done, n_snap}
)LUA";

// `local LIST = {'a', 'b', ...}`: a list of field names as a Lua table.
std::string LuaNameList(const char* list, std::span<const char* const> fields) {
  std::string out = std::string("local ") + list + " = {";
  for (size_t i = 0; i < fields.size(); ++i) {
    out += std::string(i == 0 ? "" : ", ") + "'" + fields[i] + "'";
  }
  return out + "}\n";
}

// A task's packed fields, from kLiveFields: LIVE_FIELDS (their names), live_of(st) (a task's
// "st" as a table by name, made at its size by one constructor: filled from empty, Lua would
// grow and rehash it at 1, 2, 4, 8, 16 and 32 keys), pack_live(h) (the reverse: h's values in
// order, nil where absent) and BY_FIELD (marks a table read from a hash written field by field,
// see read_task). Made here so that the Lua and task_codec.cc read one order, named once.
std::string LiveFieldsLua() {
  std::string locals, by_name, values;
  for (size_t i = 0; i < kLiveFields.size(); ++i) {
    const std::string v = "v" + std::to_string(i + 1);
    locals += (i == 0 ? "" : ", ") + v;
    by_name += std::string(i == 0 ? "" : ", ") + kLiveFields[i] + " = " + v;
    values += std::string(i == 0 ? "" : ", ") + "h." + kLiveFields[i];
  }
  return LuaNameList("LIVE_FIELDS", kLiveFields) + "local BY_FIELD = {}\n" +
         "local function live_of(st)\n  local " + locals + " = cmsgpack.unpack(st)\n  return {" +
         by_name + "}\nend\n" + "local function pack_live(h) return cmsgpack.pack(" + values +
         ") end\n";
}

// The state record function, from kStateRecordFields (after the task id: the task's fields
// it packs): record_state_of(h, id) packs h's values as they are after a change. Made here so
// that the Lua packs the fields in the order task_codec.cc reads them, named once.
std::string StateRecordLua() {
  const auto after_id = std::span<const char* const>(kStateRecordFields).subspan(1);
  std::string values;
  for (const char* name : after_id) values += std::string(", h.") + name;
  return "local function record_state_of(h, id)\n"
         "  record(cmsgpack.pack('state', id" +
         values +
         "))\n"
         "end\n";
}

}  // namespace

const std::string& ScriptSource(Script script) {
  static const std::array<std::string, kScriptCount> sources = [] {
    std::array<const char*, kScriptCount> bodies = {
        kSubmit,     kLease,   kAck,        kLeaseView, kFinishAttempt, kExtend,
        kExpired,    kPromote, kNextWakeup, kGet,       kCancel,        kReplay,
        kCancelDead, kEvent,   kGetEvent,   kRestore,   kTakeTokensLua, kRotateEnded};
    std::array<std::string, kScriptCount> out;
    const std::string helpers =
        std::string(kHelpers) + LiveFieldsLua() + StateRecordLua() + kHelpersAfterStateRecords;
    // Each body runs as a function, so that whatever it made ready is published after any of
    // its returns.
    for (int i = 0; i < kScriptCount; ++i) {
      out[i] = helpers + "local function main()\n" + bodies[i] +
               "\nend\nlocal result = main()\nflush_gathered()\npublish_wakes()\n"
               "if RETURNS_ENTRIES then result[#result + 1] = ENTRY_IDS end\nreturn result\n";
    }
    return out;
  }();
  return sources[static_cast<int>(script)];
}

}  // namespace madeira::store::redis_pg
