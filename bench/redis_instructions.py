#!/usr/bin/env python3
"""Redis's instructions per task for each step of a task's life on the redis-pg store: submits
(100 a request), leases (100 a request) and acks (100 a request), counted by valgrind's callgrind
in a private redis-server. Unlike throughput or CPU seconds on a noisy machine, the counts repeat
to within ~1 % from run to run, so a change to the Lua scripts can be judged in one run of each.

    bench/redis_instructions.py BINARY [--tasks N] [--redis-server PATH] [--breakdown]
                                       [--keep DIR]

BINARY: the madeira to measure. Needs valgrind (apt-get install valgrind), redis-server, and
MADEIRA_TEST_DATABASE_URL (a PostgreSQL: `scripts/test-services.sh start DIR`, then
`set -a; source DIR/env; set +a`). Redis runs as scripts/test-services.sh runs it (AOF, fsync
always), ~50x slower under callgrind: 2,000 tasks take about a minute.

To see where the instructions go, not only how many: --redis-server names a redis-server built
with symbols (Debian's is stripped: with deb-src in apt's sources, `apt-get source redis`, then
in it `make OPTIMIZATION=-O2 CFLAGS=-g USE_SYSTEM_JEMALLOC=yes BUILD_TLS=no`, ~1 minute; the
binary is src/redis-server. A deb-src entry for the URI of a deb one needs its Signed-By too, or
apt refuses both: "Conflicting values set for option Signed-By"), --breakdown splits each step
by Redis function, and --keep DIR keeps the three dumps (DIR/callgrind.out.1 submit, .2 lease,
.3 ack) for `callgrind_annotate --inclusive=yes DIR/callgrind.out.2` (docs/benchmarks.md,
fourteenth round).

--madeira counts the madeira server's instructions instead (it runs under callgrind, Redis
as is): what a task costs the store thread, the recorder and HTTP together. The recorder copies
a lease's change with its next flush, which may fall in the ack's step: read lease + ack as
one. The ack's step ends with a search, served once the record holds every ack
(docs/benchmarks.md, twenty-seventh round).
"""
import argparse
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

# The bench's ~300-byte payload (bench/workload.cc).
PAYLOAD = json.loads('{"order_id":202509110001,"store_id":"S10086","customer":"c-000042",'
                     '"items":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":1}],"note":"'
                     + "x" * 180 + '"}')
