"""The embedded store and redis-pg give the same answers to the same requests.

Each test starts one server on each store with the same config, plays one scripted sequence
of requests against both, and compares every answer, status and body, field for field. Values
each server makes anew are replaced by placeholders first: times, lease ids, cursors, trace
ids it generated, endpoint ids and the secrets it generated, durations and its own worker id.

The conformance suite holds each store to the contract's rules; this catches what the rules
leave unsaid, a field one store fills differently (a dead task's `next_attempt_at`, a queue's
zero depths on /metrics were two). It needs both stores, so it runs in `make
integration-redis-pg` only. Back-offs are an hour long or replaced; the waits are bounded polls
for webhook deliveries to end and for 200 ms leases to expire.
"""

import json
import re
import time

import pytest

import conftest
from client import Api, envelope, rfc3339
from receiver import Receiver, ok, respond
from webhooks_support import post_event, wait_deliveries, webhook_config

pytestmark = pytest.mark.skipif(
    conftest.test_store() != "redis-pg",
    reason="compares the embedded store with redis-pg: runs in make integration-redis-pg")

TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
# Keys whose value each server makes for itself (placeholder when not null).
OWN_VALUE_KEYS = {"lease_id", "next_cursor", "duration_ms"}
GIVEN_TRACE = "%032x" % 0xabc
GIVEN_SECRET = "whsec_c2VjcmV0LWZvci10aGUtcGFyaXR5LXRlc3Q="
# Back-offs long enough that no test sees one end; fast retries still happen at once.
CONFIG = webhook_config(max_retries=1, initial="50ms", max_delay="100ms", extra="""
[retry.default]
fast_retries = 1
initial = "1h"
max = "2h"
jitter = 0.0
""")


class Player:
    """Plays requests against one server and keeps what each answered, normalised."""

    def __init__(self, api):
        self.api = api
        self.raw = []  # (step, status, body) as answered
        self.names = {}  # a value this server made -> its placeholder

    def name(self, value, kind):
        """From now on `value` reads as <kind N>, N counting values of that kind on this server."""
        if value and value not in self.names:
            n = sum(1 for p in self.names.values() if p.startswith("<" + kind + " "))
            self.names[value] = "<%s %d>" % (kind, n)

    def call(self, step, method, path, body=None, **kw):
        r = self.api.request(method, path, body=body, **kw)
        self.record(step, r.status, r.json)
        return r.status, r.json

    def record(self, step, status, data):
        self.raw.append((step, status, data))

    def name_deliveries(self, event):
        """Names the event's delivery task ids not named yet, in (endpoint, status) order."""
        for d in sorted(event["deliveries"],
                        key=lambda d: (self.normalise(d["endpoint_id"]), d["status"])):
            self.name(d["task_id"], "delivery")

    @property
    def answers(self):
        """What was answered, normalised with every name given so far."""
        return [(step, status, self.normalise(data)) for step, status, data in self.raw]

    def normalise(self, v, key=""):
        if isinstance(v, dict):
            return {k: self.normalise(x, k) for k, x in v.items()}
        if isinstance(v, list):
            items = [self.normalise(x, key) for x in v]
            # Deliveries and endpoints are listed in endpoint-id order, and the ids are random.
            if key in ("deliveries", "endpoints"):
                items.sort(key=lambda x: json.dumps(x, sort_keys=True))
            return items
        if key in OWN_VALUE_KEYS and v is not None:
            return "<%s>" % key
        if not isinstance(v, str):
            return v
        if TIME.match(v):
            return "<time>"
        if key == "trace_id" and v != GIVEN_TRACE:
            return "<trace>"
        if key == "worker_id" and v.startswith("madeira"):
            return "<this server>"
        if v.startswith("whsec_") and not GIVEN_SECRET.startswith(v.rstrip("\u2026")):
            return "<secret>"  # one the server made (whole, or its shown prefix)
        for value, placeholder in self.names.items():
            v = v.replace(value, placeholder)
        return v


def play_both(start_server, script, config=CONFIG):
    """Runs script(player) on an embedded and a redis-pg server; returns both players."""
    players = []
    for store in ("sqlite", "redis-pg"):
        server = start_server(config=config, store=store)
        p = Player(Api(server.port))
        script(p)
        players.append(p)
    return players


def assert_same_answers(one, other, names=("sqlite", "redis-pg")):
    assert [a[0] for a in one.answers] == [a[0] for a in other.answers], \
        "the script took different paths"
    diffs = ["%s: %s" % (a[0], difference(a[2], b[2], names) if a[1] == b[1] else
                         "status %s %s, %s %s" % (names[0], a[1], names[1], b[1]))
             for a, b in zip(one.answers, other.answers) if a != b]
    assert not diffs, "%d of %d answers differ:\n%s" % (len(diffs), len(one.answers),
                                                       "\n".join(diffs))


