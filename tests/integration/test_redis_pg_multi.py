"""Several `madeira serve --store redis-pg` processes on one Redis + PostgreSQL, and outages.

The module starts its own private Redis (AOF, appendfsync always) and PostgreSQL with
scripts/test-services.sh in a temp dir, whatever MADEIRA_TEST_STORE says, and stops them at the
end. Each test runs its processes in a namespace of its own.

Counts: 10,000 tasks for the kill -9 case (MULTI_TASKS), fewer for the others; on this 2-core
machine the whole file takes well under two minutes. Set MADEIRA_MULTI_TASKS to scale the first
case down on a slower machine. Every wait is bounded.
"""

import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from urllib.parse import urlparse

import pytest

sys.path.insert(0, os.path.dirname(__file__))

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SERVICES = os.path.join(REPO, "scripts", "test-services.sh")
MULTI_TASKS = int(os.environ.get("MADEIRA_MULTI_TASKS", "10000"))
QUEUE = "multi"
# Lease expiry and retries fast enough for a test: a task leased by a killed process comes
# back within ~2 s, and every retry is a quick one.
CONFIG = """
[retry.default]
fast_retries = 3
fast_retry_concurrency = 100000
initial = "100ms"
multiplier = 1.0
max = "200ms"
jitter = 0.0
"""
TASK_TIMEOUT_MS = 2000


def madeira_bin():
    return os.path.abspath(os.environ.get("MADEIRA_BIN", os.path.join(REPO, "build", "madeira")))


def wait_until(what, fn, timeout, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(step)
    raise AssertionError("timed out after %ss waiting for %s (queue depths: %s)"
                         % (timeout, what, LAST_DEPTHS))


class Http:
    """One keep-alive connection (a thread's own); reconnects after an error."""

    def __init__(self, port, timeout=10.0):
        self.port = port
        self.timeout = timeout
        self.conn = None

    def call(self, method, path, body=None):
        """(status, headers dict, json or None); raises OSError/HTTPException on a lost server."""
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else {}
        try:
            self.conn.request(method, path, body=data, headers=headers)
            r = self.conn.getresponse()
            raw = r.read()
        except (OSError, http.client.HTTPException):
            self.close()
            raise
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        return r.status, {k.lower(): v for k, v in r.getheaders()}, parsed

    def close(self):
        if self.conn is not None:
            self.conn.close()
        self.conn = None


class Services:
    def __init__(self, root):
        self.dir = root
        out = subprocess.run(["bash", SERVICES, "start", root], check=True, capture_output=True,
                             text=True, timeout=120)
        env = dict(line.split("=", 1) for line in out.stdout.split() if "=" in line)
        self.redis_url = env["MADEIRA_TEST_REDIS_URL"]
        self.database_url = env["MADEIRA_TEST_DATABASE_URL"]
        self.redis_port = urlparse(self.redis_url).port

    def redis_cli(self, *args):
        return subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(self.redis_port)]
                              + list(args), capture_output=True, text=True, timeout=30).stdout

    def kill_redis(self):
        pidfile = os.path.join(self.dir, "redis", "redis.pid")
        with open(pidfile) as f:
            pid = int(f.read().strip())
        os.kill(pid, signal.SIGKILL)
        wait_until("redis-server to die", lambda: not os.path.exists("/proc/%d" % pid), 10)
        os.unlink(pidfile)

    def start_redis(self):
        """Again on the same dir, port and AOF (what test-services.sh does)."""
        rdir = os.path.join(self.dir, "redis")
        subprocess.run(["redis-server", "--bind", "127.0.0.1", "--port", str(self.redis_port),
                        "--dir", rdir, "--appendonly", "yes", "--appendfsync", "always",
                        "--daemonize", "yes", "--pidfile", os.path.join(rdir, "redis.pid"),
                        "--logfile", os.path.join(rdir, "redis.log"), "--save", ""],
                       check=True, timeout=30)
        wait_until("redis to answer", lambda: "PONG" in self.redis_cli("ping"), 10)

    def stop(self):
        subprocess.run(["bash", SERVICES, "stop", self.dir], timeout=120)


