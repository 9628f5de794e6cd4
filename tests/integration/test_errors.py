"""Bad input of any kind gets a 4xx with a code and changes nothing (SPEC §2, §4)."""

import socket
import threading
import time
import urllib.parse

import pytest

from client import envelope, raw_exchange, rfc3339, uid

DEEPEST_OK = {"a": {"b": {"c": {"d": {"e": 1}}}}}
TOO_DEEP = {"a": {"b": {"c": {"d": {"e": {}}}}}}

# (id, overrides of a valid envelope, fields to drop, expected code, expected field)
BAD_ENVELOPES = [
    ("unknown-field", {"colour": "red"}, [], "unknown_field", "colour"),
    ("missing-task_type", {}, ["task_type"], "missing_field", "task_type"),
    ("missing-payload_version", {}, ["payload_version"], "missing_field", "payload_version"),
    ("missing-payload", {}, ["payload"], "missing_field", "payload"),
    ("priority-negative", {"priority": -1}, [], "invalid_field", "priority"),
    ("priority-1001", {"priority": 1001}, [], "invalid_field", "priority"),
    ("priority-string", {"priority": "5"}, [], "invalid_field", "priority"),
    ("priority-fraction", {"priority": 1.5}, [], "invalid_field", "priority"),
    ("timeout_ms-99", {"timeout_ms": 99}, [], "invalid_field", "timeout_ms"),
    ("timeout_ms-over-a-day", {"timeout_ms": 86_400_001}, [], "invalid_field", "timeout_ms"),
    ("timeout_ms-string", {"timeout_ms": "100"}, [], "invalid_field", "timeout_ms"),
    ("max_retries-negative", {"max_retries": -1}, [], "invalid_field", "max_retries"),
    ("max_retries-101", {"max_retries": 101}, [], "invalid_field", "max_retries"),
    ("payload_version-0", {"payload_version": 0}, [], "invalid_field", "payload_version"),
    ("payload_version-string", {"payload_version": "1"}, [], "invalid_field", "payload_version"),
    ("retry_count-1", {"retry_count": 1}, [], "invalid_field", "retry_count"),
    ("task_id-empty", {"task_id": ""}, [], "invalid_field", "task_id"),
    ("task_id-129", {"task_id": "a" * 129}, [], "invalid_field", "task_id"),
    ("task_id-space", {"task_id": "a b"}, [], "invalid_field", "task_id"),
    ("task_id-slash", {"task_id": "a/b"}, [], "invalid_field", "task_id"),
    ("task_id-number", {"task_id": 5}, [], "invalid_field", "task_id"),
    ("task_type-upper", {"task_type": "Order"}, [], "invalid_field", "task_type"),
    ("task_type-leading-dot", {"task_type": ".x"}, [], "invalid_field", "task_type"),
    ("task_type-129", {"task_type": "a" * 129}, [], "invalid_field", "task_type"),
    ("task_type-number", {"task_type": 1}, [], "invalid_field", "task_type"),
    ("queue-bang", {"queue": "q!"}, [], "invalid_field", "queue"),
    ("queue-empty", {"queue": ""}, [], "invalid_field", "queue"),
    ("payload-array", {"payload": [1]}, [], "invalid_field", "payload"),
    ("payload-string", {"payload": "x"}, [], "invalid_field", "payload"),
    ("payload-null", {"payload": None}, [], "invalid_field", "payload"),
    ("trace_id-number", {"trace_id": 5}, [], "invalid_field", "trace_id"),
    ("idempotency_key-201", {"idempotency_key": "k" * 201}, [], "invalid_field",
     "idempotency_key"),
    ("schedule_time-no-offset", {"schedule_time": "2025-09-11T12:45:00"}, [],
     "invalid_schedule_time", "schedule_time"),
    ("schedule_time-number", {"schedule_time": 1757565900}, [], "invalid_schedule_time",
     "schedule_time"),
    ("schedule_time-month-13", {"schedule_time": "2025-13-01T00:00:00Z"}, [],
     "invalid_schedule_time", "schedule_time"),
    ("schedule_time-date-only", {"schedule_time": "2025-09-11"}, [], "invalid_schedule_time",
     "schedule_time"),
    ("idempotency_key-nul", {"idempotency_key": "k\x00x"}, [], "invalid_field",
     "idempotency_key"),
    ("payload-too-deep", {"payload": TOO_DEEP}, [], "payload_too_deep", "payload"),
    ("payload-too-large", {"payload": {"s": "x" * 70000}}, [], "payload_too_large", "payload"),
]


def assert_unchanged(api, before):
    assert api.count_tasks() == before, "bad input must change nothing"


@pytest.mark.parametrize("overrides,drop,code,field",
                         [b[1:] for b in BAD_ENVELOPES], ids=[b[0] for b in BAD_ENVELOPES])
def test_bad_envelope(api, q, overrides, drop, code, field):
    env = envelope(q)
    env.update(overrides)
    for k in drop:
        env.pop(k)
    before = api.count_tasks()
    r = api.submit(env)
    assert 400 <= r.status < 500 and r.code == code, r
    assert r.json["error"]["message"], "every error has a message"
    assert r.field == field, r
    assert_unchanged(api, before)


def test_schedule_too_far(api, q):
    before = api.count_tasks()
    r = api.submit(envelope(q, schedule_time=rfc3339(time.time() + 91 * 86400)))
    assert r.status == 400 and r.code == "schedule_too_far", r
    assert_unchanged(api, before)