def difference(a, b, names, path=""):
    """Where two bodies part: each differing field by its path, or both values whole."""
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        return "; ".join(difference(a[k], b[k], names, "%s/%s" % (path, k))
                         for k in a if a[k] != b[k])
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return "; ".join(difference(x, y, names, "%s/%d" % (path, i))
                         for i, (x, y) in enumerate(zip(a, b)) if x != y)
    return "%s %s %s, %s %s" % (path or "body", names[0], json.dumps(a, sort_keys=True),
                                names[1], json.dumps(b, sort_keys=True))


def metrics_of(p, step, names, queues):
    """Records the samples of `names` with a queue label in `queues`, or all if queues is None."""
    text = p.api.metrics()
    keep = sorted(line for line in text.splitlines()
                  if line.split("{")[0] in names
                  and (queues is None or any('queue="%s"' % q in line for q in queues)))
    p.record(step, 200, keep)


def env(task_id, queue="pq", **fields):
    return envelope(queue, **{"task_type": "job.a", "task_id": task_id,
                              "payload": {"id": task_id}, **fields})


def lease_ids(data):
    return {x["task"]["task_id"]: x["lease_id"] for x in data["leases"]}


def task_lifecycle(p):
    """Submit, lease, finish, fail every way, cancel, dead letters, replay, search, metrics."""
    c = p.call
    c("submit a", "POST", "/v1/tasks", env("a", trace_id=GIVEN_TRACE, priority=200))
    c("submit a again", "POST", "/v1/tasks", env("a", trace_id=GIVEN_TRACE, priority=200))
    c("submit a changed", "POST", "/v1/tasks", env("a", payload={"other": 1}))
    c("submit b keyed", "POST", "/v1/tasks", env("b", idempotency_key="k1", max_retries=2))
    c("submit b2 same key", "POST", "/v1/tasks", env("b2", idempotency_key="k1"))
    c("submit later", "POST", "/v1/tasks", env("later", schedule_time=rfc3339(time.time() + 86400)))
    c("batch", "POST", "/v1/tasks/batch", {"tasks": [
        env("c", task_type="job.b", payload_version=2, max_retries=0), {"task_id": "bad"},
        env("d", max_retries=3), env("e", max_retries=0), env("f", queue="other")]})
    for t in ("a", "b", "b2", "later", "c", "bad", "f"):
        c("get " + t, "GET", "/v1/tasks/" + t)

    c("lease job.b v1 only", "POST", "/v1/leases", {
        "worker_id": "w1", "queues": ["pq"], "task_types": {"job.b": [1]}, "max_tasks": 5})
    _, got = c("lease two", "POST", "/v1/leases", {"worker_id": "w1", "queues": ["pq"],
                                                  "max_tasks": 2, "lease_ms": 60000})
    held = lease_ids(got)
    c("cancel running", "POST", "/v1/tasks/%s/cancel" % sorted(held)[0])
    for t, lease in sorted(held.items()):
        c("extend " + t, "POST", "/v1/leases/%s/extend" % lease, {"extend_ms": 1000})
        c("extend %s too far" % t, "POST", "/v1/leases/%s/extend" % lease,
          {"extend_ms": 86400000})
    c("ack a", "POST", "/v1/leases/%s/ack" % held["a"], {"result": {"done": True}})
    c("ack a again", "POST", "/v1/leases/%s/ack" % held["a"], {})
    c("fail a after ack", "POST", "/v1/leases/%s/fail" % held["a"],
      {"error": {"type": "E", "message": "late"}})
    c("fail b back-off", "POST", "/v1/leases/%s/fail" % held["b"],
      {"error": {"type": "E", "message": "wait", "stack": "at x"}, "retry": "auto"})
    c("get b retrying", "GET", "/v1/tasks/b")
    c("lease job.a, b backing off", "POST", "/v1/leases", {"worker_id": "w1", "queues": ["pq"],
                                               "task_types": {"job.a": [1]}, "max_tasks": 1})

    _, got = c("lease the rest", "POST", "/v1/leases", {"worker_id": "w2", "queues": ["pq"],
                                                       "max_tasks": 10})
    held = lease_ids(got)
    c("fail c", "POST", "/v1/leases/%s/fail" % held["c"],
      {"error": {"type": "E", "message": "c broke"}, "retry": "auto"})
    c("fail d fast", "POST", "/v1/leases/%s/fail" % held["d"],
      {"error": {"type": "E", "message": "blip"}, "retry": "fast"})
    c("fail e never", "POST", "/v1/leases/%s/fail" % held["e"],
      {"error": {"type": "E", "message": "e broke"}, "retry": "never"})
    _, got = c("lease d again", "POST", "/v1/leases", {"worker_id": "w2", "queues": ["pq"],
                                                      "max_tasks": 10})
    c("fail d with a delay", "POST", "/v1/leases/%s/fail" % lease_ids(got)["d"],
      {"error": {"type": "E", "message": "later"}, "retry": "backoff", "retry_after_ms": 7200000})
    c("batch ack", "POST", "/v1/leases/ack", {"acks": [{"lease_id": "gone"}]})
    for t in ("a", "b", "c", "d", "e"):
        c("get " + t, "GET", "/v1/tasks/" + t)
        c("attempts " + t, "GET", "/v1/tasks/%s/attempts" % t)

    c("dead", "GET", "/v1/dead?queue=pq")
    c("dead of job.b", "GET", "/v1/dead?queue=pq&task_type=job.b")
    c("replay c edited", "POST", "/v1/tasks/c/replay",
      {"payload": {"fixed": True}, "payload_version": 1, "max_retries": 4})
    c("replay c again", "POST", "/v1/tasks/c/replay", {})
    c("cancel e (dead)", "POST", "/v1/tasks/e/cancel")
    c("cancel d (retrying)", "POST", "/v1/tasks/d/cancel")
    c("cancel later (scheduled)", "POST", "/v1/tasks/later/cancel")
    c("cancel later again", "POST", "/v1/tasks/later/cancel")
    c("replay none", "POST", "/v1/dead/replay", {"filter": {"queue": "pq"}})
    c("cancel dead none", "POST", "/v1/dead/cancel", {"task_ids": ["a", "nope"]})

    for query in ("queue=pq", "queue=pq&status=succeeded", "queue=pq&status=pending",
                  "queue=pq&status=cancelled", "task_type=job.b", "trace_id=" + GIVEN_TRACE,
                  "queue=pq&limit=2"):
        c("search " + query, "GET", "/v1/tasks?" + query)
    pages, cursor = [], None
    for _ in range(10):
        page = p.api.get("/v1/tasks?queue=pq&limit=3" + ("&cursor=" + cursor if cursor else ""))
        page = page.json
        pages.append([[t["task_id"], t["status"]] for t in page["tasks"]])
        cursor = page["next_cursor"]
        if not cursor:
            break
    p.record("search pages of 3", 200, pages)
    metrics_of(p, "metrics", {"madeira_queue_depth", "madeira_tasks_submitted_total",
                              "madeira_dead_letters_total"}, ["pq", "other"])
    metrics_of(p, "metrics by type", {"madeira_task_outcomes_total", "madeira_retries_total"},
               None)


