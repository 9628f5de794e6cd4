#!/usr/bin/env python3
"""What a packed task layout would save Redis, before anyone builds it: Redis's instructions per
task for a submit, a lease and an ack of 100 tasks a call, in two layouts, counted by callgrind
in a private redis-server (AOF, fsync always, as the store runs it).

    bench/task_layout_probe.py [--tasks N] [--redis-server PATH]

  fields  the store's layout (scripts.cc): a task hash of ~14 fields plus the packed spec, read
          by HMGET of the lease's 24 and the ack's 17 field names, changed field by field, its
          state and attempt records JSON arrays (cjson) in outbox entries of 64 records;
  packed  the live state as one msgpack value beside the spec: read and written whole
          (cmsgpack, in C), the same value as the outbox record and in the answers;
  queue   packed, the values fields of two hashes a queue ({q}:st, {q}:spec) rather than of a
          hash a task: a call reads, writes and deletes all of its tasks with one command each
          (docs/benchmarks.md, thirty-second round).

All model only what the layout changes: the ready/lease sets, id claims, counters and wake-ups
cost the same either way and are left out, so the totals are below redis_instructions.py's for
the real scripts; the differences between the rows are what the layouts are worth. The fields
model mirrors kLeaseFields / kAckFields (scripts.h, scripts.cc) and create_task at the time of
writing (docs/benchmarks.md, fifteenth round). Needs valgrind and redis-server; ~20 s.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from redis_instructions import free_port, instructions, wait_until  # noqa: E402

SPEC_BYTES = 400  # about the packed spec of the bench's ~300-byte payload (PackedSpec)
PER_CALL = 100

COMMON = r"""
local base, n, now = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local function key(i) return '{q}:task:' .. string.format('01J%023d', i) end
local function id_of(i) return string.format('01J%023d', i) end
local entry = {}  -- the outbox entry being filled: field, value, ...
local records = 0
local function outbox(field, value)
  entry[#entry + 1], entry[#entry + 2] = field, value
  records = records + 1
  if records == 64 then
    redis.call('XADD', 'outbox', '*', unpack(entry))
    entry, records = {}, 0
  end
end
local function flush_outbox()
  if records > 0 then redis.call('XADD', 'outbox', '*', unpack(entry)) end
end
"""

# The store's layout. `run` gathers JSON records as outbox_entry() does.
FIELDS = {
    "submit": r"""
for i = base, base + n - 1 do
  local seq = string.format('%d', i)
  redis.call('HSET', key(i), 'type', 'noop', 'queue', 'q', 'pv', '1', 'timeout', '30000',
    'prio', '0', 'chash', 'ab12cd34ef56ab12cd34ef56ab12cd34', 'status', 'pending', 'updated', now,
    'next', now, 'ready', now, 'seq', seq, 'ver', '1', 'spec', ARGV[4])
  outbox('t', seq .. '\tpending')
  outbox('s', ARGV[4])
end
flush_outbox()
return n
""",
    "lease": r"""
local F = {'type', 'pv', 'ikey', 'timeout', 'token', 'attempts', 'ver', 'status', 'retry',
  'updated', 'next', 'lerr', 'result', 'dedup', 'fastused', 'infast', 'queue', 'prio', 'chash',
  'ready', 'seq', 'payload', 'maxr', 'spec'}
local S = {'ver', 'status', 'retry', 'attempts', 'updated', 'next', 'lerr', 'result', 'dedup',
  'fastused', 'infast'}
local run, out = {}, {}
for i = base, base + n - 1 do
  local id, k = id_of(i), key(i)
  local v = redis.call('HMGET', k, unpack(F))
  local h = {}
  for j, name in ipairs(F) do h[name] = v[j] or nil end
  local lease = 'a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6~q~' .. id
  h.token = string.format('%d', tonumber(h.token or '0') + 1)
  h.attempts = string.format('%d', tonumber(h.attempts or '0') + 1)
  h.ver = string.format('%d', tonumber(h.ver) + 1)
  h.deadline = string.format('%d', tonumber(now) + tonumber(h.timeout))
  h.status, h.updated, h.next = 'running', now, ''
  redis.call('HSET', k, 'token', h.token, 'attempts', h.attempts, 'status', 'running',
    'lease', lease, 'astart', now, 'deadline', h.deadline, 'worker', 'bench-worker-1',
    'ver', h.ver, 'updated', now, 'next', '')
  local rec = {'kind', 'state', 'id', id}
  for _, name in ipairs(S) do
    if h[name] and h[name] ~= '' then rec[#rec + 1], rec[#rec + 2] = name, h[name] end
  end
  run[#run + 1] = rec
  if #run == 64 then outbox('j', cjson.encode(run)) run = {} end
  out[#out + 1] = {lease, v, h.token .. '\t' .. h.attempts .. '\t' .. h.deadline .. '\t' .. h.ver}
end
if #run > 0 then outbox('j', cjson.encode(run)) end
flush_outbox()
return out
""",
    "ack": r"""
local F = {'type', 'ikey', 'chash', 'lease', 'worker', 'astart', 'ver', 'status', 'retry',
  'attempts', 'updated', 'next', 'lerr', 'result', 'dedup', 'fastused', 'infast'}
local run, out, dels = {}, {}, {}
for i = base, base + n - 1 do
  local id, k = id_of(i), key(i)
  local v = redis.call('HMGET', k, unpack(F))
  local h = {}
  for j, name in ipairs(F) do h[name] = v[j] or nil end
  if h.status ~= 'running' then return redis.error_reply('not running: ' .. id) end
  run[#run + 1] = {'kind', 'attempt', 'task_id', id, 'attempt', h.attempts, 'worker', h.worker,
    'started', h.astart, 'finished', now, 'outcome', 'succeeded'}
  run[#run + 1] = {'kind', 'state', 'id', id, 'ver', string.format('%d', tonumber(h.ver) + 1),
    'status', 'succeeded', 'attempts', h.attempts, 'updated', now}
  if #run == 64 then outbox('j', cjson.encode(run)) run = {} end
  dels[#dels + 1] = k
  out[#out + 1] = {'ok', id, 'q', h.type, h.astart, h.attempts, ''}
end
if #run > 0 then outbox('j', cjson.encode(run)) end
flush_outbox()
redis.call('DEL', unpack(dels))
return out
""",
}

# The packed layout: st = msgpack [type, queue, pv, timeout, prio, chash, status, updated, next,
# ready, seq, ver, token, attempts, lease, astart, deadline, worker, finished].
PACKED = {
    "submit": r"""
for i = base, base + n - 1 do
  local st = cmsgpack.pack({'noop', 'q', 1, 30000, 0, 'ab12cd34ef56ab12cd34ef56ab12cd34',
    'pending', tonumber(now), tonumber(now), tonumber(now), i, 1, 0, 0, false, false, false,
    false, false})
  redis.call('HSET', key(i), 'st', st, 'spec', ARGV[4])
  outbox('t', st)
  outbox('s', ARGV[4])
end
flush_outbox()
return n
""",
    "lease": r"""
local out, t_now = {}, tonumber(now)
for i = base, base + n - 1 do
  local id, k = id_of(i), key(i)
  local v = redis.call('HMGET', k, 'st', 'spec')
  local t = cmsgpack.unpack(v[1])
  t[7], t[8], t[9], t[12], t[13], t[14] = 'running', t_now, false, t[12] + 1, t[13] + 1, t[14] + 1
  t[15], t[16], t[17], t[18] = 'a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6', t_now, t_now + t[4],
    'bench-worker-1'
  local st = cmsgpack.pack(t)
  redis.call('HSET', k, 'st', st)
  outbox(id, st)
  out[#out + 1] = {v[2], st}
end
flush_outbox()
return out
""",
    "ack": r"""
local out, dels, t_now = {}, {}, tonumber(now)
for i = base, base + n - 1 do
  local id, k = id_of(i), key(i)
  local t = cmsgpack.unpack(redis.call('HGET', k, 'st'))
  if t[7] ~= 'running' then return redis.error_reply('not running: ' .. id) end
  t[7], t[8], t[12], t[19] = 'succeeded', t_now, t[12] + 1, t_now
  local st = cmsgpack.pack(t)
  outbox(id, st)
  dels[#dels + 1] = k
  out[#out + 1] = st
end
flush_outbox()
redis.call('DEL', unpack(dels))
return out
""",
}

# The packed layout with a queue's tasks in two hashes of their own, `{q}:st` and `{q}:spec`
# (field = task id), instead of a hash a task: the same values, read and written for all of a
# call's tasks in one command each (HMGET, HSET, HDEL) rather than one or two a task.
QUEUE = {
    "submit": r"""
local sts, specs = {}, {}
for i = base, base + n - 1 do
  local id = id_of(i)
  local st = cmsgpack.pack({'noop', 'q', 1, 30000, 0, 'ab12cd34ef56ab12cd34ef56ab12cd34',
    'pending', tonumber(now), tonumber(now), tonumber(now), i, 1, 0, 0, false, false, false,
    false, false})
  sts[#sts + 1], sts[#sts + 2] = id, st
  specs[#specs + 1], specs[#specs + 2] = id, ARGV[4]
  outbox('t', st)
  outbox('s', ARGV[4])
end
redis.call('HSET', '{q}:st', unpack(sts))
redis.call('HSET', '{q}:spec', unpack(specs))
flush_outbox()
return n
""",
    "lease": r"""
local ids, new, out, t_now = {}, {}, {}, tonumber(now)
for i = base, base + n - 1 do ids[#ids + 1] = id_of(i) end
local sts = redis.call('HMGET', '{q}:st', unpack(ids))
local specs = redis.call('HMGET', '{q}:spec', unpack(ids))
for j, id in ipairs(ids) do
  local t = cmsgpack.unpack(sts[j])
  t[7], t[8], t[9], t[12], t[13], t[14] = 'running', t_now, false, t[12] + 1, t[13] + 1, t[14] + 1
  t[15], t[16], t[17], t[18] = 'a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6', t_now, t_now + t[4],
    'bench-worker-1'
  local st = cmsgpack.pack(t)
  new[#new + 1], new[#new + 2] = id, st
  outbox(id, st)
  out[#out + 1] = {specs[j], st}
end
redis.call('HSET', '{q}:st', unpack(new))
flush_outbox()
return out
""",
    "ack": r"""
local ids, out, t_now = {}, {}, tonumber(now)
for i = base, base + n - 1 do ids[#ids + 1] = id_of(i) end
local sts = redis.call('HMGET', '{q}:st', unpack(ids))
for j, id in ipairs(ids) do
  local t = cmsgpack.unpack(sts[j])
  if t[7] ~= 'running' then return redis.error_reply('not running: ' .. id) end
  t[7], t[8], t[12], t[19] = 'succeeded', t_now, t[12] + 1, t_now
  local st = cmsgpack.pack(t)
  outbox(id, st)
  out[#out + 1] = st
end
flush_outbox()
redis.call('HDEL', '{q}:st', unpack(ids))
redis.call('HDEL', '{q}:spec', unpack(ids))
return out
""",
}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=2000)
    ap.add_argument("--redis-server", default="redis-server")
    args = ap.parse_args()
    for tool in ("valgrind", "callgrind_control", "redis-cli", args.redis_server):
        if not shutil.which(tool):
            raise SystemExit(f"task_layout_probe: {tool} not found")
    calls = max(1, args.tasks // PER_CALL)
    tasks = calls * PER_CALL
    work = tempfile.mkdtemp(prefix="madeira-layout-")
    port = free_port()
    redis = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--instr-atstart=no",
         f"--callgrind-out-file={work}/callgrind.out", args.redis_server, "--bind", "127.0.0.1",
         "--port", str(port), "--dir", work, "--appendonly", "yes", "--appendfsync", "always",
         "--save", ""], stdout=subprocess.DEVNULL, stderr=open(f"{work}/valgrind.log", "w"))
    cli = ["redis-cli", "-p", str(port)]

    def control(*what):
        subprocess.run(["callgrind_control", *what, str(redis.pid)], capture_output=True,
                       check=True)

    try:
        wait_until("redis-server under callgrind", lambda: subprocess.run(
            cli + ["PING"], capture_output=True, text=True).stdout.strip() == "PONG", 60)
        spec = "s" * SPEC_BYTES
        print(f"Redis instructions a task ({tasks} tasks, {PER_CALL} a call; "
              "layout-dependent work only):")
        print(f"{'layout':8} {'submit':>9} {'lease':>9} {'ack':>9} {'all three':>10}")
        dumps = 0
        for row, (name, bodies) in enumerate((("fields", FIELDS), ("packed", PACKED),
                                                  ("queue", QUEUE))):
            counts = []
            first = row * 10_000_000
            for step in ("submit", "lease", "ack"):
                sha = subprocess.run(cli + ["SCRIPT", "LOAD", COMMON + bodies[step]],
                                     capture_output=True, text=True, check=True).stdout.strip()
                control("--instr=on")
                control("--zero")
                for c in range(calls):
                    argv = [str(first + c * PER_CALL), str(PER_CALL), "1764750000000"]
                    if step == "submit":
                        argv.append(spec)
                    reply = subprocess.run(cli + ["EVALSHA", sha, "0", *argv],
                                           capture_output=True, check=True).stdout
                    if reply.startswith(b"ERR") or b"not running" in reply:
                        raise SystemExit(f"task_layout_probe: {name} {step}: {reply[:200]!r}")
                control("--dump")
                control("--instr=off")
                dumps += 1
                counts.append(instructions(f"{work}/callgrind.out.{dumps}") / tasks)
            print(f"{name:8} {counts[0]:9,.0f} {counts[1]:9,.0f} {counts[2]:9,.0f} "
                  f"{sum(counts):10,.0f}")
    finally:
        redis.terminate()
        redis.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