@pytest.mark.parametrize("overrides", [
    {"priority": 0}, {"priority": 1000}, {"timeout_ms": 100}, {"timeout_ms": 86_400_000},
    {"max_retries": 0}, {"max_retries": 100}, {"retry_count": 0}, {"task_id": "A" * 128},
    {"task_id": "a.b_c:d-E9"}, {"task_type": "a" * 128}, {"payload": DEEPEST_OK},
    {"schedule_time": "2025-09-11T12:45:00.123456+08:00"}, {"idempotency_key": "k" * 200},
], ids=["priority-0", "priority-1000", "timeout-100", "timeout-day", "retries-0", "retries-100",
        "retry_count-0", "task_id-128", "task_id-charset", "task_type-128", "depth-5",
        "fraction-offset", "key-200"])
def test_boundaries_are_accepted(api, q, overrides):
    r = api.submit(envelope(q, **overrides))
    assert r.status == 202, r


@pytest.mark.parametrize("raw", ["{", "", "nope", '{"task_type": }', "[]", "1"],
                         ids=["truncated", "empty", "word", "bad-value", "array", "number"])
def test_invalid_json(api, raw):
    before = api.count_tasks()
    r = api.request("POST", "/v1/tasks", raw=raw)
    assert r.status == 400 and r.code == "invalid_json", r
    assert_unchanged(api, before)


def test_numbers_beyond_a_double_are_refused_and_64_bit_integers_kept_exactly(api, q):
    # 1e400 is JSON, but no double holds it: it would come back as `Infinity`, which is not.
    before = api.count_tasks()
    for number in ("1e400", "-1e400"):
        raw = ('{"task_type":"it.job","queue":"%s","payload_version":1,"payload":{"amount":%s}}'
               % (q, number))
        r = api.request("POST", "/v1/tasks", raw=raw)
        assert r.status == 400 and r.code == "invalid_json", r
    assert_unchanged(api, before)

    # Order ids up to 64 bits reach the worker and every read digit for digit.
    tid = uid("big")
    raw = ('{"task_id":"%s","task_type":"it.job","queue":"%s","payload_version":1,'
           '"payload":{"order_id":12345678901234567891,"floor":-9223372036854775808}}' % (tid, q))
    assert api.request("POST", "/v1/tasks", raw=raw).status == 202
    exact = {"order_id": 12345678901234567891, "floor": -9223372036854775808}
    assert api.task(tid)["payload"] == exact
    lease = api.lease_one(q)
    assert lease["task"]["payload"] == exact

    # A result beyond a double is refused too, and the lease is still the worker's.
    path = "/v1/leases/%s/ack" % urllib.parse.quote(lease["lease_id"], safe="")
    r = api.request("POST", path, raw='{"result":{"total":1e400}}')
    assert r.status == 400 and r.code == "invalid_json", r
    assert api.task(tid)["status"] == "running"
    assert api.request("POST", path, raw='{"result":{"total":12345678901234567891}}').status == 200
    done = api.task(tid)
    assert done["status"] == "succeeded" and done["result"] == {"total": 12345678901234567891}


def test_unknown_route_is_404_json(api):
    r = api.get("/v1/nothing-here")
    assert r.status == 404 and r.code == "not_found", r


def test_wrong_method_is_405(api):
    r = api.request("DELETE", "/v1/tasks")
    assert r.status == 405, r
    assert r.code == "method_not_allowed"
    assert "POST" in r.headers.get("Allow", ""), r.headers


def test_body_over_1mib_is_413_before_the_body_is_read(server, api):
    before = api.count_tasks()
    head = ("POST /v1/tasks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\n\r\n" % (2 << 20)).encode()
    t0 = time.monotonic()
    out = raw_exchange(server.port, head + b'{"task_type":', read_timeout=5)
    assert out.startswith(b"HTTP/1.1 413"), out[:200]
    assert b'"code":"request_too_large"' in out, out[:400]
    assert time.monotonic() - t0 < 4, "answered without waiting for the body"
    assert_unchanged(api, before)


def test_header_block_over_16kib_is_431(server):
    req = ("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n" % ("a" * 17000)).encode()
    out = raw_exchange(server.port, req)
    assert out.startswith(b"HTTP/1.1 431"), out[:200]
    assert b'"code":"headers_too_large"' in out, out[:400]


def test_batches_over_1000_items_are_refused_whole(api, q):
    before = api.count_tasks()
    tasks = [{"task_type": "t", "queue": q, "payload_version": 1, "payload": {}}] * 1001
    r = api.post("/v1/tasks/batch", {"tasks": tasks})
    assert r.status == 400 and r.code == "batch_too_large", r
    assert_unchanged(api, before)
    r = api.post("/v1/leases/ack", {"acks": [{"lease_id": "x"}] * 1001})
    assert r.status == 400 and r.code == "batch_too_large", r


def test_stalled_client_does_not_block_others(server, api):
    s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    try:
        s.sendall(b"POST /v1/tasks HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"ta")
        results = []

        def probe():
            t0 = time.monotonic()
            results.append((api.get("/healthz").status, time.monotonic() - t0))

        threads = [threading.Thread(target=probe) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=5)
        assert len(results) == 4
        assert all(st == 200 and dt < 1.0 for st, dt in results), results
    finally:
        s.close()


def test_bad_cancel_and_replay_ids_change_nothing(api):
    before = api.count_tasks()
    assert api.post("/v1/tasks/%s/cancel" % ("x" * 300)).status in (400, 404)
    assert api.post("/v1/tasks/none/replay").status in (400, 404)
    assert_unchanged(api, before)
