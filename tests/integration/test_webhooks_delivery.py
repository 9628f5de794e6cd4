"""Webhooks, outbound side (issue 3, SPEC §3 "Outcome of one attempt"): what the receiver sees
(Standard Webhooks headers and signatures), the attempt log, outcome classes, Retry-After,
dead letters and replay, redeliver, metrics, and the SSRF guard."""

import email.utils
import time

import receiver as rx
from webhooks_support import (  # noqa: F401  (fixtures)
    DIRECT_SECRET, DIRECT_SOURCE, SOURCE, TARGET_SECRET, create_endpoint, event_body, post_event, etype, get_event, metric_value, new_secret, receiver, send_ok,
    sw_verify, wait_deliveries, wapi, webhook_config, wh_server)

FAST = {"max_retries": 2, "initial_ms": 50, "max_ms": 100, "multiplier": 2, "jitter": 0,
        "fast_retries": 0}


def only_delivery(api, event_id, statuses, timeout=10.0):
    ev = wait_deliveries(api, event_id, statuses, timeout=timeout)
    assert len(ev["deliveries"]) == 1, ev
    return ev["deliveries"][0]


def attempts_of(api, task_id):
    return api.attempts(task_id)


def test_success_headers_signature_and_attempt_log(wapi, receiver, etype):
    secrets = [new_secret(), new_secret()]  # rotating: both sign
    ep = create_endpoint(wapi, receiver.url("/ok"), [etype], secrets=secrets,
                         headers={"X-Tenant": "acme"})
    eid, n = send_ok(wapi, etype, {"amount": 10}, trace_id="trace-ok-1")
    assert n == 1
    req = receiver.wait_for(1, path="/ok")[0]
    h = req.headers
    assert h["webhook-id"] == eid
    assert h["content-type"].startswith("application/json")
    assert h["user-agent"].startswith("Madeira/")
    assert h["x-trace-id"] == "trace-ok-1"
    assert h["x-tenant"] == "acme"
    assert abs(int(h["webhook-timestamp"]) - time.time()) < 10
    assert len(h["webhook-signature"].split(" ")) == 2
    assert sorted(sw_verify(secrets, h, req.body)) == sorted(secrets)
    assert sw_verify([secrets[1]], h, req.body) == [secrets[1]]  # a receiver on the old one
    assert req.json == {"amount": 10}
    d = only_delivery(wapi, eid, "succeeded")
    assert d["endpoint_id"] == ep["id"]
    task = wapi.task(d["task_id"])
    assert task["status"] == "succeeded" and task["trace_id"] == "trace-ok-1"
    [a] = attempts_of(wapi, d["task_id"])
    assert a["outcome"] == "succeeded" and a["http_status"] == 200
    assert a["response_excerpt"] == '{"ok": true}'
    assert a["duration_ms"] is not None and a["duration_ms"] >= 0


def test_secret_rotation_by_patch_signs_with_both(wapi, receiver, etype):
    old = new_secret()
    ep = create_endpoint(wapi, receiver.url("/rot"), [etype], secrets=[old])
    new = new_secret()
    r = wapi.request("PATCH", "/v1/endpoints/" + ep["id"], body={"secrets": [new, old]})
    assert r.status == 200, r
    assert new not in r.body and old not in r.body
    send_ok(wapi, etype)
    req = receiver.wait_for(1, path="/rot")[0]
    assert sorted(sw_verify([old, new], req.headers, req.body)) == sorted([old, new])
    r = wapi.request("PATCH", "/v1/endpoints/" + ep["id"], body={"secrets": [new]})
    assert r.status == 200
    send_ok(wapi, etype)
    req = receiver.wait_for(2, path="/rot")[1]
    assert sw_verify([old, new], req.headers, req.body) == [new]
    assert len(req.headers["webhook-signature"].split(" ")) == 1


