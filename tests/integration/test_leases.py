"""The worker protocol of SPEC §3: lease, long-poll, ordering, routing, ack/fail/extend, fencing."""

import threading
import time
import urllib.parse

import pytest

from client import envelope, parse_rfc3339, uid


def test_empty_queue_answers_at_once_with_no_leases(api, q):
    t0 = time.monotonic()
    assert api.lease([q], wait_ms=0) == []
    assert time.monotonic() - t0 < 1.0


def test_long_poll_times_out_with_no_leases(api, q):
    t0 = time.monotonic()
    assert api.lease([q], wait_ms=300) == []
    elapsed = time.monotonic() - t0
    assert 0.25 <= elapsed < 3.0, elapsed


def test_long_poll_wakes_on_submit(api, q):
    out = {}

    def park():
        t0 = time.monotonic()
        out["leases"] = api.lease([q], wait_ms=5000)
        out["done"] = time.monotonic()
        out["waited"] = out["done"] - t0

    th = threading.Thread(target=park)
    th.start()
    time.sleep(0.3)  # let the lease park before the task exists
    submitted = time.monotonic()
    tid = api.submit_ok(envelope(q))
    th.join(timeout=10)
    assert not th.is_alive()
    assert [l["task"]["task_id"] for l in out["leases"]] == [tid], "woke without the task"
    after_submit = out["done"] - submitted
    print("long-poll answered %.1f ms after submit" % (after_submit * 1000))
    assert after_submit < 1.0, after_submit
    assert out["waited"] < 4.5, "it timed out instead of waking"


def test_lease_shape_and_ack(api, q):
    tid = api.submit_ok(envelope(q, timeout_ms=60000))
    lease = api.lease_one(q)
    assert lease["lease_id"] and lease["deadline"]
    task = lease["task"]
    assert task["task_id"] == tid and task["attempt"] == 1 and task["payload"] == {"n": 1}
    remaining = parse_rfc3339(lease["deadline"]) - time.time()
    assert 50 < remaining <= 61, "default lease is timeout_ms"
    assert api.task(tid)["status"] == "running"
    r = api.ack(lease["lease_id"], {"done": 1})
    assert r.status == 200, r
    assert api.task(tid)["status"] == "succeeded"
    r = api.ack(lease["lease_id"])
    assert r.status == 409 and r.code == "lease_lost", "a second ack must be fenced: %r" % r


def test_lease_of_a_task_id_with_every_allowed_character_acks_percent_encoded(api, q):
    # SDKs put the lease id into the path escaped (encodeURIComponent turns ':' into %3A); the
    # lease id may carry the task id (redis-pg), so every character a task id may hold counts.
    tid = "Ord:%s.a_b-C" % uid()
    assert api.submit_ok(envelope(q, task_id=tid)) == tid
    lease = api.lease_one(q)
    assert lease["task"]["task_id"] == tid
    escaped = urllib.parse.quote(lease["lease_id"], safe="")
    r = api.post("/v1/leases/%s/extend" % escaped, {"extend_ms": 1000})
    assert r.status == 200, r
    r = api.post("/v1/leases/%s/ack" % escaped, {})
    assert r.status == 200, r
    assert api.task(tid)["status"] == "succeeded"


def test_max_tasks(api, q):
    for _ in range(5):
        api.submit_ok(envelope(q))
    assert len(api.lease([q], max_tasks=3)) == 3
    assert len(api.lease([q], max_tasks=3)) == 2


def test_priority_higher_first_then_fifo(api, q):
    low = api.submit_ok(envelope(q, priority=1))
    hi1 = api.submit_ok(envelope(q, priority=500))
    mid = api.submit_ok(envelope(q))
    hi2 = api.submit_ok(envelope(q, priority=500))
    order = [api.lease_one(q, wait_ms=0)["task"]["task_id"] for _ in range(4)]
    assert order == [hi1, hi2, mid, low]


