"""Envelope validation driven by ../testdata/envelopes.json, locally and against the server."""
from datetime import datetime, timedelta, timezone

import pytest

from madeira import ApiError, Client, ValidationError
from madeira.envelope import to_wire

from conftest import vectors

ENVELOPES = vectors("envelopes.json")
VALID = ENVELOPES["valid"]
INVALID = ENVELOPES["invalid"]
LOCAL = [c for c in INVALID if not c["server_only"]]
SERVER_ONLY = [c for c in INVALID if c["server_only"]]


def as_python(envelope):
    """The vector as a Python caller would write it: schedule_time strings become the
    datetime that `datetime.fromisoformat` makes of them (naive when the text has no offset);
    numbers stay numbers."""
    out = dict(envelope)
    value = out.get("schedule_time")
    if isinstance(value, str):
        out["schedule_time"] = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return out


def names(cases):
    return [c["name"] for c in cases]


@pytest.mark.parametrize("case", VALID, ids=names(VALID))
def test_valid_envelopes_are_accepted_locally(case):
    wire = to_wire(as_python(case["envelope"]))
    assert set(wire) == set(case["envelope"])
    if "schedule_time" in wire:
        sent = datetime.fromisoformat(wire["schedule_time"].replace("Z", "+00:00"))
        want = datetime.fromisoformat(case["envelope"]["schedule_time"].replace("Z", "+00:00"))
        assert sent == want and wire["schedule_time"].endswith("Z")


@pytest.mark.parametrize("case", LOCAL, ids=names(LOCAL))
def test_invalid_envelopes_are_refused_locally(case):
    with pytest.raises(ValidationError) as info:
        to_wire(as_python(case["envelope"]))
    assert info.value.field == case["field"]
    assert info.value.code == case["code"]


@pytest.mark.parametrize("case", LOCAL, ids=names(LOCAL))
def test_invalid_envelopes_never_reach_the_server(case, server):
    class Exploding:
        def request(self, *a, **k):
            raise AssertionError("sent a request")
    client = Client(server.url)
    client.transport = Exploding()
    with pytest.raises(ValidationError):
        client.submit(as_python(case["envelope"]))


@pytest.mark.parametrize("case", SERVER_ONLY, ids=names(SERVER_ONLY))
def test_server_only_cases_surface_the_server_error(case, client):
    envelope = as_python(case["envelope"])
    to_wire(envelope)  # accepted locally
    with pytest.raises(ApiError) as info:
        client.submit(envelope)
    assert info.value.status == 400
    assert info.value.code == case["code"]
    assert info.value.field == case["field"]
    assert info.value.message


@pytest.mark.parametrize("case", VALID, ids=names(VALID))
def test_valid_envelopes_are_accepted_by_the_server(case, client):
    result = client.submit(as_python(case["envelope"]))
    assert result.task_id
    assert result.status in ("pending", "scheduled", "succeeded")


@pytest.mark.parametrize("case", INVALID, ids=names(INVALID))
def test_vectors_agree_with_the_server(case, client):
    """Sent raw (bypassing the SDK's checks), the server names the same code and field."""
    with pytest.raises(ApiError) as info:
        client.transport.request("POST", "/v1/tasks", case["envelope"])
    assert (info.value.code, info.value.field) == (case["code"], case["field"])


BASE = {"task_type": "t", "payload_version": 1, "payload": {}}


@pytest.mark.parametrize("value", [
    datetime(2025, 9, 11, 12, 45),          # naive
    1757565900,                             # a number
    1757565900.5,
    "2025-09-11T12:45:00+08:00",            # even a well-formed string: use a datetime
])
def test_schedule_time_must_be_zone_aware_datetime(value):
    with pytest.raises(ValidationError) as info:
        to_wire(dict(BASE, schedule_time=value))
    assert info.value.field == "schedule_time"
    assert info.value.code == "invalid_schedule_time"


def test_schedule_time_is_sent_as_utc_with_milliseconds():
    tz = timezone(timedelta(hours=8))
    wire = to_wire(dict(BASE, schedule_time=datetime(2025, 9, 11, 12, 45, 0, 123456, tzinfo=tz)))
    assert wire["schedule_time"] == "2025-09-11T04:45:00.123456Z"
    wire = to_wire(dict(BASE, schedule_time=datetime(2025, 9, 11, 12, 45, tzinfo=tz)))
    assert wire["schedule_time"] == "2025-09-11T04:45:00.000Z"


def test_none_means_absent_and_is_never_sent():
    wire = to_wire(dict(BASE, priority=None, queue=None, schedule_time=None))
    assert wire == BASE


@pytest.mark.parametrize("field,value", [
    ("priority", True), ("priority", 3.0), ("timeout_ms", "3000"), ("max_retries", 2.0),
])
def test_integers_must_be_integers(field, value):
    with pytest.raises(ValidationError) as info:
        to_wire(dict(BASE, **{field: value}))
    assert info.value.field == field


@pytest.mark.parametrize("field,value", [
    ("trace_id", ""), ("trace_id", "has space"), ("trace_id", "x" * 129),
    ("idempotency_key", ""), ("queue", ""),
])
def test_other_string_rules(field, value):
    with pytest.raises(ValidationError) as info:
        to_wire(dict(BASE, **{field: value}))
    assert info.value.field == field


def test_payload_depth_counts_arrays_and_size_is_bounded():
    to_wire(dict(BASE, payload={"a": [[[[1]]]]}))
    with pytest.raises(ValidationError) as info:
        to_wire(dict(BASE, payload={"a": [[[[[1]]]]]}))
    assert info.value.code == "payload_too_deep"
    with pytest.raises(ValidationError) as info:
        to_wire(dict(BASE, payload={"blob": "x" * 70000}))
    assert (info.value.field, info.value.code) == ("payload", "payload_too_large")
    with pytest.raises(ValidationError) as info:
        to_wire(dict(BASE, payload={"when": datetime.now()}))
    assert info.value.field == "payload"