@pytest.fixture(scope="module")
def services():
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is not installed (apt-get install redis-server postgresql)")
    # Short: PostgreSQL's socket path must fit in 107 bytes.
    root = tempfile.mkdtemp(prefix="mdr-multi-", dir="/tmp")
    s = Services(root)
    try:
        yield s
    finally:
        s.stop()
        shutil.rmtree(root, ignore_errors=True)


class Proc:
    """One `madeira serve --store redis-pg` process."""

    def __init__(self, services, namespace, log_dir, args=()):
        cfg = os.path.join(log_dir, "config.toml")
        with open(cfg, "w") as f:
            f.write(CONFIG)
        self.log = os.path.join(log_dir, "serve-%s.log" % uuid.uuid4().hex[:6])
        env = {k: v for k, v in os.environ.items() if not k.startswith("MADEIRA_")}
        self.stderr = open(self.log, "wb")
        self.proc = subprocess.Popen(
            [madeira_bin(), "serve", "--listen", "127.0.0.1:0", "--store", "redis-pg",
             "--redis-url", services.redis_url, "--database-url", services.database_url,
             "--namespace", namespace, "--config", cfg, "--data-dir", log_dir, *args],
            stdout=subprocess.PIPE, stderr=self.stderr, env=env)
        line = b""
        deadline = time.monotonic() + 20
        while not line.startswith(b"listening on ") and time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line and self.proc.poll() is not None:
                raise RuntimeError("serve exited: " + open(self.log).read())
        self.port = int(line.decode().strip().rsplit(":", 1)[1])
        http = Http(self.port)
        wait_until("healthz", lambda: http.call("GET", "/healthz")[0] == 200, 10)
        http.close()

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.stderr.close()


@pytest.fixture
def cluster(services, tmp_path):
    """start(n, args) -> n processes in a fresh namespace; all stopped at the end."""
    namespace = "mp_" + uuid.uuid4().hex[:12]
    procs = []

    def start(n, args=()):
        new = [Proc(services, namespace, str(tmp_path), args) for _ in range(n)]
        procs.extend(new)
        return new

    start.namespace = namespace
    yield start
    for p in procs:
        p.stop()


def envelope(i, prefix):
    return {"task_id": "%s-%05d" % (prefix, i), "task_type": "multi.work", "queue": QUEUE,
            "payload_version": 1, "payload": {"i": i}, "timeout_ms": TASK_TIMEOUT_MS}


def submit_all(ports, ids_prefix, n, accepted, batch=500, deadline_s=60):
    """Submits n tasks in batches, round-robin over ports, retrying 503s and lost connections
    with the same task ids until every one is accepted (2xx, duplicate included)."""
    clients = [Http(p) for p in ports]
    deadline = time.monotonic() + deadline_s
    k = 0
    for start in range(0, n, batch):
        body = {"tasks": [envelope(i, ids_prefix) for i in range(start, min(n, start + batch))]}
        while True:
            assert time.monotonic() < deadline, "submits not accepted in time"
            c = clients[k % len(clients)]
            k += 1
            try:
                status, _, out = c.call("POST", "/v1/tasks/batch", body)
            except (OSError, http.client.HTTPException):
                continue
            if status == 200:
                errors = [r["error"] for r in out["results"] if "error" in r]
                assert all(e["code"] == "unavailable" for e in errors), errors[:3]
                if not errors:
                    for r in out["results"]:
                        accepted.add(r["task_id"])
                    break
            else:
                assert status == 503, (status, out)
            time.sleep(0.1)
    for c in clients:
        c.close()


