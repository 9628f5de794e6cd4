"""Worker behaviour against a real server: routing, extends, lease loss, shutdown, heartbeat."""
import threading
import time
import urllib.request
from datetime import datetime, timezone

import pytest

from madeira import Worker
from madeira.context import TaskContext, attempt_deadline
from madeira.timefmt import format_rfc3339

from conftest import wait_until


def submit(client, queue, task_type="w.test", **extra):
    return client.submit(dict({"task_type": task_type, "queue": queue, "payload_version": 1,
                               "payload": {}}, **extra)).task_id


def terminal(client, task_id, status=("succeeded", "dead", "cancelled")):
    return wait_until(lambda: (lambda t: t if t["status"] in status else None)(client.get(task_id)),
                      timeout=20)


def intercept_extends(worker, hook):
    """Routes each of the worker's lease extensions through hook(ctx, real_extend)."""
    real_extend = worker._extend
    worker._extend = lambda ctx: hook(ctx, real_extend)


def at(wall):
    return datetime.fromtimestamp(wall, timezone.utc)


def lease_with(deadline):
    return {"lease_id": "l1", "deadline": deadline,
            "task": {"task_id": "t1", "task_type": "w.test", "payload_version": 1,
                     "payload": {}, "timeout_ms": 10000}}


# attempt_deadline(lease_deadline, lease_ms, timeout_ms, asked, received): a lease asked for at
# `asked` and read at `received` (wall seconds), lease_ms 3000, timeout_ms 10000.
ASKED, RECEIVED = 1_700_000_000.0, 1_700_000_002.0


def test_attempt_deadline_when_the_clocks_agree_is_began_plus_timeout():
    began = ASKED + 1.5            # the long poll waited 1.5 s before the task was ready
    assert attempt_deadline(at(began + 3), 3000, 10000, ASKED, RECEIVED) == \
        pytest.approx(began + 10)
    # the window's edges: 1 s before the request left, and the receipt itself
    for edge in (ASKED - 1, RECEIVED):
        assert attempt_deadline(at(edge + 3), 3000, 10000, ASKED, RECEIVED) == \
            pytest.approx(edge + 10)


def test_attempt_deadline_with_the_server_an_hour_behind_is_timed_from_the_receipt():
    began = ASKED + 1.5 - 3600
    deadline = attempt_deadline(at(began + 3), 3000, 10000, ASKED, RECEIVED)
    assert deadline == pytest.approx(RECEIVED + 10)
    assert deadline > RECEIVED     # not already past


def test_attempt_deadline_with_the_server_an_hour_ahead_is_timed_from_the_receipt():
    began = ASKED + 1.5 + 3600
    assert attempt_deadline(at(began + 3), 3000, 10000, ASKED, RECEIVED) == \
        pytest.approx(RECEIVED + 10)
    # just outside the window on either side counts as disagreeing clocks
    for off in (ASKED - 1.01, RECEIVED + 0.01):
        assert attempt_deadline(at(off + 3), 3000, 10000, ASKED, RECEIVED) == \
            pytest.approx(RECEIVED + 10)


def test_attempt_deadline_of_an_unparseable_deadline_is_timed_from_the_receipt():
    for text in ("soon", "", "2024-01-01 00:00:00", None):
        ctx = TaskContext(lease_with(text), 3000, time.monotonic(), asked=ASKED,
                          received=RECEIVED)
        assert ctx.deadline.timestamp() == pytest.approx(RECEIVED + 10)


def test_a_server_clock_behind_by_more_than_the_timeout_does_not_cancel_at_once():
    now = time.time()
    lease = lease_with(format_rfc3339(at(now - 3600 + 3)))
    ctx = TaskContext(lease, 3000, time.monotonic())
    assert 9 < ctx.remaining() <= 10
    assert abs(ctx.deadline.timestamp() - (now + 10)) < 1


def test_versions_route_to_their_handlers(client, queue_name):
    v1 = submit(client, queue_name, payload_version=1)
    v2 = submit(client, queue_name, payload_version=2)
    v3 = submit(client, queue_name, payload_version=3)
    worker = Worker(client, queues=[queue_name], slots=2, wait_ms=500)
    worker.register("w.test", lambda ctx: {"v": 1, "seen": ctx.payload_version}, versions=[1])
    worker.register("w.test", lambda ctx: {"v": 2, "seen": ctx.payload_version}, versions=[2])
    with worker:
        assert terminal(client, v1)["result"] == {"v": 1, "seen": 1}
        assert terminal(client, v2)["result"] == {"v": 2, "seen": 2}
    # nobody handles version 3: it is never handed to this worker
    assert client.get(v3)["status"] == "pending" and client.get(v3)["attempts"] == 0


