"""Malformed HTTP at the wire: every request Beast cannot parse gets a 400 with an error code,
nothing changes, and the server goes on serving. The request decoders behind the parser are
fuzzed in fuzz/request_fuzz.cc; this is the real binary's socket handling around them."""

import json
import random

import pytest

from client import envelope, raw_exchange

VALID_SUBMIT_BODY = json.dumps(envelope("wire")).encode()


def submit_bytes(body=VALID_SUBMIT_BODY, extra=b""):
    return (b"POST /v1/tasks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra +
            b"Content-Length: %d\r\n\r\n" % len(body) + body)


# (id, raw request): each malformed in a way the HTTP parser itself must refuse.
MALFORMED = [
    ("garbage-request-line", b"GARBAGE\r\n\r\n"),
    ("no-version", b"GET /healthz\r\n\r\n"),
    ("bad-version", b"GET /healthz HTTP/9\r\n\r\n"),
    ("space-in-target", b"GET /v1/tasks /x HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("header-without-colon", b"GET /healthz HTTP/1.1\r\nHost x\r\n\r\n"),
    ("nul-in-header", b"GET /healthz HTTP/1.1\r\nHost: x\x00y\r\n\r\n"),
    ("content-length-not-a-number", submit_bytes(extra=b"Content-Length: abc\r\n")),
    ("two-content-lengths", b"POST /v1/tasks HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                            b"Content-Length: 3\r\n\r\n{}"),
    ("negative-content-length", b"POST /v1/tasks HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n"
                                b"\r\n{}"),
    ("bad-chunk-size", b"POST /v1/tasks HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                       b"\r\nzz\r\n{}\r\n0\r\n\r\n"),
    ("http2-preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
]


def status_of(out):
    """The status code of the first response in `out`, or None when nothing came back."""
    if not out:
        return None
    line = out.split(b"\r\n", 1)[0].split(b" ")
    assert line[0] in (b"HTTP/1.0", b"HTTP/1.1") and len(line) >= 2, out[:200]
    return int(line[1])


def error_code_of(out):
    body = out.partition(b"\r\n\r\n")[2]
    return json.loads(body)["error"]["code"]


@pytest.mark.parametrize("raw", [m[1] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_http_is_400_and_changes_nothing(server, api, raw):
    before = api.count_tasks()
    out = raw_exchange(server.port, raw, read_timeout=3)
    assert status_of(out) == 400, out[:300]
    assert error_code_of(out) == "invalid_field", out[:300]
    assert api.count_tasks() == before, "a malformed request must change nothing"
    assert api.get("/healthz").status == 200


def test_non_origin_targets_are_refused(server, api):
    before = api.count_tasks()
    for target in (b"http://x/v1/tasks", b"*", b"/v1/tasks%zz", b"v1/tasks"):
        out = raw_exchange(server.port, submit_bytes().replace(b"/v1/tasks", target, 1))
        assert status_of(out) == 400, (target, out[:300])
        assert error_code_of(out) == "invalid_field", (target, out[:300])
    assert api.count_tasks() == before


def mutate(data, rng):
    """A few random byte edits: flips, inserts, deletes, and CR/LF/NUL/':' where they hurt."""
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        pos = rng.randrange(len(data) + 1)
        what = rng.random()
        if what < 0.35 and pos < len(data):
            data[pos] ^= 1 << rng.randrange(8)
        elif what < 0.7:
            data[pos:pos] = bytes([rng.choice([0, 10, 13, 32, 58, 0x7F, 0xFF, rng.randrange(256)])])
        elif pos < len(data):
            del data[pos:pos + rng.randint(1, 8)]
    return bytes(data)


def test_randomly_damaged_requests_never_get_a_5xx(start_server):
    """300 seeded mutations of a submit, a lease and a search: each is answered below 500 (or
    the connection is closed), every error is JSON with a code, and the server stays up."""
    srv = start_server()
    rng = random.Random(20261201)
    lease = json.dumps({"worker_id": "w", "queues": ["wire"], "max_tasks": 5}).encode()
    seeds = [
        submit_bytes(),
        b"POST /v1/leases HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(lease) + lease,
        b"GET /v1/tasks?status=pending&queue=wire&limit=5 HTTP/1.1\r\nHost: x\r\n\r\n",
    ]
    statuses = {}
    for i in range(300):
        out = raw_exchange(srv.port, mutate(seeds[i % len(seeds)], rng), read_timeout=2,
                           until_closed=True)
        # Keep-alive may answer several requests on one connection: look at each status line.
        for response in out.split(b"HTTP/1.1 ")[1:]:
            status = int(response[:3])
            statuses[status] = statuses.get(status, 0) + 1
            assert status < 500, response[:300]
            if status >= 400:
                body = response.partition(b"\r\n\r\n")[2]
                assert json.loads(body[:body.rfind(b"}") + 1])["error"]["code"], response[:300]
        assert srv.proc.poll() is None, "the server died: " + srv.stderr()
    assert srv.api.get("/healthz").status == 200
    # The mutations reached the parser's refusals and the decoders' too, not only one of them.
    assert statuses.get(400, 0) > 100 and len(statuses) >= 3, statuses
