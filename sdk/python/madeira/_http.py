"""JSON over HTTP/1.1 with a pool of keep-alive connections (standard library only)."""
import http.client
import json
import socket
import threading
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import urlsplit

from . import __version__
from .errors import ApiError, TransportError

# Errors that mean a kept-alive connection was closed by the peer before it read our request.
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
          http.client.BadStatusLine, ConnectionAbortedError)


class Transport:
    """Thread-safe: each request borrows an idle connection (or opens one) and returns it."""

    def __init__(self, base_url: str, token: Optional[str] = None, timeout: float = 30.0,
                 max_idle: int = 32):
        parts = urlsplit(base_url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be http(s)://host[:port], got {base_url!r}")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        self._prefix = parts.path
        self._timeout = timeout
        self._headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"madeira-python/{__version__}",
        }
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._idle: List[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._max_idle = max_idle
        self._closed = False

    def _connect(self, timeout: float) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = cls(self._host, self._port, timeout=timeout)
        conn.connect()
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def _borrow(self) -> Tuple[Optional[http.client.HTTPConnection], bool]:
        with self._lock:
            if self._idle:
                return self._idle.pop(), True
        return None, False

    def _give_back(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < self._max_idle:
                self._idle.append(conn)
                return
        conn.close()

    def request(self, method: str, path: str, body: Any = None,
                timeout: Optional[float] = None,
                headers: Optional[Dict[str, str]] = None,
                raw_body: Optional[bytes] = None) -> Tuple[int, Any]:
        """Send one request; return (status, decoded JSON) for 2xx, raise ApiError otherwise."""
        data = raw_body if raw_body is not None else (
            None if body is None else json.dumps(body, separators=(",", ":"),
                                                 ensure_ascii=False).encode("utf-8"))
        hdrs = dict(self._headers)
        if headers:
            hdrs.update(headers)
        hdrs["Content-Length"] = str(len(data) if data is not None else 0)
        url = self._prefix + path
        wait = timeout if timeout is not None else self._timeout
        for attempt in (1, 2):
            conn, reused = self._borrow()
            try:
                if conn is None:
                    conn = self._connect(wait)
                else:
                    conn.sock.settimeout(wait)
                conn.request(method, url, body=data, headers=hdrs)
                resp = conn.getresponse()
                payload = resp.read()
            except _STALE as exc:
                if conn is not None:
                    conn.close()
                if reused and attempt == 1:
                    continue  # the server closed an idle connection; try a fresh one once
                raise TransportError(f"{method} {path}: {exc!r}") from exc
            except (OSError, http.client.HTTPException) as exc:
                if conn is not None:
                    conn.close()
                raise TransportError(f"{method} {path}: {exc!r}") from exc
            if resp.will_close:
                conn.close()
            else:
                self._give_back(conn)
            return self._decode(resp.status, payload, resp.getheader("Retry-After"), method, path)
        raise TransportError(f"{method} {path}: connection closed")  # pragma: no cover

    @staticmethod
    def _decode(status: int, payload: bytes, retry_after, method: str, path: str):
        try:
            doc = json.loads(payload) if payload else None
        except ValueError:
            if 200 <= status < 300:
                raise TransportError(f"{method} {path}: {status} with a non-JSON body") from None
            doc = None
        if 200 <= status < 300:
            return status, doc
        if doc is None:
            doc = {"error": {"code": "http_error",
                             "message": payload[:500].decode("utf-8", "replace")}}
        raise ApiError.from_body(status, doc, retry_after)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