def test_version_aware_routing(api, q):
    v2 = api.submit_ok(envelope(q, task_type="t", payload_version=2))
    v1 = api.submit_ok(envelope(q, task_type="t", payload_version=1))
    other = api.submit_ok(envelope(q, task_type="u"))
    got = api.lease([q], max_tasks=10, task_types={"t": [1]})
    assert [l["task"]["task_id"] for l in got] == [v1], "an old worker never receives a v2"
    assert api.lease([q], max_tasks=10, task_types={"t": [1]}) == []
    got = api.lease([q], max_tasks=10, task_types={"t": [1, 2]})
    assert [l["task"]["task_id"] for l in got] == [v2]
    assert api.lease_one(q)["task"]["task_id"] == other


def test_lease_expiry_then_stale_ack_is_lease_lost(api, q):
    tid = api.submit_ok(envelope(q))
    stale = api.lease_one(q, lease_ms=100, worker_id="slow")
    deadline = time.monotonic() + 5
    while True:  # bounded poll until the server records the expiry
        attempts = api.attempts(tid)
        if attempts and attempts[0]["outcome"] == "lease_expired":
            break
        assert time.monotonic() < deadline, "lease never expired: %r" % attempts
        time.sleep(0.02)
    fresh = api.lease_one(q, worker_id="fast")
    assert fresh["task"]["task_id"] == tid and fresh["task"]["attempt"] == 2
    r = api.ack(stale["lease_id"])
    assert r.status == 409 and r.code == "lease_lost", r
    r = api.post("/v1/leases/%s/extend" % stale["lease_id"], {"extend_ms": 1000})
    assert r.status == 409 and r.code == "lease_lost", r
    assert api.fail(stale["lease_id"]).status == 409
    assert api.ack(fresh["lease_id"]).status == 200
    t = api.task(tid)
    assert t["status"] == "succeeded" and t["retry_count"] == 1


def test_extend_never_past_timeout(api, q):
    api.submit_ok(envelope(q, timeout_ms=2000))
    lease = api.lease_one(q, lease_ms=500)
    started = time.time()
    r = api.post("/v1/leases/%s/extend" % lease["lease_id"], {"extend_ms": 1000})
    assert r.status == 200, r
    assert parse_rfc3339(r.json["deadline"]) > parse_rfc3339(lease["deadline"])
    r = api.post("/v1/leases/%s/extend" % lease["lease_id"], {"extend_ms": 3_600_000})
    assert r.status == 200, r
    assert parse_rfc3339(r.json["deadline"]) <= started + 2.0 + 0.05
    api.ack(lease["lease_id"])


def test_unknown_lease_is_lease_lost(api):
    r = api.ack("no-such-lease")
    assert r.status in (404, 409) and r.code in ("lease_lost", "not_found"), r


