"""Webhooks under load and failure (issue 3 items 6 and 9): the per-endpoint rate limit,
max_in_flight, the circuit breaker, and an event accepted just before kill -9."""

import threading
import time

import receiver as rx
from webhooks_support import (  # noqa: F401  (fixtures)
    create_endpoint, etype, event_body, get_event, post_event, receiver, send_ok,
    wait_deliveries, wapi, webhook_config, wh_server)


def wait_until(t):
    """Lets a measurement window pass (bounded: ends at monotonic time t)."""
    threading.Event().wait(max(0.0, t - time.monotonic()))


def post_many(api, etype, n, threads=4):
    """Posts n signed events from a few threads; returns their ids (all must be 202)."""
    ids = [[] for _ in range(threads)]
    errors = []

    def run(i):
        for _ in range(i, n, threads):
            ev = event_body(etype)
            r = post_event(api, ev)
            if r.status != 202:
                errors.append(r)
                return
            ids[i].append(ev["event_id"])

    ts = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=30)
    assert not errors, errors[:3]
    return [e for part in ids for e in part]


def test_rate_limit_holds_over_five_seconds(wapi, receiver, etype):
    create_endpoint(wapi, receiver.url("/rl"), [etype], rate_limit={"per_second": 20, "burst": 1})
    ids = post_many(wapi, etype, 120)
    assert len(ids) == 120
    first = receiver.wait_for(1, path="/rl", timeout=5)[0].t
    window = 5.0
    start = first + 0.5  # past the start-up edge
    wait_until(start + window + 0.1)  # the measurement window has to pass
    times = [r.t for r in receiver.got("/rl")]
    in_window = [t for t in times if start <= t < start + window]
    rate = len(in_window) / window
    print("deliveries/s over %.0f s: %.1f (total so far %d)" % (window, rate, len(times)))
    assert 18.0 <= rate <= 22.0, rate
    # never a burst above the bucket: no two requests closer than ~1/20 s on average per 1 s
    for i in range(len(times)):
        in_one_second = [t for t in times if times[i] <= t < times[i] + 1.0]
        assert len(in_one_second) <= 20 + 2, (i, len(in_one_second))


def test_max_in_flight_is_never_exceeded(wapi, receiver, etype):
    receiver.on("/mif", rx.slow(0.3))
    create_endpoint(wapi, receiver.url("/mif"), [etype], max_in_flight=3)
    ids = post_many(wapi, etype, 18)
    receiver.wait_for(18, path="/mif", timeout=10)
    for eid in ids:
        wait_deliveries(wapi, eid, timeout=10)
    print("max concurrent requests: %d" % receiver.max_in_flight)
    assert receiver.max_in_flight <= 3
    assert receiver.max_in_flight == 3, "the cap is reached, so it is what limits"


def test_circuit_breaker_costs_one_request_per_cool_down(start_server, receiver, etype):
    server = start_server(config=webhook_config(breaker_failures=3, breaker_cool_down="1s"))
    api = server.api
    receiver.on("/br", rx.respond(500))
    create_endpoint(api, receiver.url("/br"), [etype], max_in_flight=2,
                    retry={"max_retries": 50, "initial_ms": 50, "max_ms": 100, "jitter": 0,
                           "fast_retries": 0})
    ids = post_many(api, etype, 20)
    reqs = receiver.wait_for(3, path="/br", timeout=5)
    opened = reqs[2].t
    wait_until(opened + 3.6)  # 3.5 s of an open breaker
    times = [r.t for r in receiver.got("/br")]
    window = [t for t in times if opened + 0.5 <= t < opened + 3.5]
    print("requests in 3 s of an open breaker: %d (total %d)" % (len(window), len(times)))
    assert 2 <= len(window) <= 4, [round(t - opened, 2) for t in times]
    # the receiver recovers: the next probe closes the breaker and everything is delivered
    receiver.on("/br", rx.ok())
    for eid in ids:
        wait_deliveries(api, eid, timeout=10)
    assert len({r.headers["webhook-id"] for r in receiver.got("/br")}) == 20


def test_event_accepted_before_kill_9_is_delivered_after_restart(start_server, receiver,
                                                                 etype, tmp_path):
    data = tmp_path / "k9"
    config = webhook_config()
    server = start_server(data_dir=data, config=config)
    # the first request hangs: a delivery in flight at the kill does not count as done
    receiver.on("/k9", rx.hang(3.0), rx.ok())
    create_endpoint(server.api, receiver.url("/k9"), [etype], timeout_ms=1000)
    ids = []
    for _ in range(5):
        eid, n = send_ok(server.api, etype)
        assert n == 1
        ids.append(eid)
    server.kill()  # kill -9 right after the last 202
    again = start_server(data_dir=data, config=config)
    for eid in ids:
        wait_deliveries(again.api, eid, timeout=20)
    got = {r.headers["webhook-id"] for r in receiver.got("/k9")}
    assert set(ids) <= got