class Workers:
    """Threads leasing (long-poll) and batch-acking over plain HTTP, each bound to a process and
    moving to the next live one when its process is gone. Records every ack that answered
    succeeded, and acks whose answer was lost (the process died mid-request)."""

    def __init__(self, ports, per_port=2, max_tasks=50):
        self.ports = list(ports)
        self.dead_ports = set()
        self.lock = threading.RLock()
        self.acked = {}  # task_id -> number of acks that answered "succeeded"
        self.uncertain = set()  # acks sent whose answer never came
        self.lease_errors = []
        self.stop = threading.Event()
        self.max_tasks = max_tasks
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True)
                        for i in range(len(self.ports) * per_port)]
        for t in self.threads:
            t.start()

    def total_acked(self):
        with self.lock:
            return len(self.acked)

    def _port_for(self, i):
        with self.lock:
            live = [p for p in self.ports if p not in self.dead_ports]
        return live[i % len(live)]

    def _run(self, i):
        port = self._port_for(i)
        c = Http(port)
        while not self.stop.is_set():
            with self.lock:
                if port in self.dead_ports:
                    c.close()
                    port = self._port_for(i)
                    c = Http(port)
            try:
                status, _, out = c.call("POST", "/v1/leases", {
                    "worker_id": "w%d" % i, "queues": [QUEUE], "max_tasks": self.max_tasks,
                    "wait_ms": 500})
            except (OSError, http.client.HTTPException):
                time.sleep(0.05)
                continue
            if status != 200:
                with self.lock:
                    self.lease_errors.append(status)
                time.sleep(0.05)
                continue
            leases = out["leases"]
            if not leases:
                continue
            acks = {"acks": [{"lease_id": l["lease_id"]} for l in leases]}
            by_lease = {l["lease_id"]: l["task"]["task_id"] for l in leases}
            for _ in range(100):  # an outage (503) is retried; bounded
                try:
                    status, _, out = c.call("POST", "/v1/leases/ack", acks)
                except (OSError, http.client.HTTPException):
                    with self.lock:
                        self.uncertain.update(by_lease.values())
                    break
                if status == 200:
                    retry = []
                    with self.lock:
                        for r in out["results"]:
                            tid = by_lease[r["lease_id"]]
                            if r.get("status") == "succeeded":
                                self.acked[tid] = self.acked.get(tid, 0) + 1
                            elif r["error"]["code"] == "unavailable":
                                # Redis may have applied it and gone before answering: the
                                # retry may find the lease lost. Either outcome is right.
                                self.uncertain.add(tid)
                                retry.append({"lease_id": r["lease_id"]})
                    if not retry:
                        break
                    acks = {"acks": retry}
                time.sleep(0.1)
        c.close()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=15)


def succeeded_ids(port, prefix):
    """Every succeeded task of the test (search pages from PostgreSQL)."""
    c = Http(port, timeout=30)
    out, cursor = set(), None
    while True:
        path = "/v1/tasks?status=succeeded&queue=%s&limit=1000" % QUEUE
        if cursor:
            path += "&cursor=%s" % cursor
        status, _, page = c.call("GET", path)
        assert status == 200, page
        out.update(t["task_id"] for t in page["tasks"] if t["task_id"].startswith(prefix))
        cursor = page.get("next_cursor")
        if not cursor:
            break
    c.close()
    return out


def check_exactly_once(workers, accepted, port, prefix):
    for tid, n in workers.acked.items():
        assert n == 1, "task %s acked %d times" % (tid, n)
    # The record (PostgreSQL) may lag by what a killed process had read from the outbox and
    # not copied: a live process takes that over within seconds.
    done = set()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done = succeeded_ids(port, prefix)
        if accepted <= done:
            break
        time.sleep(0.5)
    missing = accepted - done
    assert not missing, "%d accepted tasks did not succeed, e.g. %s" % (
        len(missing), sorted(missing)[:5])
    not_acked = {t for t in accepted if t not in workers.acked} - workers.uncertain
    assert not not_acked, "succeeded without an ack answered: %s" % sorted(not_acked)[:5]