PER_REQUEST = 100
STEPS = ("submit", "lease", "ack")  # one callgrind dump each, in this order


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(what, check, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise SystemExit(f"redis_instructions: {what} did not come up within {seconds} s")


class Madeira:
    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def post(self, path, body):
        self.conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        answer = self.conn.getresponse()
        data = answer.read()
        if answer.status >= 300:
            raise SystemExit(f"redis_instructions: {path} answered {answer.status}: {data[:200]}")
        return json.loads(data) if data else None


def instructions(dump):
    """The instructions a callgrind dump counted (its "summary:" or "totals:" line)."""
    with open(dump) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise SystemExit(f"redis_instructions: no totals in {dump}")


# Where a step's instructions go (--breakdown): Redis functions whose inclusive counts split a
# script call, as callgrind_annotate names them (file:function) in a redis-server with symbols.
BREAKDOWN = [
    ("EVALSHA, all of it", "eval.c:evalShaCommand"),
    ("  redis.call from the scripts", "script_lua.c:luaRedisGenericCommand"),
    ("    the commands themselves", "script.c:scriptCall"),
    ("    their replies into Lua", "resp_parser.c:parseReply"),
    ("    their arguments out of Lua", "script_lua.c:luaArgsToRedisArgv"),
    ("  the script's answer to RESP", "script_lua.c:luaReplyToRedisReply"),
    ("  cjson.encode (outbox records)", "lua_cjson.c:json_encode"),
    ("  Lua strings made (interned)", "lstring.c:luaS_newlstr"),
    ("  Lua garbage collection", "lgc.c:luaC_step"),
    ("writes into the AOF buffer", "server.c:propagatePendingCommands"),
    ("HSET", "t_hash.c:hsetCommand"),
    ("HMGET", "t_hash.c:hmgetCommand"),
    ("DEL", "db.c:delCommand"),
    ("XREADGROUP (the recorder)", "t_stream.c:xreadCommand"),
]


def breakdown(dump, tasks):
    """Inclusive instructions a task of the BREAKDOWN functions in one dump, or None when the
    redis-server had no symbols."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100",
                          "--auto=no", dump], capture_output=True, text=True, check=True).stdout
    counts = {}
    for line in out.splitlines():
        # "  1,234 ( 5.6%)  path/file.c:function [binary]"; recursive entries (fn'2) left out.
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S+)", line)
        if not m:
            continue
        for _, fn in BREAKDOWN:
            if m.group(2).endswith("/" + fn) and fn not in counts:
                counts[fn] = int(m.group(1).replace(",", "")) / tasks
    return counts if "eval.c:evalShaCommand" in counts else None


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("--tasks", type=int, default=2000)
    ap.add_argument("--redis-server", default="redis-server",
                    help="the redis-server to run under callgrind (default: the one on PATH)")
    ap.add_argument("--breakdown", action="store_true",
                    help="also split each step by Redis function (needs --redis-server with "
                         "symbols)")
    ap.add_argument("--madeira", action="store_true",
                    help="count the madeira server's instructions instead of Redis's")
    ap.add_argument("--keep", metavar="DIR",
                    help="copy the callgrind dumps (submit, lease, ack) into DIR")
    args = ap.parse_args()
    database_url = os.environ.get("MADEIRA_TEST_DATABASE_URL")
    if not database_url:
        raise SystemExit("redis_instructions: MADEIRA_TEST_DATABASE_URL is not set")
    for tool in ("valgrind", "callgrind_control", args.redis_server):
        if shutil.which(tool) is None:
            raise SystemExit(f"redis_instructions: {tool} is not installed")
    tasks = args.tasks // PER_REQUEST * PER_REQUEST
    work = tempfile.mkdtemp(prefix="redis-instructions-")
    redis_port = free_port()
    callgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={work}/callgrind.out"]
    redis = subprocess.Popen(
        ([] if args.madeira else callgrind) + [
         args.redis_server, "--bind", "127.0.0.1", "--port", str(redis_port), "--dir", work,
         "--appendonly", "yes", "--appendfsync", "always", "--save", ""],
        stdout=subprocess.DEVNULL, stderr=open(f"{work}/valgrind.log", "w"))
    server = None
    try:
        wait_until("redis-server under callgrind", lambda: subprocess.run(
            ["redis-cli", "-p", str(redis_port), "PING"], capture_output=True).stdout == b"PONG\n",
            120)
        log = open(f"{work}/madeira.log", "w+")
        server = subprocess.Popen(
            (callgrind if args.madeira else []) + [args.binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", f"{work}/data",
             "--store", "redis-pg", "--redis-url", f"redis://127.0.0.1:{redis_port}",
             "--database-url", database_url, "--namespace", f"instr{os.getpid()}"],
            stdout=log, stderr=subprocess.STDOUT)

        def listening():
            log.seek(0)
            return "listening on " in log.read()
        wait_until("madeira", listening, 300 if args.madeira else 120)
        log.seek(0)
        port = int(log.read().split("listening on ")[1].split()[0].rsplit(":", 1)[1])
        madeira = Madeira(port)

        measured = server if args.madeira else redis

        def dump():
            subprocess.run(["callgrind_control", "--dump", str(measured.pid)],
                           capture_output=True, check=True)

        subprocess.run(["callgrind_control", "--zero", str(measured.pid)], capture_output=True,
                       check=True)
        for _ in range(0, tasks, PER_REQUEST):
            madeira.post("/v1/tasks/batch", {"tasks": [
                {"task_type": "bench.noop", "queue": "instructions", "payload_version": 1,
                 "payload": PAYLOAD} for _ in range(PER_REQUEST)]})
        dump()
        leases = []
        while len(leases) < tasks:
            got = madeira.post("/v1/leases", {"worker_id": "instructions",
                                              "queues": ["instructions"],
                                              "max_tasks": PER_REQUEST, "wait_ms": 100})["leases"]
            if not got:
                raise SystemExit(f"redis_instructions: only {len(leases)} of {tasks} leased")
            leases += got
        dump()
        for i in range(0, len(leases), PER_REQUEST):
            madeira.post("/v1/leases/ack", {"acks": [{"lease_id": lease["lease_id"]}
                                                      for lease in leases[i:i + PER_REQUEST]]})
        if args.madeira:  # served from PostgreSQL once the record holds every ack
            madeira.conn.request("GET", "/v1/tasks?queue=instructions&limit=1")
            madeira.conn.getresponse().read()
        dump()
        dumps = sorted((p for p in os.listdir(work) if p.startswith("callgrind.out.")),
                       key=lambda p: int(p.rsplit(".", 1)[1]))
        if len(dumps) < 3:
            raise SystemExit(f"redis_instructions: {len(dumps)} callgrind dumps, not 3")
        whose = "madeira" if args.madeira else "Redis"
        print(f"{os.path.basename(args.binary)}: {whose} instructions a task, {tasks} tasks, "
              f"{PER_REQUEST} a request")
        steps = list(zip(STEPS, (os.path.join(work, name) for name in dumps[:3])))
        for step, dump in steps:
            print(f"  {step:7} {instructions(dump) / tasks:10,.0f}")
        if args.breakdown:
            rows = [breakdown(dump, tasks) for _, dump in steps]
            if None in rows:
                raise SystemExit("redis_instructions: no Redis function names in the dumps: "
                                 "--breakdown needs a redis-server built with symbols")
            print(f"  {'inclusive, a task':34}" + "".join(f" {step:>9}" for step in STEPS))
            for label, fn in BREAKDOWN:
                print(f"  {label:34}" + "".join(f" {r.get(fn, 0):9,.0f}" for r in rows))
        if args.keep:
            os.makedirs(args.keep, exist_ok=True)
            for n, (_, dump) in enumerate(steps, 1):
                shutil.copy(dump, os.path.join(args.keep, f"callgrind.out.{n}"))
            print(f"  dumps kept in {args.keep} (callgrind.out.1 submit, .2 lease, .3 ack)")
    finally:
        if server is not None:
            server.terminate()
            server.wait()
        redis.terminate()
        redis.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
