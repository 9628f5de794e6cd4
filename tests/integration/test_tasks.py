"""Producer routes of SPEC §3: submit, duplicates, batch, get, attempts, search, cancel."""

import re
import time

from client import envelope, rfc3339, uid

UUID7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def test_submit_returns_202_and_get_shows_envelope_and_state(api, q):
    r = api.submit(envelope(q, payload={"order_id": 7}, priority=5, trace_id="trace-x"))
    assert r.status == 202, r
    assert r.json["duplicate"] is False
    assert r.json["status"] == "pending"
    tid = r.json["task_id"]
    assert UUID7.match(tid), "server-made task_id must be a UUIDv7: %s" % tid
    t = api.task(tid)
    for key in ("task_id", "task_type", "queue", "payload_version", "payload", "schedule_time",
                "timeout_ms", "max_retries", "retry_count", "priority", "trace_id", "status",
                "created_at", "updated_at", "next_attempt_at", "attempts", "last_error",
                "result"):
        assert key in t, "GET /v1/tasks/{id} lacks %s: %r" % (key, t)
    assert t["payload"] == {"order_id": 7}
    assert t["priority"] == 5 and t["trace_id"] == "trace-x"
    assert t["timeout_ms"] == 30000 and t["max_retries"] == 3 and t["retry_count"] == 0


def test_defaults_queue_and_trace_id_are_filled(api):
    env = {"task_type": "it.defaults", "payload_version": 1, "payload": {}}
    t = api.task(api.submit_ok(env))
    assert t["queue"] == "default"
    assert t["priority"] == 100
    assert t["trace_id"], "trace_id must be made when absent"


def test_future_schedule_time_is_scheduled(api, q):
    tid = api.submit_ok(envelope(q, schedule_time=rfc3339(time.time() + 3600)))
    assert api.task(tid)["status"] == "scheduled"


def test_past_schedule_time_means_now(api, q):
    tid = api.submit_ok(envelope(q, schedule_time="2001-01-01T00:00:00+08:00"))
    assert api.task(tid)["status"] == "pending"


def test_same_task_id_same_content_is_duplicate_200(api, q):
    env = envelope(q, task_id=uid("dup"))
    assert api.submit(env).status == 202
    before = api.count_tasks()
    r = api.submit(env)
    assert r.status == 200, r
    assert r.json["duplicate"] is True and r.json["task_id"] == env["task_id"]
    assert api.count_tasks() == before


def test_same_task_id_other_content_is_409_task_id_conflict(api, q):
    env = envelope(q, task_id=uid("conf"))
    api.submit_ok(env)
    before = api.count_tasks()
    r = api.submit(dict(env, payload={"n": 2}))
    assert r.status == 409 and r.code == "task_id_conflict", r
    assert api.task(env["task_id"])["payload"] == {"n": 1}
    assert api.count_tasks() == before


def test_batch_judges_each_item_alone(api, q):
    good = envelope(q, task_id=uid("b"))
    bad = envelope(q, priority=5000)
    r = api.post("/v1/tasks/batch", {"tasks": [good, bad, good]})
    assert r.status == 200, r
    res = r.json["results"]
    assert len(res) == 3
    assert res[0]["task_id"] == good["task_id"] and res[0]["duplicate"] is False
    assert res[1]["error"]["code"] == "invalid_field"
    assert res[2]["duplicate"] is True
    assert api.task(good["task_id"])["status"] == "pending"
    assert len(api.search(queue=q)["tasks"]) == 1


def test_batch_over_1000_is_rejected_and_changes_nothing(api, q):
    before = api.count_tasks()
    r = api.post("/v1/tasks/batch", {"tasks": [envelope(q)] * 1001})
    assert 400 <= r.status < 500 and r.code, r
    assert api.count_tasks() == before


def test_get_unknown_task_is_404_json(api):
    r = api.get("/v1/tasks/no-such-task")
    assert r.status == 404 and r.code == "not_found", r


def test_search_newest_first_filters_and_cursor_paging(api, q):
    ids = [api.submit_ok(envelope(q, task_type="it.search", trace_id="tr-" + q)) for _ in range(5)]
    api.submit_ok(envelope(q, task_type="it.other"))
    page = api.search(queue=q, task_type="it.search", limit=2)
    seen = [t["task_id"] for t in page["tasks"]]
    for _ in range(10):
        if not page.get("next_cursor"):
            break
        page = api.search(queue=q, task_type="it.search", limit=2, cursor=page["next_cursor"])
        seen += [t["task_id"] for t in page["tasks"]]
    assert seen == list(reversed(ids)), "newest first, every task once"
    assert len(api.search(trace_id="tr-" + q)["tasks"]) == 5
    assert len(api.search(queue=q, status="pending")["tasks"]) == 6
    assert api.search(queue=q, status="succeeded")["tasks"] == []