def test_success_predicate_false_is_retried_then_succeeds(wapi, receiver, etype):
    receiver.on("/pred", rx.fail_json(), rx.respond(200, {"success": "yes"}),
                rx.respond(200, b"not json"), rx.respond(200, {"success": True}))
    ep = create_endpoint(wapi, receiver.url("/pred"), [etype], retry=dict(FAST, max_retries=5),
                         success={"json_pointer": "/success", "equals": True},
                         secrets=[new_secret()])
    eid, _ = send_ok(wapi, etype)
    d = only_delivery(wapi, eid, "succeeded")
    reqs = receiver.got("/pred")
    assert len(reqs) == 4
    assert {r.headers["webhook-id"] for r in reqs} == {eid}, "webhook-id constant across retries"
    for r in reqs:
        sw_verify(ep["secrets"], r.headers, r.body)
    atts = attempts_of(wapi, d["task_id"])
    assert [a["outcome"] for a in atts] == ["failed", "failed", "failed", "succeeded"]
    assert [a["http_status"] for a in atts] == [200, 200, 200, 200]
    assert atts[0]["response_excerpt"] == '{"success": false}'
    assert atts[2]["response_excerpt"] == "not json"


def test_success_predicate_false_until_max_retries_is_dead(wapi, receiver, etype):
    receiver.on("/predx", rx.fail_json())
    create_endpoint(wapi, receiver.url("/predx"), [etype], retry=FAST,
                    success={"json_pointer": "/success", "equals": True})
    eid, _ = send_ok(wapi, etype)
    d = only_delivery(wapi, eid, "dead")
    atts = attempts_of(wapi, d["task_id"])
    assert len(atts) == FAST["max_retries"] + 1
    task = wapi.task(d["task_id"])
    assert "success check failed" in task["last_error"]["message"], task["last_error"]


def check_retried_then_dead(api, receiver, path, etype, behaviour, want_error, timeout_ms=None):
    receiver.on(path, behaviour)
    extra = {"timeout_ms": timeout_ms} if timeout_ms else {}
    create_endpoint(api, receiver.url(path), [etype], retry=FAST, **extra)
    eid, _ = send_ok(api, etype)
    d = only_delivery(api, eid, "dead", timeout=15)
    reqs = receiver.got(path)
    assert len(reqs) == FAST["max_retries"] + 1, reqs
    assert {r.headers["webhook-id"] for r in reqs} == {eid}
    atts = attempts_of(api, d["task_id"])
    assert len(atts) == FAST["max_retries"] + 1
    assert all(a["outcome"] == "failed" for a in atts), atts
    task = api.task(d["task_id"])
    assert task["status"] == "dead" and task["retry_count"] == FAST["max_retries"]
    msg = task["last_error"]["message"]
    assert want_error in msg, task["last_error"]
    assert task["last_error"]["type"] == "webhook.retryable"
    return atts


def test_500_is_retried_then_dead(wapi, receiver, etype):
    atts = check_retried_then_dead(wapi, receiver, "/500", etype,
                                   rx.respond(500, {"error": "boom"}), "HTTP 500")
    assert [a["http_status"] for a in atts] == [500] * 3
    assert atts[0]["response_excerpt"] == '{"error": "boom"}'


def test_503_is_retried_then_dead(wapi, receiver, etype):
    atts = check_retried_then_dead(wapi, receiver, "/503", etype, rx.respond(503), "HTTP 503")
    assert [a["http_status"] for a in atts] == [503] * 3


def test_timeout_is_retried_then_dead(wapi, receiver, etype):
    t0 = time.monotonic()
    atts = check_retried_then_dead(wapi, receiver, "/hang", etype, rx.hang(3.0), "timeout",
                                   timeout_ms=1000)
    assert all(a.get("http_status") is None for a in atts)
    assert time.monotonic() - t0 < 8, "each attempt ends at its timeout, not the hang's end"


def test_connection_reset_is_retried_then_dead(wapi, receiver, etype):
    atts = check_retried_then_dead(wapi, receiver, "/reset", etype, rx.reset(),
                                   "connection_reset")
    assert all(a.get("http_status") is None for a in atts)


def test_connection_refused_is_retried_then_dead(wapi, etype):
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    create_endpoint(wapi, "http://127.0.0.1:%d/x" % port, [etype], retry=FAST)
    eid, _ = send_ok(wapi, etype)
    d = only_delivery(wapi, eid, "dead")
    assert len(attempts_of(wapi, d["task_id"])) == 3
    assert "connection_refused" in wapi.task(d["task_id"])["last_error"]["message"]