def test_task_lifecycle_answers_are_the_same_on_both_stores(start_server):
    sqlite, redis_pg = play_both(start_server, task_lifecycle)
    # The script did what it says (on the embedded store; then both must agree).
    pages = dict((a[0], a[2]) for a in sqlite.answers)["search pages of 3"]
    assert pages == [[["e", "cancelled"], ["d", "cancelled"], ["c", "pending"]],
                     [["later", "cancelled"], ["b2", "running"], ["b", "retrying"]],
                     [["a", "succeeded"]]]
    assert_same_answers(sqlite, redis_pg)


def read_back(p):
    """Reads again what task_lifecycle left: every task, its attempts, lists and depths."""
    for t in ("a", "b", "b2", "later", "c", "d", "e", "f"):
        p.call("get " + t, "GET", "/v1/tasks/" + t)
        p.call("attempts " + t, "GET", "/v1/tasks/%s/attempts" % t)
    p.call("dead", "GET", "/v1/dead?queue=pq")
    p.call("search", "GET", "/v1/tasks?queue=pq")
    metrics_of(p, "depths", {"madeira_queue_depth"}, ["pq", "other"])


def test_both_stores_keep_the_same_over_a_restart(start_server, tmp_path):
    after = []
    for store in ("sqlite", "redis-pg"):
        data = str(tmp_path / store)
        server = start_server(data_dir=data, config=CONFIG, store=store)
        task_lifecycle(Player(Api(server.port)))
        before = Player(Api(server.port))
        read_back(before)
        assert server.terminate()[0] == 0
        again = start_server(data_dir=data, config=CONFIG, store=store)
        after.append(Player(Api(again.port)))
        read_back(after[-1])
        assert_same_answers(before, after[-1], (store + " before", store + " after"))
    assert dict((a[0], a[1]) for a in after[0].answers)["get b2"] == 200
    assert_same_answers(*after)