class TestFail:
    def test_fast_retry_is_pending_at_once(self, api, q):
        tid = api.submit_ok(envelope(q))
        r = api.fail(api.lease_one(q)["lease_id"], retry="fast")
        assert r.status == 200 and r.json["status"] == "pending", r
        t = api.task(tid)
        assert t["status"] == "pending" and t["retry_count"] == 1
        assert t["last_error"]["message"] == "boom"
        assert api.lease_one(q, wait_ms=0)["task"]["attempt"] == 2

    def test_never_is_dead(self, api, q):
        tid = api.submit_ok(envelope(q))
        r = api.fail(api.lease_one(q)["lease_id"], retry="never")
        assert r.json["status"] == "dead", r
        assert api.task(tid)["status"] == "dead"

    def test_backoff_waits_with_default_policy(self, api, q):
        tid = api.submit_ok(envelope(q))
        r = api.fail(api.lease_one(q)["lease_id"], retry="backoff")
        assert r.json["status"] == "retrying", r
        delay = parse_rfc3339(r.json["next_attempt_at"]) - time.time()
        assert 30 * 0.8 - 1 <= delay <= 30 * 1.2 + 1, "initial 30 s ± 20 %%: %.1f" % delay
        t = api.task(tid)
        assert t["status"] == "retrying" and t["retry_count"] == 1
        assert api.lease([q]) == []

    def test_retry_after_ms_replaces_delay(self, api, q):
        tid = api.submit_ok(envelope(q))
        r = api.fail(api.lease_one(q)["lease_id"], retry="backoff", retry_after_ms=0)
        assert r.json["status"] in ("retrying", "pending"), r
        lease = api.lease_one(q, wait_ms=3000)
        assert lease["task"]["task_id"] == tid and lease["task"]["retry_count"] == 1

    def test_max_retries_3_allows_4_attempts(self, api, q):
        tid = api.submit_ok(envelope(q, max_retries=3))
        statuses = []
        for _ in range(4):
            lease = api.lease_one(q, wait_ms=3000)
            r = api.fail(lease["lease_id"], retry="backoff", retry_after_ms=0)
            statuses.append(r.json["status"])
        assert statuses[-1] == "dead" and "dead" not in statuses[:-1], statuses
        t = api.task(tid)
        assert t["status"] == "dead" and t["retry_count"] == 3 and t["attempts"] == 4

    def test_max_retries_0_dead_after_one_failure(self, api, q):
        tid = api.submit_ok(envelope(q, max_retries=0))
        r = api.fail(api.lease_one(q)["lease_id"])
        assert r.json["status"] == "dead", r
        assert api.task(tid)["retry_count"] == 0

    def test_fast_retries_spent_fall_to_backoff(self, api, q):
        tid = api.submit_ok(envelope(q))
        for _ in range(2):
            assert api.fail(api.lease_one(q)["lease_id"], retry="fast").json["status"] == "pending"
        r = api.fail(api.lease_one(q)["lease_id"], retry="fast")
        assert r.json["status"] == "retrying", "fast_retries = 2 per task: %r" % r
        assert api.task(tid)["retry_count"] == 3

    @pytest.mark.parametrize("body", [{}, {"retry": "sometimes", "error": {"type": "x", "message": "y"}}])
    def test_bad_fail_body_is_400(self, api, q, body):
        tid = api.submit_ok(envelope(q))
        lease = api.lease_one(q)
        r = api.post("/v1/leases/%s/fail" % lease["lease_id"], body)
        assert r.status == 400 and r.code, r
        assert api.task(tid)["status"] == "running", "bad input changes nothing"
        api.ack(lease["lease_id"])


def test_batch_ack(api, q):
    a = api.submit_ok(envelope(q))
    b = api.submit_ok(envelope(q))
    leases = api.lease([q], max_tasks=2)
    acks = [{"lease_id": l["lease_id"], "result": {"i": i}} for i, l in enumerate(leases)]
    acks.append({"lease_id": "bogus"})
    r = api.post("/v1/leases/ack", {"acks": acks})
    assert r.status == 200, r
    results = r.json["results"]
    assert len(results) == 3
    assert "error" not in results[0] and "error" not in results[1]
    assert results[2]["error"]["code"] in ("lease_lost", "not_found")
    assert api.task(a)["status"] == api.task(b)["status"] == "succeeded"


def test_heartbeat_feeds_liveness_metric(api):
    wid = uid("worker")
    r = api.post("/v1/workers/heartbeat", {"worker_id": wid, "language": "python",
                                           "sdk_version": "0.1", "queues": ["default"]})
    assert r.status == 200, r
    assert 'worker_id="%s"' % wid in api.metrics()


@pytest.mark.parametrize("body,field", [
    ({"queues": ["x"]}, "worker_id"),
    ({"worker_id": "w", "queues": ["x"], "max_tasks": 0}, "max_tasks"),
    ({"worker_id": "w", "queues": ["x"], "max_tasks": 101}, "max_tasks"),
    ({"worker_id": "w", "queues": ["x"], "wait_ms": 30001}, "wait_ms"),
    ({"worker_id": "w", "queues": ["x"], "wait_ms": -1}, "wait_ms"),
    ({"worker_id": "w", "queues": ["x"], "task_types": {"t": ["1"]}}, "task_types"),
    ({"worker_id": "w", "queues": ["x"], "bogus": 1}, "bogus"),
    ({"worker_id": "w\x00", "queues": ["x"]}, "worker_id"),
], ids=["missing-worker", "max_tasks-0", "max_tasks-101", "wait_ms-high", "wait_ms-negative",
        "task_types-bad", "unknown-field", "worker-nul"])
def test_bad_lease_request_is_400(api, body, field):
    r = api.post("/v1/leases", body)
    assert r.status == 400 and r.code in ("missing_field", "invalid_field", "unknown_field"), r
    assert r.field is None or r.field.startswith(field), r