def test_404_is_dead_at_once_with_its_reason(wapi, receiver, etype):
    receiver.on("/404", rx.respond(404, {"error": "no such hook"}))
    create_endpoint(wapi, receiver.url("/404"), [etype], retry=FAST)
    eid, _ = send_ok(wapi, etype)
    d = only_delivery(wapi, eid, "dead")
    assert len(receiver.got("/404")) == 1
    [a] = attempts_of(wapi, d["task_id"])
    assert a["outcome"] == "failed" and a["http_status"] == 404
    assert a["response_excerpt"] == '{"error": "no such hook"}'
    task = wapi.task(d["task_id"])
    assert task["retry_count"] == 0
    assert task["last_error"]["message"] == "HTTP 404"
    assert task["last_error"]["type"] == "webhook.permanent"
    assert task["last_error"].get("http_status") == 404
    assert receiver.quiet_for(0.3, path="/404")


def test_redirect_is_not_followed(wapi, receiver, etype):
    receiver.on("/moved", rx.respond(302, {}, {"Location": receiver.url("/target")}))
    create_endpoint(wapi, receiver.url("/moved"), [etype], retry=dict(FAST, max_retries=1))
    eid, _ = send_ok(wapi, etype)
    d = only_delivery(wapi, eid, "dead")
    assert receiver.got("/target") == []
    assert [a["http_status"] for a in attempts_of(wapi, d["task_id"])] == [302, 302]


def test_retry_after_is_a_lower_bound(wapi, receiver, etype):
    receiver.on("/ra", rx.retry_after(503, 1), rx.retry_after(429, 1), rx.ok())
    create_endpoint(wapi, receiver.url("/ra"), [etype], retry=dict(FAST, max_retries=5))
    eid, _ = send_ok(wapi, etype)
    d = only_delivery(wapi, eid, "succeeded", timeout=10)
    reqs = receiver.got("/ra")
    assert len(reqs) == 3
    gaps = [b.t - a.t for a, b in zip(reqs, reqs[1:])]
    assert all(g >= 0.95 for g in gaps), gaps  # the back-off alone would be 50-100 ms
    assert all(g < 3.0 for g in gaps), gaps
    atts = attempts_of(wapi, d["task_id"])
    assert [a["http_status"] for a in atts] == [503, 429, 200]


def test_dead_delivery_is_listed_and_replay_delivers_it(wapi, receiver, etype):
    receiver.on("/dead", rx.respond(410, {"gone": True}))
    ep = create_endpoint(wapi, receiver.url("/dead"), [etype], retry=FAST)
    eid, _ = send_ok(wapi, etype, {"k": "v"})
    d = only_delivery(wapi, eid, "dead")
    items = [t for t in wapi.dead(task_type="webhook.delivery", limit=1000)
             if t["queue"] == "webhook:" + ep["id"]]
    assert [t["task_id"] for t in items] == [d["task_id"]]
    assert items[0]["task_type"] == "webhook.delivery"
    assert items[0]["last_error"]["message"] == "HTTP 410"
    receiver.on("/dead", rx.ok())
    r = wapi.post("/v1/tasks/%s/replay" % d["task_id"], {})
    assert r.status == 200, r
    only_delivery(wapi, eid, "succeeded")
    reqs = receiver.got("/dead")
    assert len(reqs) == 2
    assert reqs[1].headers["webhook-id"] == eid and reqs[1].json == {"k": "v"}
    sw_verify(ep["secrets"], reqs[1].headers, reqs[1].body)
    assert [a["outcome"] for a in attempts_of(wapi, d["task_id"])] == ["failed", "succeeded"]
    assert d["task_id"] not in {t["task_id"] for t in
                                wapi.dead(task_type="webhook.delivery", limit=1000)}


def test_dead_and_task_lists_filter_by_an_endpoint_queue(wapi, receiver, etype):
    """An operator finds one endpoint's dead deliveries by its queue, webhook:{endpoint_id}."""
    receiver.on("/dq", rx.respond(404))
    ep = create_endpoint(wapi, receiver.url("/dq"), [etype])
    eid, _ = send_ok(wapi, etype)
    d = only_delivery(wapi, eid, "dead")
    queue = "webhook:" + ep["id"]
    r = wapi.get("/v1/dead?queue=" + queue)
    assert r.status == 200, r
    assert [t["task_id"] for t in r.json["tasks"]] == [d["task_id"]]
    r = wapi.get("/v1/tasks?queue=" + queue)
    assert r.status == 200, r
    assert [t["task_id"] for t in r.json["tasks"]] == [d["task_id"]]


