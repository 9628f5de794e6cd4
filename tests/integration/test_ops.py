"""Operations (SPEC §3): /metrics names, /healthz, /readyz, JSON log lines on stderr."""

import json
import re

from client import envelope

REQUIRED = [
    "madeira_tasks_submitted_total", "madeira_queue_depth", "madeira_dispatch_latency_seconds",
    "madeira_task_duration_seconds", "madeira_task_outcomes_total", "madeira_retries_total",
    "madeira_dead_letters_total", "madeira_worker_last_seen_timestamp_seconds",
    "madeira_http_requests_total",
]


def sample(text, name, **labels):
    """The value of the first sample of `name` whose labels include `labels`."""
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        if all('%s="%s"' % kv in line for kv in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_metrics_after_traffic(api, q):
    for _ in range(3):
        api.submit_ok(envelope(q, task_type="it.metrics"))
    api.ack(api.lease_one(q, wait_ms=0)["lease_id"])
    api.fail(api.lease_one(q, wait_ms=0)["lease_id"], retry="fast")
    api.fail(api.lease_one(q, wait_ms=0)["lease_id"], retry="never")
    api.post("/v1/workers/heartbeat", {"worker_id": "w-metrics", "language": "python",
                                       "sdk_version": "0", "queues": [q]})
    text = api.metrics()
    for name in REQUIRED:
        assert re.search(r"^%s(_bucket|_sum|_count)?[{ ]" % name, text, re.M), "missing " + name
    assert sample(text, "madeira_tasks_submitted_total", queue=q, task_type="it.metrics") == 3
    assert sample(text, "madeira_queue_depth", queue=q, state="pending") == 1
    assert sample(text, "madeira_dead_letters_total", queue=q, task_type="it.metrics") == 1
    assert "# TYPE madeira_dispatch_latency_seconds histogram" in text


def test_healthz_readyz(api):
    assert api.get("/healthz").status == 200
    assert api.get("/readyz").status == 200


def test_logs_are_json_lines(server, api):
    api.get("/healthz")
    lines = [l for l in server.stderr().splitlines() if l.strip()]
    assert lines
    for line in lines:
        obj = json.loads(line)
        assert isinstance(obj, dict) and "msg" in obj and "level" in obj and "ts" in obj, line
    assert any(json.loads(l)["msg"] == "listening" for l in lines)
