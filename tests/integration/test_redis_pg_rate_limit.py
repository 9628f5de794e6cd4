"""An endpoint's rate limit holds across processes (issue 5 item 4): two `madeira serve --store
redis-pg` processes deliver one endpoint's events, and together they keep to its rate through
the token bucket they share in Redis (each alone would send at the full rate).

Runs under `make integration-redis-pg`; skipped on the embedded store, where one process owns the
data. Both servers use one data dir, hence one namespace (conftest.namespace_for). Every wait is
bounded; the rate is measured at the receiver over a fixed window.
"""

import threading
import time

import pytest

import conftest
from webhooks_support import (  # noqa: F401  (fixtures)
    create_endpoint, etype, event_body, metric_value, post_event, receiver, webhook_config)

pytestmark = pytest.mark.skipif(
    conftest.test_store() != "redis-pg", reason="several processes need the shared redis-pg store")

RATE = 20
EVENTS = 200  # ten seconds of work at RATE: more than the measurement needs


def post_many(api, etype, n, threads=4):
    """Posts n signed events from a few threads; every answer must be 202."""
    errors = []

    def run(i):
        for _ in range(i, n, threads):
            r = post_event(api, event_body(etype))
            if r.status != 202:
                errors.append(r)
                return

    ts = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=60)
    assert not errors, errors[:3]


def delivered_by(server, endpoint_id):
    return metric_value(server.api.metrics(), "madeira_deliveries_total", endpoint=endpoint_id)


def test_two_processes_keep_one_endpoints_rate_together(start_server, receiver, etype, tmp_path):
    data_dir = tmp_path / "installation"
    first = start_server(data_dir=data_dir, config=webhook_config())
    ep = create_endpoint(first.api, receiver.url("/shared"), [etype],
                         rate_limit={"per_second": RATE, "burst": 1})
    # The second process learns of the endpoint at start (test_redis_pg_webhook_endpoints.py
    # covers an endpoint made while it runs).
    second = start_server(data_dir=data_dir, config=webhook_config(), args=["--role", "deliverer"])
    post_many(first.api, etype, EVENTS)

    first_t = receiver.wait_for(1, path="/shared", timeout=10)[0].t
    window = 4.0
    start = first_t + 0.5  # past the start-up edge
    threading.Event().wait(max(0.0, start + window + 0.1 - time.monotonic()))
    times = [r.t for r in receiver.got("/shared")]
    in_window = [t for t in times if start <= t < start + window]
    rate = len(in_window) / window
    by_first, by_second = delivered_by(first, ep["id"]), delivered_by(second, ep["id"])
    print("deliveries/s over %.0f s: %.1f (first process %d, second %d)"
          % (window, rate, by_first, by_second))
    assert by_first > 0 and by_second > 0, "both processes deliver the endpoint"
    assert len(times) < EVENTS, "the work outlasts the window, so the limit is what bounds it"
    assert RATE * 0.75 <= rate <= RATE * 1.1, rate
    # No second holds more than the rate plus the bucket and a request at its edge.
    for i in range(len(times)):
        in_one_second = [t for t in times if times[i] <= t < times[i] + 1.0]
        assert len(in_one_second) <= RATE + 2, (i, len(in_one_second))
