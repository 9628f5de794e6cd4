"""Dead letters and replay (SPEC §3): list with last error, edit + replay, bulk replay/cancel."""

from client import envelope


def make_dead(api, q, task_type="it.dead", message="boom", **fields):
    tid = api.submit_ok(envelope(q, task_type=task_type, max_retries=0, **fields))
    lease = api.lease_one(q, wait_ms=0)
    assert lease["task"]["task_id"] == tid
    r = api.fail(lease["lease_id"], message=message)
    assert r.status == 200 and r.json["status"] == "dead", r
    return tid


def test_dead_is_listed_with_last_error(api, q):
    tid = make_dead(api, q, message="db down")
    items = api.dead(queue=q)
    assert [t["task_id"] for t in items] == [tid]
    assert items[0]["status"] == "dead"
    assert items[0]["last_error"]["message"] == "db down"
    assert items[0]["last_error"]["type"] == "TestError"
    # A dead task waits for no attempt, wherever it is read.
    assert items[0]["next_attempt_at"] is None
    assert api.task(tid)["next_attempt_at"] is None
    cancelled = api.post("/v1/tasks/%s/cancel" % tid, {})
    assert cancelled.status == 200 and cancelled.json["status"] == "cancelled", cancelled
    assert cancelled.json["next_attempt_at"] is None


def test_dead_list_filters(api, q):
    a = make_dead(api, q, task_type="it.a")
    b = make_dead(api, q, task_type="it.b")
    assert [t["task_id"] for t in api.dead(queue=q, task_type="it.a")] == [a]
    assert len(api.dead(queue=q, limit=1)) == 1
    assert {t["task_id"] for t in api.dead(queue=q)} == {a, b}


def test_replay_with_payload_edit_keeps_history(api, q):
    tid = make_dead(api, q)
    r = api.post("/v1/tasks/%s/replay" % tid, {"payload": {"n": 2}, "max_retries": 1})
    assert r.status == 200, r
    t = api.task(tid)
    assert t["status"] == "pending" and t["retry_count"] == 0
    assert t["payload"] == {"n": 2} and t["max_retries"] == 1
    assert len(api.attempts(tid)) == 1, "the attempt log survives a replay"
    lease = api.lease_one(q, wait_ms=0)
    assert lease["task"]["payload"] == {"n": 2} and lease["task"]["attempt"] == 2
    api.ack(lease["lease_id"])
    assert api.dead(queue=q) == []


def test_replay_of_not_dead_is_409(api, q):
    tid = api.submit_ok(envelope(q))
    r = api.post("/v1/tasks/%s/replay" % tid, {})
    assert r.status == 409 and r.code == "task_not_dead", r
    assert api.task(tid)["status"] == "pending"


def test_replay_with_bad_edit_changes_nothing(api, q):
    tid = make_dead(api, q)
    r = api.post("/v1/tasks/%s/replay" % tid, {"payload": [1]})
    assert r.status == 400, r
    r = api.post("/v1/tasks/%s/replay" % tid, {"max_retries": 101})
    assert r.status == 400 and r.code == "invalid_field", r
    r = api.post("/v1/tasks/%s/replay" % tid, {"priority": 1})
    assert r.status == 400 and r.code == "unknown_field", r
    t = api.task(tid)
    assert t["status"] == "dead" and t["payload"] == {"n": 1}


def test_bulk_replay_by_ids_and_by_filter(api, q):
    ids = [make_dead(api, q) for _ in range(3)]
    r = api.post("/v1/dead/replay", {"task_ids": ids[:2]})
    assert r.status == 200 and r.json["replayed"] == 2, r
    assert [api.task(i)["status"] for i in ids] == ["pending", "pending", "dead"]
    other = make_dead(api, q + "x")  # another queue: outside the filter
    r = api.post("/v1/dead/replay", {"filter": {"queue": q}, "max_retries": 5})
    assert r.status == 200 and r.json["replayed"] == 1, r
    t = api.task(ids[2])
    assert t["status"] == "pending" and t["max_retries"] == 5
    assert api.task(other)["status"] == "dead"


def test_bulk_cancel_by_ids_and_by_filter(api, q):
    ids = [make_dead(api, q) for _ in range(3)]
    r = api.post("/v1/dead/cancel", {"task_ids": [ids[0]]})
    assert r.status == 200 and r.json["cancelled"] == 1, r
    r = api.post("/v1/dead/cancel", {"filter": {"queue": q}})
    assert r.status == 200 and r.json["cancelled"] == 2, r
    assert {api.task(i)["status"] for i in ids} == {"cancelled"}
    assert api.dead(queue=q) == []


def test_bulk_bad_bodies_change_nothing(api, q):
    tid = make_dead(api, q)
    for path in ("/v1/dead/replay", "/v1/dead/cancel"):
        for body in ({}, {"task_ids": "x"}, {"filter": {"colour": 1}}, {"oops": 1}):
            r = api.post(path, body)
            assert r.status == 400, (path, body, r)
    assert api.task(tid)["status"] == "dead"