def test_extends_keep_a_long_task_alive(client, queue_name):
    tid = submit(client, queue_name, timeout_ms=10000)
    seen = {}

    def slow(ctx):
        first = ctx.lease_deadline
        time.sleep(1.2)       # four times the 300 ms lease
        seen.update(first=first, last=ctx.lease_deadline, cancelled=ctx.cancelled.is_set())
        return {"done": True}

    worker = Worker(client, queues=[queue_name], slots=1, wait_ms=500, lease_ms=300)
    worker.register("w.test", slow)
    with worker:
        task = terminal(client, tid)
    assert task["status"] == "succeeded" and task["attempts"] == 1
    assert seen["last"] > seen["first"] and not seen["cancelled"]


def test_lost_lease_is_told_to_the_handler_and_not_acked(client, queue_name):
    tid = submit(client, queue_name, timeout_ms=10000)
    contexts = []
    release = threading.Event()

    def handler(ctx):
        contexts.append(ctx)
        if ctx.attempt == 1:
            release.wait(10)
            return {"attempt": 1}
        return {"attempt": ctx.attempt}

    worker = Worker(client, queues=[queue_name], slots=2, wait_ms=500, lease_ms=300)
    worker.register("w.test", handler)
    worker._extend = lambda ctx: None        # a stalled worker: its lease lapses
    with worker:
        task = terminal(client, tid)          # the second attempt succeeds meanwhile
        assert task["result"] == {"attempt": 2}
        release.set()                         # the first attempt's late ack is fenced off
        wait_until(lambda: contexts[0].lost.is_set(), timeout=10)
    assert contexts[0].cancel_reason == "lease_lost"
    assert [a["outcome"] for a in client.attempts(tid)] == ["lease_expired", "succeeded"]
    assert client.get(tid)["result"] == {"attempt": 2}


def test_extend_409_marks_the_lease_lost(client, queue_name):
    tid = submit(client, queue_name, timeout_ms=10000)
    contexts = []
    stall = {}

    def handler(ctx):
        contexts.append(ctx)
        if ctx.attempt == 1:
            stall["until"] = time.monotonic() + 1.0
            ctx.cancelled.wait(10)
            return {"attempt": 1}
        return {"attempt": ctx.attempt}

    worker = Worker(client, queues=[queue_name], slots=2, wait_ms=500, lease_ms=300)
    worker.register("w.test", handler)

    def extend(ctx, real_extend):
        # attempt 1 misses its extends for 1 s (its 300 ms lease lapses), then extends: 409
        if ctx.attempt == 1 and time.monotonic() < stall["until"]:
            return
        real_extend(ctx)
    intercept_extends(worker, extend)
    with worker:
        wait_until(lambda: contexts and contexts[0].lost.is_set(), timeout=10)
        terminal(client, tid)
    assert contexts[0].cancel_reason == "lease_lost"
    assert worker.stats["lost"] >= 1
    assert client.get(tid)["result"] == {"attempt": 2}


def test_lease_lost_answered_past_the_deadline_is_the_deadline(client, queue_name):
    """An extend that leaves just before the deadline and is answered lease_lost after the
    server expired the lease there: the handler is told "deadline", as without the extend."""
    tid = submit(client, queue_name, timeout_ms=500, max_retries=0)
    contexts = []

    def handler(ctx):
        contexts.append(ctx)
        ctx.cancelled.wait(10)
        return {"late": True}

    worker = Worker(client, queues=[queue_name], slots=1, wait_ms=500)
    worker.register("w.test", handler)

    def extend(ctx, real_extend):
        # The request is slow to come back: its answer arrives once the server has expired the
        # lease (with max_retries 0 the task is then dead).
        wait_until(lambda: client.get(ctx.task_id)["status"] == "dead", timeout=10)
        real_extend(ctx)
    intercept_extends(worker, extend)
    with worker:
        wait_until(lambda: contexts and contexts[0].cancelled.is_set(), timeout=10)
        terminal(client, tid)
    assert contexts[0].cancel_reason == "deadline"
    assert not contexts[0].lost.is_set()
    assert [a["outcome"] for a in client.attempts(tid)] == ["lease_expired"]
    assert client.get(tid)["result"] is None


