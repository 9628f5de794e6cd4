"""Payload schemas per (task_type, payload_version), JSON Schema draft 7 (SPEC §2, §3)."""

from client import envelope, uid

SCHEMA = {
    "type": "object",
    "properties": {"order_id": {"type": "integer"}, "store_id": {"type": "string"}},
    "required": ["order_id"],
    "additionalProperties": False,
}


def register(api, task_type, version=1, schema=SCHEMA):
    r = api.put("/v1/schemas/%s/%d" % (task_type, version), schema)
    assert r.status in (200, 201), r
    return r


def test_put_get_list(api):
    tt = uid("schema.t")
    register(api, tt)
    r = api.get("/v1/schemas/%s/1" % tt)
    assert r.status == 200, r
    body = r.json
    assert body.get("schema", body) == SCHEMA
    r = api.get("/v1/schemas")
    assert r.status == 200
    listed = r.json["schemas"] if isinstance(r.json, dict) else r.json
    assert any(s["task_type"] == tt and s["version"] == 1 for s in listed), listed


def test_unknown_schema_is_404(api):
    r = api.get("/v1/schemas/%s/1" % uid("none"))
    assert r.status == 404 and r.code == "not_found", r


def test_invalid_schema_is_400(api):
    r = api.put("/v1/schemas/%s/1" % uid("bad"), {"type": 12})
    assert r.status == 400 and r.code == "invalid_schema", r


def test_payload_must_validate(api, q):
    tt = uid("schema.v")
    register(api, tt)
    before = api.count_tasks()
    r = api.submit(envelope(q, task_type=tt, payload={"order_id": "not-a-number"}))
    assert r.status == 400 and r.code == "schema_violation", r
    r = api.submit(envelope(q, task_type=tt, payload={"store_id": "S1"}))
    assert r.status == 400 and r.code == "schema_violation", "required property: %r" % r
    assert api.count_tasks() == before
    assert api.submit(envelope(q, task_type=tt, payload={"order_id": 1, "store_id": "S1"})).status == 202


def test_unknown_property_rejected_when_additional_properties_false(api, q):
    tt = uid("schema.a")
    register(api, tt)
    before = api.count_tasks()
    r = api.submit(envelope(q, task_type=tt, payload={"order_id": 1, "extra": True}))
    assert r.status == 400 and r.code == "schema_violation", r
    assert api.count_tasks() == before


def test_schema_binds_one_version_only(api, q):
    tt = uid("schema.ver")
    register(api, tt, version=1)
    r = api.submit(envelope(q, task_type=tt, payload_version=2, payload={"anything": [1]}))
    assert r.status == 202, "v2 has no schema, so any object passes: %r" % r


def test_replay_edit_is_validated(api, q):
    tt = uid("schema.r")
    register(api, tt)
    tid = api.submit_ok(envelope(q, task_type=tt, payload={"order_id": 1}, max_retries=0))
    api.fail(api.lease_one(q, wait_ms=0)["lease_id"])
    r = api.post("/v1/tasks/%s/replay" % tid, {"payload": {"order_id": "x"}})
    assert r.status == 400 and r.code == "schema_violation", r
    assert api.task(tid)["status"] == "dead"
