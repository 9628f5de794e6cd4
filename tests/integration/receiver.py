"""A loopback webhook receiver for the integration tests (standard library only).

Threaded HTTP/1.1 with keep-alive. Every request is recorded (monotonic time, path, headers,
body, connection id) and answered by a behaviour chosen per path: one behaviour for every call,
or a sequence (call i gets item i; the last one repeats). Behaviours:

    ok()                      200 {"ok": true}
    respond(status, body=..., headers=...)
    fail_json()               200 {"success": false}
    retry_after(503, secs)    503 with Retry-After
    hang(secs)                read the request, answer nothing for `secs`, then close
    reset()                   close at once with SO_LINGER 0 (the peer sees RST)
    slow(secs, status=200)    answer after `secs`

Waits are bounded (Condition.wait / Event.wait with a timeout); `close()` wakes every hanging
or slow handler so a test never leaves a thread behind for long.
"""

import http.server
import json
import socket
import struct
import threading
import time


def respond(status=200, body=None, headers=None, delay=0.0):
    if body is None:
        body = {"ok": status < 300}
    return {"kind": "respond", "status": status, "body": body, "headers": dict(headers or {}),
            "delay": delay}


def ok():
    return respond(200, {"ok": True})


def fail_json():
    return respond(200, {"success": False})


def retry_after(status=503, seconds=1):
    return respond(status, {"error": "later"}, {"Retry-After": str(seconds)})


def hang(seconds=5.0):
    return {"kind": "hang", "delay": seconds}


def reset():
    return {"kind": "reset"}


def slow(seconds, status=200, body=None):
    return respond(status, body, delay=seconds)


class Request:
    def __init__(self, t, path, headers, body, conn_id):
        self.t = t              # time.monotonic() when the request was fully read
        self.path = path
        self.headers = headers  # lower-cased names
        self.body = body        # bytes
        self.conn_id = conn_id

    @property
    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return "Request(%s, %r)" % (self.path, self.body[:200])


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet
        pass

    def _handle(self):
        rx = self.server.receiver
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        behaviour = rx._enter(Request(time.monotonic(), self.path, headers, body,
                                      id(self.connection)))
        try:
            kind = behaviour["kind"]
            if kind == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                self.close_connection = True
                self.connection.close()
                return
            if kind == "hang":
                rx._closing.wait(behaviour["delay"])
                self.close_connection = True
                return
            if behaviour["delay"]:
                rx._closing.wait(behaviour["delay"])
            out = behaviour["body"]
            data = out if isinstance(out, bytes) else json.dumps(out).encode()
            self.send_response(behaviour["status"])
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in behaviour["headers"].items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self.close_connection = True
        finally:
            rx._leave()

    do_POST = do_PUT = do_GET = do_PATCH = do_DELETE = _handle


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 128


class Receiver:
    def __init__(self, host="127.0.0.1"):
        self._cond = threading.Condition()
        self._closing = threading.Event()
        self.requests = []
        self._behaviours = {}   # path -> list of behaviours
        self._calls = {}        # path -> calls answered so far
        self.default = ok()
        self.in_flight = 0
        self.max_in_flight = 0
        self._server = _Server((host, 0), _Handler)
        self._server.receiver = self
        self.host = host
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def url(self, path="/hook"):
        return "http://%s:%d%s" % (self.host, self.port, path)

    def on(self, path, *behaviours):
        """Answers for `path`: call i gets behaviours[i], the last one repeats."""
        with self._cond:
            self._behaviours[path] = list(behaviours)
            self._calls[path] = 0

    def _enter(self, req):
        with self._cond:
            self.requests.append(req)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            seq = self._behaviours.get(req.path.split("?")[0])
            if seq:
                i = self._calls[req.path.split("?")[0]]
                self._calls[req.path.split("?")[0]] = i + 1
                behaviour = seq[min(i, len(seq) - 1)]
            else:
                behaviour = self.default
            self._cond.notify_all()
            return behaviour

    def _leave(self):
        with self._cond:
            self.in_flight -= 1
            self._cond.notify_all()

    def got(self, path=None):
        with self._cond:
            return [r for r in self.requests if path is None or r.path == path]

    def wait_for(self, n, timeout=5.0, path=None):
        """Waits until at least n requests (to `path`) arrived; returns them. Bounded."""
        def have():
            return len([r for r in self.requests if path is None or r.path == path]) >= n
        with self._cond:
            if not self._cond.wait_for(have, timeout):
                got = [r for r in self.requests if path is None or r.path == path]
                raise AssertionError("receiver got %d of %d requests%s within %.1fs"
                                     % (len(got), n, " to " + path if path else "", timeout))
            return [r for r in self.requests if path is None or r.path == path]

    def wait_idle(self, timeout=5.0):
        with self._cond:
            return self._cond.wait_for(lambda: self.in_flight == 0, timeout)

    def quiet_for(self, seconds, path=None):
        """True when no new request (to `path`) arrives for `seconds` (a bounded wait)."""
        with self._cond:
            before = len([r for r in self.requests if path is None or r.path == path])
            return not self._cond.wait_for(
                lambda: len([r for r in self.requests
                             if path is None or r.path == path]) > before, seconds)

    def close(self):
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