def test_search_bad_query_is_400(api):
    assert api.get("/v1/tasks?status=nope").status == 400
    assert api.get("/v1/tasks?limit=0").status == 400


def test_attempt_log_after_ack(api, q):
    tid = api.submit_ok(envelope(q))
    lease = api.lease_one(q, worker_id="w-attempts")
    assert lease["task"]["attempt"] == 1
    assert api.ack(lease["lease_id"], {"ok": True}).status == 200
    t = api.task(tid)
    assert t["status"] == "succeeded" and t["result"] == {"ok": True} and t["attempts"] == 1
    [a] = api.attempts(tid)
    assert a["attempt"] == 1 and a["worker_id"] == "w-attempts" and a["outcome"] == "succeeded"
    assert a["started_at"] and a["finished_at"] and a["duration_ms"] >= 0


class TestCancelRules:
    def test_pending_scheduled_cancel_then_terminal(self, api, q):
        for env in (envelope(q), envelope(q, schedule_time=rfc3339(time.time() + 600))):
            tid = api.submit_ok(env)
            r = api.post("/v1/tasks/%s/cancel" % tid)
            assert r.status == 200, r
            assert api.task(tid)["status"] == "cancelled"
            r = api.post("/v1/tasks/%s/cancel" % tid)
            assert r.status == 409 and r.code == "task_terminal", r

    def test_running_is_409_task_running(self, api, q):
        tid = api.submit_ok(envelope(q))
        lease = api.lease_one(q)
        r = api.post("/v1/tasks/%s/cancel" % tid)
        assert r.status == 409 and r.code == "task_running", r
        assert api.task(tid)["status"] == "running"
        assert api.ack(lease["lease_id"]).status == 200

    def test_succeeded_is_409_task_terminal(self, api, q):
        tid = api.submit_ok(envelope(q))
        api.ack(api.lease_one(q)["lease_id"])
        r = api.post("/v1/tasks/%s/cancel" % tid)
        assert r.status == 409 and r.code == "task_terminal", r
        assert api.task(tid)["status"] == "succeeded"

    def test_retrying_and_dead_can_be_cancelled(self, api, q):
        a = api.submit_ok(envelope(q))
        api.fail(api.lease_one(q)["lease_id"], retry="backoff")
        assert api.task(a)["status"] == "retrying"
        assert api.post("/v1/tasks/%s/cancel" % a).status == 200
        b = api.submit_ok(envelope(q, max_retries=0))
        api.fail(api.lease_one(q)["lease_id"])
        assert api.task(b)["status"] == "dead"
        assert api.post("/v1/tasks/%s/cancel" % b).status == 200
        assert api.task(b)["status"] == "cancelled"

    def test_unknown_is_404(self, api):
        r = api.post("/v1/tasks/%s/cancel" % uid("none"))
        assert r.status == 404 and r.code == "not_found", r


def test_idempotency_key_runs_once(api, q):
    key = uid("order.close")
    a = api.submit_ok(envelope(q, idempotency_key=key))
    b = api.submit_ok(envelope(q, idempotency_key=key))
    leases = api.lease([q], max_tasks=10)
    assert [l["task"]["task_id"] for l in leases] == [a], "only one task of a key may run at once"
    assert api.lease([q], max_tasks=10) == [], "the sibling must wait while the first runs"
    assert api.ack(leases[0]["lease_id"]).status == 200
    assert api.lease([q], max_tasks=10, wait_ms=200) == [], "a deduplicated task is never leased"
    t = api.wait_status(b, "succeeded")
    assert t["deduplicated"] is True
    assert t["attempts"] == 0 and api.attempts(b) == []


def test_idempotency_key_after_failure_still_runs(api, q):
    key = uid("k")
    a = api.submit_ok(envelope(q, idempotency_key=key, max_retries=0))
    b = api.submit_ok(envelope(q, idempotency_key=key))
    api.fail(api.lease_one(q)["lease_id"])
    assert api.task(a)["status"] == "dead"
    lease = api.lease_one(q)
    assert lease["task"]["task_id"] == b