def expired_leases(p):
    """Leases left to expire: a fast retry first, then the back-off tier; stale calls refused."""
    c = p.call
    c("submit x", "POST", "/v1/tasks", env("x", queue="xq", max_retries=3, timeout_ms=5000))
    stale = []
    for n in (1, 2):
        _, got = c("lease x %d" % n, "POST", "/v1/leases", {
            "worker_id": "w1", "queues": ["xq"], "max_tasks": 1, "lease_ms": 200})
        stale.append(got["leases"][0]["lease_id"] if got["leases"] else "none")
        wait_attempts(p.api, "x", n)
        c("get x after expiry %d" % n, "GET", "/v1/tasks/x")
    c("attempts x", "GET", "/v1/tasks/x/attempts")
    c("ack stale", "POST", "/v1/leases/%s/ack" % stale[0], {})
    c("extend stale", "POST", "/v1/leases/%s/extend" % stale[1], {"extend_ms": 100})
    c("fail stale", "POST", "/v1/leases/%s/fail" % stale[1], {"error": {"type": "E",
                                                                         "message": "late"}})
    c("lease x backing off", "POST", "/v1/leases", {"worker_id": "w1", "queues": ["xq"],
                                                    "max_tasks": 1})


def wait_attempts(api, task_id, n, timeout=15.0):
    """Polls (bounded) until the task has n finished attempts."""
    deadline = time.monotonic() + timeout
    while True:
        attempts = api.get("/v1/tasks/%s/attempts" % task_id).json["attempts"]
        if len(attempts) >= n and all(a["finished_at"] for a in attempts):
            return
        assert time.monotonic() < deadline, "%s has attempts %s" % (task_id, attempts)
        time.sleep(0.02)


def test_expired_leases_end_the_same_on_both_stores(start_server):
    sqlite, redis_pg = play_both(start_server, expired_leases)
    answers = dict((a[0], a[2]) for a in sqlite.answers)
    assert [a["outcome"] for a in answers["attempts x"]["attempts"]] == ["lease_expired"] * 2
    assert answers["get x after expiry 1"]["status"] == "pending"
    assert answers["get x after expiry 2"]["status"] == "retrying"
    assert_same_answers(sqlite, redis_pg)


# JSON each store must carry through unchanged: integers past 2^53 and at int64's edge, floats
# at full precision, escapes, NUL and other control characters, characters outside the BMP.
UNUSUAL = {"big": 12345678901234567890, "min": -9223372036854775808, "tenth": 0.1,
           "huge": 1e300, "precise": 1.2345678901234567, "esc": "a\"b\\c/d\n\t\u0000e",
           "ctl": "\u001f\u007f", "text": "h\u00e9llo \u2603 \U0001d11e", "": "",
           "nested": [[{"a": [None, True, False, -0.5]}]]}


def unusual_values(p):
    """Unusual JSON and names through submit, lease, ack and fail, then read back once ended."""
    c = p.call
    for t in ("u1", "u2"):
        c("submit " + t, "POST", "/v1/tasks", env(
            t, queue="uq", payload=UNUSUAL, idempotency_key="k-" + t + "-\u00e9~ \u2603"))
    _, got = c("lease", "POST", "/v1/leases", {"worker_id": "w\u00e9~ \u2603", "queues": ["uq"],
                                              "max_tasks": 2})
    held = lease_ids(got)
    c("ack u1", "POST", "/v1/leases/%s/ack" % held["u1"], {"result": UNUSUAL})
    c("fail u2", "POST", "/v1/leases/%s/fail" % held["u2"], {
        "error": {"type": "\u00c9rror", "message": UNUSUAL["esc"] + UNUSUAL["text"],
                  "stack": UNUSUAL["ctl"] * 100}, "retry": "never"})
    for t in ("u1", "u2"):
        c("get " + t, "GET", "/v1/tasks/" + t)
        c("attempts " + t, "GET", "/v1/tasks/%s/attempts" % t)
    c("dead", "GET", "/v1/dead?queue=uq")
    c("replay with it", "POST", "/v1/tasks/u2/replay", {"payload": dict(UNUSUAL, again=True)})
    c("get u2 replayed", "GET", "/v1/tasks/u2")


def test_unusual_values_come_back_the_same_from_both_stores(start_server):
    sqlite, redis_pg = play_both(start_server, unusual_values)
    answers = dict((a[0], a[2]) for a in sqlite.answers)
    assert answers["get u1"]["payload"] == UNUSUAL
    assert answers["get u1"]["result"] == UNUSUAL
    assert answers["get u2 replayed"]["payload"] == dict(UNUSUAL, again=True)
    assert_same_answers(sqlite, redis_pg)


