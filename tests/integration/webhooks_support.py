"""Shared helpers of the webhook tests: config, signed inbound events, endpoint helpers, a
Standard Webhooks verifier, and fixtures (a webhook-enabled server, a loopback receiver)."""

import base64
import hashlib
import hmac
import json
import os
import time

import pytest

from client import Api, uid
from conftest import Server
from receiver import Receiver

SOURCE = "src1"
SOURCE_SECRETS = ["src1-secret-new", "src1-secret-old"]  # rotating: both are accepted
OTHER_SOURCE = "src2"
OTHER_SECRET = "src2-secret"
DIRECT_SOURCE = "direct1"  # may name its events' target_uri
DIRECT_SECRET = "direct1-secret"
TARGET_SECRET = "whsec_dGFyZ2V0LXNlY3JldC1mb3ItZGlyZWN0LXRlc3Rz"

# The Standard Webhooks reference vector (issue 3 item 4).
VECTOR = {"id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
          "timestamp": 1614265330, "body": b'{"test": 2432232314}',
          "signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="}


def webhook_config(allow_private=True, breaker_failures=1000, breaker_cool_down="30s",
                   max_retries=3, initial="50ms", max_delay="200ms", extra=""):
    src_secrets = ", ".join('"%s"' % s for s in SOURCE_SECRETS)
    return """
[[sources]]
id = "%s"
secrets = [%s]

[[sources]]
id = "%s"
secrets = ["%s"]

[[sources]]
id = "%s"
secrets = ["%s"]
allow_target_uri = true
target_secrets = ["%s"]

[delivery]
allow_private_targets = %s
breaker_failures = %d
breaker_cool_down = "%s"
max_retries = %d

[retry.webhook]
fast_retries = 0
initial = "%s"
max = "%s"
multiplier = 2.0
jitter = 0.0
%s
""" % (SOURCE, src_secrets, OTHER_SOURCE, OTHER_SECRET, DIRECT_SOURCE, DIRECT_SECRET,
       TARGET_SECRET, "true" if allow_private else "false",
       breaker_failures, breaker_cool_down, max_retries, initial, max_delay, extra)


def source_headers(body, source=SOURCE, secret=SOURCE_SECRETS[0], timestamp=None):
    ts = str(int(time.time()) if timestamp is None else timestamp)
    mac = hmac.new(secret.encode(), ts.encode() + b"\n" + body, hashlib.sha256).hexdigest()
    return {"X-Madeira-Source": source, "X-Madeira-Timestamp": ts,
            "X-Madeira-Signature": "sha256=" + mac}


def event_body(event_type, payload=None, event_id=None, **extra):
    ev = {"event_id": event_id or uid("ev"), "event_type": event_type,
          "payload": payload if payload is not None else {"n": 1}}
    ev.update(extra)
    return ev


def post_event(api, event, source=SOURCE, secret=SOURCE_SECRETS[0], timestamp=None,
               headers=None, raw=None):
    """Signs and POSTs one event (a dict, or raw bytes); returns the Resp."""
    body = raw if raw is not None else json.dumps(event).encode()
    h = source_headers(body, source, secret, timestamp) if headers is None else headers
    return api.request("POST", "/v1/events", raw=body, headers=h)


def send_ok(api, event_type, payload=None, **kw):
    ev = event_body(event_type, payload, **kw)
    r = post_event(api, ev)
    assert r.status == 202, r
    assert r.json["event_id"] == ev["event_id"]
    return ev["event_id"], r.json["deliveries"]


def create_endpoint(api, url, event_types, **fields):
    body = {"url": url, "event_types": event_types}
    body.update(fields)
    r = api.post("/v1/endpoints", body)
    assert r.status == 201, r
    return r.json


def get_event(api, event_id, source=None):
    r = api.get("/v1/events/%s%s" % (event_id, "?source=" + source if source else ""))
    assert r.status == 200, r
    return r.json


def wait_deliveries(api, event_id, statuses=("succeeded",), timeout=10.0, n=None):
    """Polls the event until each delivery (and at least n) is in one of `statuses`."""
    if isinstance(statuses, str):
        statuses = (statuses,)
    deadline = time.monotonic() + timeout
    while True:
        ev = get_event(api, event_id)
        ds = ev["deliveries"]
        if ds and all(d["status"] in statuses for d in ds) and (n is None or len(ds) >= n):
            return ev
        if time.monotonic() > deadline:
            raise AssertionError("deliveries of %s not %s in %.1fs: %s"
                                 % (event_id, statuses, timeout, ds))
        time.sleep(0.02)


def metric_value(text, name, **labels):
    """The sum of the samples of `name` whose labels include `labels` (0 when none)."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        head, _, value = line.rpartition(" ")
        metric, _, rest = head.partition("{")
        if metric != name:
            continue
        pairs = {}
        for part in rest.rstrip("}").split(","):
            if "=" in part:
                k, _, v = part.partition("=")
                pairs[k.strip()] = v.strip().strip('"')
        if all(pairs.get(k) == str(v) for k, v in labels.items()):
            total += float(value)
    return total


# ---- a Standard Webhooks verifier, written from the spec (not from Madeira's code) ----

def sw_signature(secret, msg_id, timestamp, body):
    key = base64.b64decode(secret[len("whsec_"):])
    content = msg_id.encode() + b"." + str(timestamp).encode() + b"." + body
    return "v1," + base64.b64encode(hmac.new(key, content, hashlib.sha256).digest()).decode()


def sw_verify(secrets, headers, body, now=None, tolerance=300):
    """Returns the secrets whose signature is in webhook-signature; raises on any bad part."""
    msg_id = headers["webhook-id"]
    ts = int(headers["webhook-timestamp"])
    now = time.time() if now is None else now
    assert abs(now - ts) <= tolerance, "webhook-timestamp %d too far from now %d" % (ts, now)
    sent = headers["webhook-signature"].split(" ")
    assert all(s.startswith("v1,") for s in sent), sent
    matched = [s for s in secrets
               if any(hmac.compare_digest(sw_signature(s, msg_id, ts, body), x) for x in sent)]
    assert matched, "no signature verifies: %s" % sent
    return matched


def new_secret():
    return "whsec_" + base64.b64encode(os.urandom(24)).decode()


# ---- fixtures ----

@pytest.fixture(scope="module")
def wh_server(binary, tmp_path_factory):
    """One webhook-enabled server per test module; tests isolate by event type and endpoint."""
    d = tmp_path_factory.mktemp("wh")
    s = Server(str(d / "data"), str(d), config=webhook_config())
    yield s
    s.close()


@pytest.fixture
def wapi(wh_server):
    assert wh_server.proc.poll() is None, "the webhook server died: " + wh_server.stderr()
    return wh_server.api


@pytest.fixture
def receiver():
    rx = Receiver()
    yield rx
    rx.close()


@pytest.fixture
def etype():
    """An event type no other test uses."""
    return "it.%s.created" % uid("e").replace("-", "")


__all__ = ["Api", "uid"]