def test_three_processes_kill9_one_every_task_succeeds_exactly_once(cluster):
    procs = cluster(3)
    ports = [p.port for p in procs]
    accepted = set()
    submit_all(ports, "k", MULTI_TASKS, accepted)
    assert len(accepted) == MULTI_TASKS
    # Workers start once every task is in, so the kill lands mid-drain however fast it is.
    workers = Workers(ports)
    wait_until("a third of the tasks done", lambda: workers.total_acked() >= MULTI_TASKS // 3, 60)
    victim = procs[1]
    victim.kill9()
    with workers.lock:
        workers.dead_ports.add(victim.port)
    assert workers.total_acked() < MULTI_TASKS, "drained before the kill: scale up"
    wait_until("every task done", lambda: not _pending(ports[0]), 90, step=0.2)
    workers.finish()
    check_exactly_once(workers, accepted, ports[0], "k-")


def _pending(port):
    """Tasks of the queue not yet succeeded (from the depth gauges via /metrics)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    left = 0
    global LAST_DEPTHS
    LAST_DEPTHS = []
    for line in text.splitlines():
        if line.startswith("madeira_queue_depth{") and 'queue="%s"' % QUEUE in line:
            LAST_DEPTHS.append(line)
            if 'state="succeeded"' not in line and 'state="cancelled"' not in line:
                left += float(line.rsplit(" ", 1)[1])
    return left


LAST_DEPTHS = []


def test_redis_restart_mid_run_loses_nothing_and_outage_answers(services, cluster):
    n = min(MULTI_TASKS, 3000)
    procs = cluster(2)
    ports = [p.port for p in procs]
    accepted = set()
    workers = Workers(ports, max_tasks=20)
    producer = threading.Thread(target=submit_all, args=(ports, "r", n, accepted),
                                kwargs={"batch": 100}, daemon=True)
    producer.start()
    wait_until("some tasks done", lambda: workers.total_acked() >= n // 5, 60)
    services.kill_redis()

    # While Redis is away: not ready, submits 503 with Retry-After, leases empty (no error).
    c = Http(ports[0])
    status, _, _ = c.call("GET", "/readyz")
    assert status == 503
    status, headers, body = c.call("POST", "/v1/tasks", envelope(0, "outage"))
    assert status == 503, body
    assert headers.get("retry-after") == "1"
    assert body["error"]["code"] == "unavailable"
    status, _, body = c.call("POST", "/v1/leases", {"worker_id": "probe", "queues": [QUEUE],
                                                    "max_tasks": 5, "wait_ms": 0})
    assert status == 200 and body["leases"] == [], body
    time.sleep(0.5)

    services.start_redis()
    wait_until("ready again", lambda: c.call("GET", "/readyz")[0] == 200, 15)
    c.close()
    producer.join(timeout=60)
    assert not producer.is_alive()
    assert len(accepted) == n
    wait_until("every task acked", lambda: not _pending(ports[0]), 60, step=0.2)
    workers.finish()
    check_exactly_once(workers, accepted, ports[0], "r-")
    assert all(p.proc.poll() is None for p in procs), "a process exited"


def test_postgres_outage_refuses_submits_and_resumes(services, cluster):
    procs = cluster(1)
    c = Http(procs[0].port)
    for i in (0, 1):  # leases that outlast the outage and its recovery
        status, _, _ = c.call("POST", "/v1/tasks", dict(envelope(i, "pgo"), timeout_ms=120000))
        assert status == 202
    pg = PgControl(services)
    pg.stop()
    try:
        assert c.call("GET", "/readyz")[0] == 503
        status, headers, body = c.call("POST", "/v1/tasks", envelope(2, "pgo"))
        assert status == 503, body
        assert headers.get("retry-after") == "1"
        # What was accepted is still handed out and completed; the record catches up later.
        status, _, body = c.call("POST", "/v1/leases", {"worker_id": "w", "queues": [QUEUE],
                                                        "max_tasks": 5, "wait_ms": 0})
        assert status == 200
        assert [l["task"]["task_id"] for l in body["leases"]] == ["pgo-00000", "pgo-00001"]
        status, _, _ = c.call("POST", "/v1/leases/%s/ack" % body["leases"][0]["lease_id"], {})
        assert status == 200
    finally:
        pg.start()
    wait_until("ready again", lambda: c.call("GET", "/readyz")[0] == 200, 15)
    wait_until("submits accepted again",
               lambda: c.call("POST", "/v1/tasks", envelope(2, "pgo"))[0] == 202, 15)
    status, _, task = c.call("GET", "/v1/tasks/pgo-00000")
    assert status == 200 and task["status"] == "succeeded"
    assert "pgo-00000" in succeeded_ids(procs[0].port, "pgo-")
    # The lease left running reaches the record too, though PostgreSQL was away when it was
    # made (the process held it meanwhile: no outbox entry carries it).
    status, _, page = c.call("GET", "/v1/tasks?status=running&queue=%s" % QUEUE)
    assert status == 200, page
    assert [t["task_id"] for t in page["tasks"] if t["task_id"].startswith("pgo-")] == \
        ["pgo-00001"]
    c.close()


class PgControl:
    """Stops and starts the private PostgreSQL (as test-services.sh runs it)."""

    def __init__(self, services):
        bins = sorted(d for d in os.listdir("/usr/lib/postgresql"))
        self.bin = "/usr/lib/postgresql/%s/bin" % bins[-1]
        self.data = os.path.join(services.dir, "pg", "data")
        self.sock = os.path.join(services.dir, "pgsock")
        self.port = urlparse(services.database_url).port
        with open(os.path.join(services.dir, "pg", "user")) as f:
            self.user = f.read().strip()

    def _run(self, *args):
        cmd = [os.path.join(self.bin, "pg_ctl"), "-D", self.data] + list(args)
        if os.getuid() == 0:
            cmd = ["runuser", "-u", self.user, "--"] + cmd
        subprocess.run(cmd, check=True, capture_output=True, timeout=60)

    def stop(self):
        self._run("-m", "immediate", "-w", "-t", "30", "stop")

    def start(self):
        self._run("-l", os.path.join(self.sock, "postgres.log"), "-w", "-t", "30", "-o",
                  "-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories=%s "
                  "-c fsync=on" % (self.port, self.sock), "start")


def test_flushall_then_recover_brings_back_every_non_terminal_task(services, cluster):
    n = 300
    procs = cluster(2)
    ports = [p.port for p in procs]
    c = Http(ports[0])
    accepted = set()
    submit_all(ports, "f", n, accepted, batch=100)
    # Some succeed, some are running (leased, never acked), one is scheduled, one dead.
    status, _, body = c.call("POST", "/v1/leases", {"worker_id": "w", "queues": [QUEUE],
                                                    "max_tasks": 100, "wait_ms": 0})
    leases = body["leases"]
    assert status == 200 and len(leases) == 100
    done = set()
    for l in leases[:50]:
        assert c.call("POST", "/v1/leases/%s/ack" % l["lease_id"], {})[0] == 200
        done.add(l["task"]["task_id"])
    running = {l["task"]["task_id"] for l in leases[50:]}
    later = dict(envelope(0, "later"), schedule_time=time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600)))
    status, _, body = c.call("POST", "/v1/tasks", later)
    assert status == 202, body
    # Acks are answered once Redis has them; their record follows within moments. A search
    # waits for it (a submit's answer does not: it waits for its own task's row only).
    assert c.call("GET", "/v1/tasks?limit=1")[0] == 200
    for p in procs:
        p.kill9()

    services.redis_cli("FLUSHALL")
    # serve refuses a Redis that lost what PostgreSQL recorded.
    refused = subprocess.run(
        [madeira_bin(), "serve", "--listen", "127.0.0.1:0", "--store", "redis-pg",
         "--redis-url", services.redis_url, "--database-url", services.database_url,
         "--namespace", cluster.namespace], capture_output=True, text=True, timeout=30)
    assert refused.returncode != 0
    assert "madeira recover" in refused.stderr, refused.stderr
    rec = subprocess.run(
        [madeira_bin(), "recover", "--store", "redis-pg", "--redis-url", services.redis_url,
         "--database-url", services.database_url, "--namespace", cluster.namespace],
        capture_output=True, text=True, timeout=60)
    assert rec.returncode == 0, rec.stderr
    assert "recovered %d non-terminal tasks" % (n - 50 + 1) in rec.stdout, rec.stdout
    assert "(50 were running" in rec.stdout, rec.stdout

    procs = cluster(1)
    c = Http(procs[0].port)
    for tid in sorted(accepted):
        status, _, task = c.call("GET", "/v1/tasks/" + tid)
        assert status == 200, (tid, task)
        want = "succeeded" if tid in done else "pending"  # running ones are pending again
        assert task["status"] == want, (tid, task["status"])
    status, _, task = c.call("GET", "/v1/tasks/later-00000")
    assert status == 200 and task["status"] == "scheduled"
    leased = set()
    for _ in range(10):
        status, _, body = c.call("POST", "/v1/leases", {"worker_id": "w2", "queues": [QUEUE],
                                                        "max_tasks": 100, "wait_ms": 0})
        assert status == 200
        if not body["leases"]:
            break
        leased.update(l["task"]["task_id"] for l in body["leases"])
    assert leased == accepted - done
    assert running <= leased
    # An ended task's id is still taken: a resubmit is a duplicate.
    tid = sorted(done)[0]
    status, _, body = c.call("POST", "/v1/tasks", envelope(int(tid.split("-")[1]), "f"))
    assert status == 200 and body["duplicate"] is True, body
    c.close()


def test_a_scheduler_process_promotes_and_expires_what_an_api_process_took(cluster):
    """--role api takes submits and leases but runs no timers; --role scheduler runs them for
    work it never saw: it hears of each due time the scripts make (a delayed task, a lease
    deadline) with the wake-ups, and arms its timer for it."""
    api = cluster(1, ["--role", "api"])[0]
    cluster(1, ["--role", "scheduler"])
    c = Http(api.port)

    def wait_for_status(tid, wanted, limit_s):
        t0 = time.monotonic()
        while time.monotonic() - t0 < limit_s:
            status, _, task = c.call("GET", "/v1/tasks/" + tid)
            assert status == 200, task
            if task["status"] in wanted:
                return time.monotonic() - t0, task
            time.sleep(0.02)
        raise AssertionError("%s still %s after %s s" % (tid, task["status"], limit_s))

    due = time.time() + 1.5
    later = dict(envelope(0, "due"), schedule_time=time.strftime(
        "%Y-%m-%dT%H:%M:%S", time.gmtime(due)) + ".%03dZ" % int((due % 1) * 1000))
    status, _, body = c.call("POST", "/v1/tasks", later)
    assert status == 202 and body["status"] == "scheduled", body
    waited, _ = wait_for_status("due-00000", {"pending"}, 10)
    assert waited < 1.5 + 0.5, waited  # promoted on time, not at a 10 s timer tick

    status, _, body = c.call("POST", "/v1/leases", {"worker_id": "w", "queues": [QUEUE],
                                                    "max_tasks": 1, "wait_ms": 0,
                                                    "lease_ms": 500})
    assert status == 200 and len(body["leases"]) == 1, body
    waited, task = wait_for_status("due-00000", {"pending", "retrying"}, 10)
    assert waited < 0.5 + 0.5, waited  # the lease expired on time, never acked
    assert task["attempts"] == 1, task
    c.close()


def test_recover_refuses_while_a_serve_of_the_namespace_is_running(services, cluster):
    procs = cluster(1)
    status, _, body = Http(procs[0].port).call("POST", "/v1/tasks", envelope(0, "r"))
    assert status == 202, body
    recover = [madeira_bin(), "recover", "--store", "redis-pg", "--redis-url", services.redis_url,
               "--database-url", services.database_url, "--namespace", cluster.namespace]
    refused = subprocess.run(recover, capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0
    assert "still connected" in refused.stderr and "stop every madeira serve" in refused.stderr, \
        refused.stderr
    assert refused.stdout == ""
    procs[0].kill9()
    rec = subprocess.run(recover, capture_output=True, text=True, timeout=60)
    assert rec.returncode == 0, rec.stderr
    # Redis lost nothing: recover adds nothing (it never overwrites).
    assert "recovered 0 non-terminal tasks" in rec.stdout, rec.stdout


def test_long_poll_in_one_process_wakes_on_a_submit_through_another(cluster):
    a, b = cluster(2)
    result = {}

    def poll():
        c = Http(a.port, timeout=30)
        t0 = time.monotonic()
        result["resp"] = c.call("POST", "/v1/leases", {"worker_id": "lp", "queues": ["wake"],
                                                       "max_tasks": 1, "wait_ms": 20000})
        result["answered"] = time.monotonic()
        result["t0"] = t0
        c.close()

    t = threading.Thread(target=poll, daemon=True)
    t.start()
    time.sleep(0.5)  # parked on A
    assert "resp" not in result
    c = Http(b.port)
    submitted = time.monotonic()
    status, _, _ = c.call("POST", "/v1/tasks", dict(envelope(0, "wake"), queue="wake"))
    assert status == 202
    c.close()
    t.join(timeout=25)
    status, _, body = result["resp"]
    assert status == 200 and [l["task"]["task_id"] for l in body["leases"]] == ["wake-00000"]
    assert result["answered"] - submitted < 1.0, result["answered"] - submitted


def test_a_schema_registered_through_one_process_holds_in_the_others_at_once(cluster):
    a, b = cluster(2)
    ca, cb = Http(a.port), Http(b.port)
    task = {"task_type": "multi.schema", "queue": QUEUE, "payload_version": 1}
    # B has read the (empty) set of schemas already: no schema, no check.
    assert cb.call("POST", "/v1/tasks", dict(task, payload={"order_id": "x"}))[0] == 202
    schema = {"type": "object", "required": ["order_id"],
              "properties": {"order_id": {"type": "integer"}}}
    status, _, body = ca.call("PUT", "/v1/schemas/multi.schema/1", schema)
    assert status in (200, 201, 204), body
    # The first submit through B after A's answer is held to it (B re-reads the schemas every
    # second, but does not wait for that).
    status, _, body = cb.call("POST", "/v1/tasks", dict(task, payload={"order_id": "not a number"}))
    assert status == 400, body
    assert body["error"]["code"] == "schema_violation", body
    # A schema replaced through A holds through B at once too: 7 was valid until now.
    stricter = dict(schema, properties={"order_id": {"type": "integer", "minimum": 10}})
    status, _, body = ca.call("PUT", "/v1/schemas/multi.schema/1", stricter)
    assert status in (200, 201, 204), body
    status, _, body = cb.call("POST", "/v1/tasks/batch", {"tasks": [
        dict(task, payload={"order_id": 7}), dict(task, payload={"order_id": 12})]})
    assert status == 200, body
    first, second = body["results"]
    assert first["error"]["code"] == "schema_violation", body
    assert second["status"] == "pending", body
    assert cb.call("GET", "/v1/tasks/" + second["task_id"])[0] == 200
    ca.close()
    cb.close()