def test_a_held_extend_does_not_hold_the_deadline(client, queue_name):
    """The server is slow to answer an extend: the deadline still cancels the handler on time,
    while that extend is on its way (extends do not run on the loop that keeps deadlines)."""
    tid = submit(client, queue_name, timeout_ms=500, max_retries=0)
    contexts, held, release = [], threading.Event(), threading.Event()

    def handler(ctx):
        contexts.append(ctx)
        ctx.cancelled.wait(10)

    worker = Worker(client, queues=[queue_name], slots=1, wait_ms=500)
    worker.register("w.test", handler)

    def extend(ctx, real_extend):
        held.set()
        release.wait(20)
    intercept_extends(worker, extend)
    with worker:
        try:
            wait_until(lambda: held.is_set() and contexts and contexts[0].cancelled.is_set(),
                       timeout=5)
            assert not release.is_set()
        finally:
            release.set()
        terminal(client, tid)
    assert contexts[0].cancel_reason == "deadline"


def test_graceful_close_finishes_in_flight_work(client, queue_name):
    tid = submit(client, queue_name)
    started = threading.Event()

    def handler(ctx):
        started.set()
        time.sleep(0.5)
        return {"finished": True}

    worker = Worker(client, queues=[queue_name], slots=1, wait_ms=500, grace_period=5)
    worker.register("w.test", handler)
    worker.start()
    assert started.wait(10)
    worker.close()
    task = client.get(tid)
    assert task["status"] == "succeeded" and task["result"] == {"finished": True}


def test_close_hands_back_what_outlives_the_grace_period(client, queue_name):
    tid = submit(client, queue_name, timeout_ms=60000)
    started = threading.Event()
    told = {}

    def handler(ctx):
        started.set()
        told["cancelled"] = ctx.cancelled.wait(20)
        told["reason"] = ctx.cancel_reason
        return {"too": "late"}

    worker = Worker(client, queues=[queue_name], slots=1, wait_ms=500, grace_period=0.3)
    worker.register("w.test", handler)
    worker.start()
    assert started.wait(10)
    worker.close()
    task = client.get(tid)
    assert task["status"] in ("pending", "running")   # re-queued at once by the fast retry
    attempts = client.attempts(tid)
    assert attempts[0]["outcome"] == "failed"
    assert attempts[0]["error"]["type"] == "WorkerShutdown"
    wait_until(lambda: "reason" in told, timeout=5)
    assert told == {"cancelled": True, "reason": "shutdown"}
    assert worker.stats["handed_back"] == 1
    client.cancel(tid) if client.get(tid)["status"] != "running" else None


def test_other_errors_fail_auto_with_type_message_stack(client, queue_name):
    tid = submit(client, queue_name, max_retries=0)

    def handler(ctx):
        raise KeyError("order 7")

    worker = Worker(client, queues=[queue_name], slots=1, wait_ms=500)
    worker.register("w.test", handler)
    with worker:
        task = terminal(client, tid)
    assert task["status"] == "dead"
    assert task["last_error"]["type"] == "KeyError"
    assert "order 7" in task["last_error"]["message"]
    attempt = client.attempts(tid)[0]
    assert "Traceback" in attempt["error"]["stack"] and "KeyError" in attempt["error"]["stack"]


def test_heartbeat_reaches_the_server(client, server, queue_name):
    worker = Worker(client, queues=[queue_name], slots=1, wait_ms=200, worker_id="py-hb-test")
    worker.register("w.test", lambda ctx: None)
    with worker:
        def seen():
            with urllib.request.urlopen(server.url + "/metrics", timeout=5) as resp:
                text = resp.read().decode()
            return 'worker_id="py-hb-test"' in text and 'language="python"' in text
        wait_until(seen, timeout=10, interval=0.1)


def test_run_stops_on_sigterm(client, queue_name):
    import os
    import signal
    worker = Worker(client, queues=[queue_name], slots=1, wait_ms=200)
    worker.register("w.test", lambda ctx: None)
    threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()
    began = time.monotonic()
    worker.run()
    assert time.monotonic() - began < 5