SETTLED = ("succeeded", "dead")  # a delivery's ends, which the webhook script waits for


def webhooks(receiver):
    def script(p):
        c = p.call
        _, good = c("create good", "POST", "/v1/endpoints", {
            "url": receiver.url("/good"), "event_types": ["order.*"], "secrets": [GIVEN_SECRET],
            "headers": {"X-Team": "billing"}, "rate_limit": {"per_second": 100, "burst": 10},
            "success": {"json_pointer": "/ok", "equals": True},
            "template": {"order": "{{/payload/order_id}}", "kind": "{{/event_type}}"}})
        p.name(good["id"], "endpoint")
        _, bad = c("create failing", "POST", "/v1/endpoints", {
            "url": receiver.url("/bad"), "event_types": ["order.paid"], "max_in_flight": 2})
        p.name(bad["id"], "endpoint")
        c("rotate failing", "POST", "/v1/endpoints/%s/rotate" % bad["id"])
        c("patch good", "PATCH", "/v1/endpoints/" + good["id"], {"timeout_ms": 3000})
        c("patch bad field", "PATCH", "/v1/endpoints/" + good["id"], {"url": "ftp://x"})
        c("list", "GET", "/v1/endpoints")

        def event(step, ev, **kw):
            r = post_event(p.api, ev, **kw)
            p.record(step, r.status, r.json)

        event("paid", {"event_id": "e1", "event_type": "order.paid",
                       "payload": {"order_id": 7}, "trace_id": GIVEN_TRACE})
        event("paid again", {"event_id": "e1", "event_type": "order.paid",
                             "payload": {"order_id": 7}})
        event("made", {"event_id": "e2", "event_type": "order.made", "payload": {"order_id": 8}})
        event("nobody's", {"event_id": "e3", "event_type": "user.made", "payload": {}})
        event("bad signature", {"event_id": "e4", "event_type": "order.paid", "payload": {}},
              secret="wrong")
        event("no id", {"event_type": "order.paid", "payload": {}})
        for e in ("e1", "e2"):
            wait_deliveries(p.api, e, SETTLED, timeout=15.0)
            _, ev = c("event " + e, "GET", "/v1/events/" + e)
            p.name_deliveries(ev)
            for d in sorted(ev["deliveries"], key=lambda d: p.normalise(d["task_id"])):
                c("delivery " + p.normalise(d["task_id"]), "GET", "/v1/tasks/" + d["task_id"])
                c("attempts of " + p.normalise(d["task_id"]), "GET",
                  "/v1/tasks/%s/attempts" % d["task_id"])
        c("event e3", "GET", "/v1/events/e3")
        c("dead deliveries", "GET", "/v1/dead?queue=webhook:" + bad["id"])
        _, ev = c("redeliver to good", "POST", "/v1/events/e1/redeliver",
                  {"endpoints": [good["id"]]})
        p.name_deliveries(ev)
        c("redeliver to none", "POST", "/v1/events/e1/redeliver", {"endpoints": ["nope"]})
        wait_deliveries(p.api, "e1", SETTLED, timeout=15.0)
        c("event e1 redelivered", "GET", "/v1/events/e1")
        c("disable failing", "PATCH", "/v1/endpoints/" + bad["id"], {"enabled": False})
        c("delete good", "DELETE", "/v1/endpoints/" + good["id"])
        c("get deleted", "GET", "/v1/endpoints/" + good["id"])
        c("list after", "GET", "/v1/endpoints")
        metrics_of(p, "metrics", {"madeira_queue_depth"},
                   ["webhook:" + good["id"], "webhook:" + bad["id"]])
        metrics_of(p, "metrics of events and deliveries",
                   {"madeira_events_received_total", "madeira_deliveries_total"}, None)
    return script


def test_webhook_answers_are_the_same_on_both_stores(start_server):
    rx = Receiver()
    try:
        rx.on("/good", ok())
        rx.on("/bad", respond(500, {"error": "down"}))
        sqlite, redis_pg = play_both(start_server, webhooks(rx))
    finally:
        rx.close()
    event = dict((a[0], a[2]) for a in sqlite.answers)["event e1 redelivered"]
    assert sorted((d["endpoint_id"], d["status"]) for d in event["deliveries"]) == [
        ("<endpoint 0>", "succeeded"), ("<endpoint 0>", "succeeded"), ("<endpoint 1>", "dead")]
    assert_same_answers(sqlite, redis_pg)
