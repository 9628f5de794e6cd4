"""Bearer tokens with scopes (SPEC §1, §3); tokens never logged; no tokens ⇒ loopback only."""

import hashlib
import os
import subprocess

import pytest

from client import Api, envelope, uid
from conftest import madeira_bin

PRODUCER, WORKER, ADMIN = "producer-tok-5f1e", "worker-tok-77aa", "admin-tok-c0de"
OTHER_PRODUCER, ORDERS_ROTATED = "billing-tok-9b3c", "orders-tok-next-1a2b"
WRONG = "wrong-tok-dead"

CONFIG = """
[[auth.tokens]]
name = "orders"
token = "%s"
scopes = ["producer"]

[[auth.tokens]]
name = "workers"
token = "%s"
scopes = ["worker"]

[[auth.tokens]]
name = "ops"
token_sha256 = "%s"
scopes = ["admin"]

[[auth.tokens]]
name = "billing"
token = "%s"
scopes = ["producer"]

[[auth.tokens]]
name = "orders"
token = "%s"
scopes = ["producer"]
""" % (PRODUCER, WORKER, hashlib.sha256(ADMIN.encode()).hexdigest(), OTHER_PRODUCER,
       ORDERS_ROTATED)


@pytest.fixture
def secured(start_server):
    return start_server(config=CONFIG)


def test_missing_or_wrong_token_is_401(secured):
    api = Api(secured.port)
    r = api.submit(envelope("q"))
    assert r.status == 401 and r.code == "unauthorized", r
    r = api.submit(envelope("q"), token=WRONG)
    assert r.status == 401 and r.code == "unauthorized", r
    r = api.request("POST", "/v1/tasks", body=envelope("q"), headers={"Authorization": "Basic eA=="})
    assert r.status == 401, r
    assert Api(secured.port, ADMIN).count_tasks() == 0, "rejected requests change nothing"


def test_scopes(secured):
    producer, worker, admin = (Api(secured.port, t) for t in (PRODUCER, WORKER, ADMIN))
    r = worker.submit(envelope("q"))
    assert r.status == 403 and r.code == "forbidden", r
    tid = producer.submit_ok(envelope("q"))
    assert producer.task(tid)["status"] == "pending"
    r = producer.post("/v1/leases", {"worker_id": "w", "queues": ["q"]})
    assert r.status == 403 and r.code == "forbidden", r
    lease = worker.lease_one("q", wait_ms=0)
    assert worker.ack(lease["lease_id"]).status == 200
    assert producer.get("/v1/dead").status == 403
    # admin does everything
    assert admin.get("/v1/dead").status == 200
    assert admin.submit(envelope("q")).status == 202
    assert admin.lease(["q"]) != []


def test_health_needs_no_token(secured):
    assert Api(secured.port).get("/healthz").status == 200


def test_tokens_never_logged(secured):
    api = Api(secured.port)
    api.submit(envelope("q"), token=WRONG)
    api.submit(envelope("q"), token=PRODUCER)
    Api(secured.port, WORKER).lease(["q"])
    secured.terminate()
    logs = secured.stderr()
    assert logs, "expected some logs"
    for tok in (PRODUCER, WORKER, ADMIN, WRONG):
        assert tok not in logs, "a token leaked into stderr"


def test_refuses_non_loopback_without_tokens(binary, tmp_path):
    p = subprocess.run([binary, "serve", "--listen", "0.0.0.0:0", "--data-dir", str(tmp_path)],
                       capture_output=True, timeout=10, text=True,
                       env={k: v for k, v in os.environ.items() if not k.startswith("MADEIRA_")})
    assert p.returncode != 0
    assert "loopback" in p.stderr, p.stderr
    assert "listening on" not in p.stdout


def test_bad_config_is_one_clear_line(binary, tmp_path):
    cfg = tmp_path / "bad.toml"
    cfg.write_text('[limits]\nmax_dept = 3\n')
    p = subprocess.run([binary, "serve", "--config", str(cfg), "--data-dir", str(tmp_path)],
                       capture_output=True, timeout=10, text=True)
    assert p.returncode != 0
    assert "limits.max_dept" in p.stderr, p.stderr


def test_redis_pg_without_urls_names_the_missing_one(binary, tmp_path):
    p = subprocess.run([binary, "serve", "--store", "redis-pg", "--data-dir", str(tmp_path)],
                       capture_output=True, timeout=10, text=True)
    assert p.returncode == 2, p
    assert "redis url: not set" in p.stderr, p.stderr


def test_a_producer_reads_and_cancels_only_its_own_tasks(secured):
    """SPEC §3: producer = submit, cancel, read own. Own = submitted under the token's name, so a
    rotated token of the same name keeps its tasks; another producer's are not there at all."""
    orders, billing, admin = (Api(secured.port, t) for t in (PRODUCER, OTHER_PRODUCER, ADMIN))
    rotated = Api(secured.port, ORDERS_ROTATED)
    trace = uid("own")
    tid = orders.submit_ok(envelope("own", trace_id=trace))
    for path in ("/v1/tasks/" + tid, "/v1/tasks/" + tid + "/attempts"):
        r = billing.get(path)
        assert r.status == 404 and r.code == "not_found", (path, r)
    r = billing.post("/v1/tasks/%s/cancel" % tid, None)
    assert r.status == 404 and r.code == "not_found", r
    assert orders.task(tid)["status"] == "pending", "another producer's cancel changed nothing"
    r = billing.get("/v1/tasks?trace_id=" + trace)
    assert r.status == 200 and r.json["tasks"] == [], r.json
    mine = billing.submit_ok(envelope("own", trace_id=trace))
    r = billing.get("/v1/tasks?trace_id=" + trace)
    assert [t["task_id"] for t in r.json["tasks"]] == [mine], r.json
    # The same name, another token: the same owner.
    assert rotated.task(tid)["status"] == "pending"
    assert rotated.get("/v1/tasks/%s/attempts" % tid).status == 200
    r = rotated.get("/v1/tasks?trace_id=" + trace)
    assert [t["task_id"] for t in r.json["tasks"]] == [tid], r.json
    # An admin sees and cancels anyone's.
    r = admin.get("/v1/tasks?trace_id=" + trace)
    assert sorted(t["task_id"] for t in r.json["tasks"]) == sorted([tid, mine]), r.json
    assert admin.post("/v1/tasks/%s/cancel" % mine, None).status == 200
    assert orders.post("/v1/tasks/%s/cancel" % tid, None).status == 200
    assert admin.task(tid)["status"] == "cancelled"