def test_redeliver_to_all_and_to_named_endpoints(wapi, receiver, etype):
    a = create_endpoint(wapi, receiver.url("/ra1"), [etype])
    b = create_endpoint(wapi, receiver.url("/ra2"), [etype])
    eid, n = send_ok(wapi, etype, {"x": 1})
    assert n == 2
    wait_deliveries(wapi, eid, n=2)
    r = wapi.post("/v1/events/%s/redeliver" % eid, {})
    assert r.status in (200, 202), r
    ev = wait_deliveries(wapi, eid, n=4)
    assert len(ev["deliveries"]) == 4
    receiver.wait_for(2, path="/ra1")
    receiver.wait_for(2, path="/ra2")
    r = wapi.post("/v1/events/%s/redeliver" % eid, {"endpoints": [b["id"]]})
    assert r.status in (200, 202), r
    ev = wait_deliveries(wapi, eid, n=5)
    assert sum(1 for d in ev["deliveries"] if d["endpoint_id"] == b["id"]) == 3
    assert sum(1 for d in ev["deliveries"] if d["endpoint_id"] == a["id"]) == 2
    reqs = receiver.wait_for(3, path="/ra2")
    assert {q.headers["webhook-id"] for q in reqs} == {eid}
    assert all(q.json == {"x": 1} for q in reqs)
    assert receiver.quiet_for(0.3, path="/ra1") and len(receiver.got("/ra1")) == 2
    r = wapi.post("/v1/events/%s/redeliver" % eid, {"endpoints": ["ep_nope"]})
    assert r.status == 404, r
    r = wapi.post("/v1/events/nope-%s/redeliver" % eid, {})
    assert r.status == 404, r
    r = wapi.post("/v1/events/%s/redeliver" % eid, {"endpoints": "x"})
    assert r.status == 400, r
    assert len(get_event(wapi, eid)["deliveries"]) == 5


def test_delivery_metrics(wapi, receiver, etype):
    receiver.on("/m", rx.ok(), rx.ok(), rx.ok(), rx.respond(404))
    ep = create_endpoint(wapi, receiver.url("/m"), [etype], max_in_flight=1)
    before = wapi.metrics()
    acc0 = metric_value(before, "madeira_events_received_total", source=SOURCE,
                        result="accepted")
    ids = [send_ok(wapi, etype)[0] for _ in range(4)]
    for eid in ids:
        wait_deliveries(wapi, eid, ("succeeded", "dead"))
    m = wapi.metrics()
    assert metric_value(m, "madeira_events_received_total", source=SOURCE,
                        result="accepted") - acc0 >= 4
    assert metric_value(m, "madeira_deliveries_total", endpoint=ep["id"], result="success") == 3
    assert metric_value(m, "madeira_deliveries_total", endpoint=ep["id"], result="permanent") == 1
    assert metric_value(m, "madeira_delivery_duration_seconds_count", endpoint=ep["id"]) == 4
    total = metric_value(m, "madeira_delivery_duration_seconds_sum", endpoint=ep["id"])
    assert 0 <= total < 4 * 2.0, total
    assert metric_value(m, "madeira_delivery_duration_seconds_bucket", endpoint=ep["id"],
                        le="+Inf") == 4
    assert "# TYPE madeira_delivery_duration_seconds histogram" in m
    for secret in ep["secrets"]:
        assert secret not in m


def test_loopback_target_is_refused_without_allow_private(start_server, receiver, etype):
    server = start_server(config=webhook_config(allow_private=False))
    api = server.api
    ep = create_endpoint(api, receiver.url("/ssrf"), [etype], retry=FAST)
    mapped = create_endpoint(api, "http://[::ffff:127.0.0.1]:%d/ssrf6" % receiver.port,
                             [etype], retry=FAST)
    named = create_endpoint(api, "http://localhost:%d/ssrf-name" % receiver.port, [etype],
                            retry=FAST)
    eid, n = send_ok(api, etype)
    assert n == 3
    ev = wait_deliveries(api, eid, "dead")
    for d in ev["deliveries"]:
        task = api.task(d["task_id"])
        assert task["retry_count"] == 0, "a refused target is permanent"
        assert "refused" in task["last_error"]["message"], (d, task["last_error"])
        assert task["last_error"]["type"] == "webhook.permanent"
    assert {d["endpoint_id"] for d in ev["deliveries"]} == {ep["id"], mapped["id"], named["id"]}
    assert receiver.quiet_for(0.3) and receiver.got() == [], "nothing reached the receiver"


