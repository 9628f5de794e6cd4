"""A small HTTP client for the Madeira API (standard library only), shared by the tests."""

import datetime
import http.client
import json
import socket
import time
import uuid


class Resp:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body
        try:
            self.json = json.loads(body) if body else None
        except ValueError:
            self.json = None

    @property
    def code(self):
        """The error code of a 4xx/5xx body, or None."""
        if isinstance(self.json, dict) and isinstance(self.json.get("error"), dict):
            return self.json["error"].get("code")
        return None

    @property
    def field(self):
        if isinstance(self.json, dict) and isinstance(self.json.get("error"), dict):
            return self.json["error"].get("field")
        return None

    def __repr__(self):
        return "Resp(%d, %r)" % (self.status, self.body[:500])


class Api:
    def __init__(self, port, token=None, host="127.0.0.1"):
        self.host = host
        self.port = port
        self.token = token

    @property
    def url(self):
        return "http://%s:%d" % (self.host, self.port)

    def request(self, method, path, body=None, headers=None, raw=None, timeout=15, token=None):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            h = {"Accept": "application/json"}
            data = None
            if raw is not None:
                data = raw if isinstance(raw, bytes) else raw.encode()
                h["Content-Type"] = "application/json"
            elif body is not None:
                data = json.dumps(body).encode()
                h["Content-Type"] = "application/json"
            tok = token if token is not None else self.token
            if tok:
                h["Authorization"] = "Bearer " + tok
            h.update(headers or {})
            conn.request(method, path, body=data, headers=h)
            r = conn.getresponse()
            return Resp(r.status, dict(r.getheaders()), r.read().decode("utf-8", "replace"))
        finally:
            conn.close()

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body=body if body is not None else {}, **kw)

    def put(self, path, body=None, **kw):
        return self.request("PUT", path, body=body, **kw)

    # Domain helpers -------------------------------------------------------------------------

    def submit(self, env, **kw):
        return self.post("/v1/tasks", env, **kw)

    def submit_ok(self, env):
        r = self.submit(env)
        assert r.status == 202, r
        return r.json["task_id"]

    def task(self, task_id):
        r = self.get("/v1/tasks/" + task_id)
        assert r.status == 200, r
        return r.json

    def attempts(self, task_id):
        r = self.get("/v1/tasks/%s/attempts" % task_id)
        assert r.status == 200, r
        body = r.json
        return body["attempts"] if isinstance(body, dict) else body

    def lease(self, queues, worker_id="w1", max_tasks=1, wait_ms=0, timeout=40, **extra):
        body = {"worker_id": worker_id, "queues": queues, "max_tasks": max_tasks,
                "wait_ms": wait_ms}
        body.update(extra)
        r = self.post("/v1/leases", body, timeout=timeout)
        assert r.status == 200, r
        return r.json["leases"]

    def lease_one(self, queue, wait_ms=3000, **extra):
        leases = self.lease([queue], wait_ms=wait_ms, **extra)
        assert len(leases) == 1, leases
        return leases[0]

    def ack(self, lease_id, result=None):
        return self.post("/v1/leases/%s/ack" % lease_id, {"result": result} if result else {})

    def fail(self, lease_id, retry="auto", message="boom", **extra):
        body = {"error": {"type": "TestError", "message": message}, "retry": retry}
        body.update(extra)
        return self.post("/v1/leases/%s/fail" % lease_id, body)

    def search(self, **query):
        qs = "&".join("%s=%s" % kv for kv in query.items())
        r = self.get("/v1/tasks" + ("?" + qs if qs else ""))
        assert r.status == 200, r
        return r.json

    def count_tasks(self):
        """Every task the server holds, walking the cursor pages (bounded)."""
        total, cursor = 0, None
        for _ in range(1000):
            q = "/v1/tasks?limit=1000" + ("&cursor=" + cursor if cursor else "")
            r = self.get(q)
            assert r.status == 200, r
            total += len(r.json["tasks"])
            cursor = r.json.get("next_cursor")
            if not cursor:
                return total
        raise AssertionError("cursor paging did not end")

    def dead(self, **query):
        qs = "&".join("%s=%s" % kv for kv in query.items())
        r = self.get("/v1/dead" + ("?" + qs if qs else ""))
        assert r.status == 200, r
        return dead_items(r.json)

    def wait_status(self, task_id, statuses, timeout=5.0):
        """Polls GET until the task reaches one of `statuses` (bounded)."""
        if isinstance(statuses, str):
            statuses = (statuses,)
        deadline = time.monotonic() + timeout
        while True:
            t = self.task(task_id)
            if t["status"] in statuses:
                return t
            if time.monotonic() > deadline:
                raise AssertionError("task %s stayed %s, wanted %s" % (task_id, t["status"], statuses))
            time.sleep(0.02)

    def metrics(self):
        r = self.get("/metrics")
        assert r.status == 200, r
        return r.body


def dead_items(body):
    if isinstance(body, list):
        return body
    for key in ("tasks", "dead", "items"):
        if key in body:
            return body[key]
    raise AssertionError("no list in /v1/dead answer: %r" % body)


def uid(prefix="t"):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:12])


def envelope(queue, task_type="it.job", **fields):
    env = {"task_type": task_type, "queue": queue, "payload_version": 1, "payload": {"n": 1}}
    env.update(fields)
    return env


def rfc3339(ts):
    """Unix seconds → RFC 3339 UTC with milliseconds."""
    dt = datetime.datetime.fromtimestamp(ts, tz=datetime.timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (dt.microsecond // 1000)


def parse_rfc3339(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def raw_exchange(port, data, read_timeout=5.0, host="127.0.0.1", until_closed=False):
    """Sends raw bytes and returns what the server answers before closing or timing out: its
    first response, or with `until_closed` everything until it closes, our side closed once the
    bytes are out (so a Content-Length longer than the body ends there)."""
    s = socket.create_connection((host, port), timeout=read_timeout)
    try:
        s.sendall(data)
        if until_closed:
            s.shutdown(socket.SHUT_WR)
        out = b""
        deadline = time.monotonic() + read_timeout
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                break
            if not chunk:
                break
            out += chunk
            if not until_closed and b"\r\n\r\n" in out:
                head, _, rest = out.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    k, _, v = line.partition(b":")
                    if k.strip().lower() == b"content-length":
                        length = int(v.strip())
                if len(rest) >= length:
                    break
        return out
    finally:
        s.close()