def test_target_uri_delivers_straight_to_that_url(wapi, receiver, etype):
    sub = create_endpoint(wapi, receiver.url("/subscribed"), [etype])
    ev = event_body(etype, {"direct": True}, target_uri=receiver.url("/direct"))
    r = post_event(wapi, ev, source=DIRECT_SOURCE, secret=DIRECT_SECRET)
    assert r.status == 202 and r.json["deliveries"] == 1, r
    req = receiver.wait_for(1, path="/direct")[0]
    assert req.json == {"direct": True} and req.headers["webhook-id"] == ev["event_id"]
    assert sw_verify([TARGET_SECRET], req.headers, req.body) == [TARGET_SECRET]
    stored = wait_deliveries(wapi, ev["event_id"])
    assert stored["target_uri"] == receiver.url("/direct")
    assert receiver.quiet_for(0.3, path="/subscribed"), "a targeted event goes nowhere else"
    assert sub["id"] not in {d["endpoint_id"] for d in stored["deliveries"]}


def test_endpoint_failing_past_disable_after_is_disabled_with_a_reason(start_server, receiver,
                                                                       etype):
    config = webhook_config(extra="").replace("max_retries = 3",
                                              'max_retries = 3\ndisable_after = "300ms"')
    api = start_server(config=config).api
    receiver.on("/dis", rx.respond(500))
    ep = create_endpoint(api, receiver.url("/dis"), [etype],
                         retry={"max_retries": 20, "initial_ms": 100, "max_ms": 100,
                                "jitter": 0, "fast_retries": 0})
    eid, _ = send_ok(api, etype)
    deadline = time.monotonic() + 10
    while True:
        got = api.get("/v1/endpoints/" + ep["id"]).json
        if not got["enabled"]:
            break
        assert time.monotonic() < deadline, got
        receiver.quiet_for(0.2, path="/dis")  # returns early on the next attempt
    assert "disabled automatically" in got["disabled_reason"], got
    assert "HTTP 500" in got["disabled_reason"] and got["failing_since"], got
    _, n = send_ok(api, etype)
    assert n == 0, "a disabled endpoint gets no new deliveries"
    assert receiver.quiet_for(0.5, path="/dis"), "nor sends the ones already queued"
    receiver.on("/dis", rx.ok())
    r = api.request("PATCH", "/v1/endpoints/" + ep["id"], body={"enabled": True})
    assert r.status == 200 and r.json["disabled_reason"] is None and r.json["enabled"], r
    only_delivery(api, eid, "succeeded"), "enabled again, the queued delivery goes out"


def test_retry_after_as_an_http_date(wapi, receiver, etype):
    when = email.utils.formatdate(time.time() + 2, usegmt=True)
    receiver.on("/rad", rx.respond(503, {}, {"Retry-After": when}), rx.ok())
    create_endpoint(wapi, receiver.url("/rad"), [etype], retry=dict(FAST, max_retries=5))
    eid, _ = send_ok(wapi, etype)
    only_delivery(wapi, eid, "succeeded", timeout=10)
    a, b = receiver.got("/rad")
    assert b.t - a.t >= 0.9, b.t - a.t  # the date has whole seconds: 1 to 2 s from now


def test_408_is_retryable_and_excerpt_is_the_first_kib(wapi, receiver, etype):
    big = "é" + "x" * 3000
    receiver.on("/408", rx.respond(408, big.encode()), rx.respond(200, big.encode()))
    create_endpoint(wapi, receiver.url("/408"), [etype], retry=FAST)
    eid, _ = send_ok(wapi, etype)
    d = only_delivery(wapi, eid, "succeeded")
    atts = attempts_of(wapi, d["task_id"])
    assert [a["http_status"] for a in atts] == [408, 200]
    for a in atts:
        ex = a["response_excerpt"].encode()
        assert 1020 <= len(ex) <= 1024 and big.encode().startswith(ex), len(ex)
