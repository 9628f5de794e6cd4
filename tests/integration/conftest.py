"""Starts the real `madeira` binary on 127.0.0.1:0 and hands tests an HTTP client for it.

MADEIRA_TEST_STORE=sqlite|redis-pg (default sqlite) picks the store every server runs on. With
redis-pg the servers use the Redis and PostgreSQL named by MADEIRA_TEST_REDIS_URL and
MADEIRA_TEST_DATABASE_URL (what `scripts/test-services.sh run DIR ...` exports; `make
integration-redis-pg` does that), each data dir with a namespace of its own, so a restart on the
same data dir finds its data and no two tests see each other's. Tests marked
`@pytest.mark.sqlite_only(reason=...)` are skipped there.
"""

import hashlib
import os
import select
import signal
import subprocess
import sys
import time
import uuid

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from client import Api, uid  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
STARTUP_TIMEOUT = 20.0
STORES = ("sqlite", "redis-pg")
# Makes namespaces unique per pytest run too, should the services outlive one.
_SESSION_SALT = uuid.uuid4().hex


def test_store():
    """The store the servers of this run use: MADEIRA_TEST_STORE, default sqlite."""
    return os.environ.get("MADEIRA_TEST_STORE") or "sqlite"


def service_urls():
    """(redis url, database url) for the redis-pg store, from the test-services environment."""
    redis = os.environ.get("MADEIRA_TEST_REDIS_URL")
    database = os.environ.get("MADEIRA_TEST_DATABASE_URL")
    if not redis or not database:
        raise RuntimeError(
            "MADEIRA_TEST_STORE=redis-pg needs MADEIRA_TEST_REDIS_URL and "
            "MADEIRA_TEST_DATABASE_URL: run under `scripts/test-services.sh run DIR ...` "
            "(or `make integration-redis-pg`)")
    return redis, database


def namespace_for(data_dir):
    """The redis-pg namespace of a data dir: the same for the same dir within one run."""
    digest = hashlib.sha1((_SESSION_SALT + os.path.abspath(data_dir)).encode()).hexdigest()
    return "it_" + digest[:16]


def store_args(data_dir, store=None):
    """`serve` flags selecting `store` (default: the store under test) on `data_dir`."""
    if (store or test_store()) != "redis-pg":
        return []
    redis, database = service_urls()
    return ["--store", "redis-pg", "--redis-url", redis, "--database-url", database,
            "--namespace", namespace_for(data_dir)]


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "sqlite_only(reason): the test inspects the embedded store's files; "
        "skipped with MADEIRA_TEST_STORE=redis-pg")
    if test_store() not in STORES:
        raise pytest.UsageError("MADEIRA_TEST_STORE=%s: want one of %s"
                                % (test_store(), ", ".join(STORES)))


def pytest_report_header(config):
    return "madeira store: %s" % test_store()


def pytest_collection_modifyitems(config, items):
    if test_store() == "sqlite":
        return
    for item in items:
        marker = item.get_closest_marker("sqlite_only")
        if marker is not None:
            why = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
            item.add_marker(pytest.mark.skip(
                reason="sqlite only%s" % (": " + why if why else "")))


def madeira_bin():
    path = os.environ.get("MADEIRA_BIN", os.path.join(REPO, "build", "madeira"))
    return os.path.abspath(path)


class Server:
    """One `madeira serve` process; stderr goes to a file so tests can read the logs."""

    def __init__(self, data_dir, log_dir, config=None, args=(), env=None, store=None):
        self.data_dir = data_dir
        self.stderr_path = os.path.join(log_dir, "stderr-%s.log" % uuid.uuid4().hex[:8])
        cmd = [madeira_bin(), "serve", "--listen", "127.0.0.1:0", "--data-dir", data_dir]
        cmd += store_args(data_dir, store)
        if config is not None:
            cfg_path = os.path.join(log_dir, "config-%s.toml" % uuid.uuid4().hex[:8])
            with open(cfg_path, "w") as f:
                f.write(config)
            cmd += ["--config", cfg_path]
        cmd += list(args)
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("MADEIRA_")}
        full_env.update(env or {})
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._stderr,
                                     env=full_env)
        self.port = self._read_port()
        self.api = Api(self.port)
        self._wait_healthy()

    def _read_port(self):
        deadline = time.monotonic() + STARTUP_TIMEOUT
        buf = b""
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("madeira exited with %s before listening: %s"
                                   % (self.proc.returncode, self.stderr()))
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if not ready:
                continue
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            buf += chunk
            for line in buf.decode(errors="replace").splitlines():
                if line.startswith("listening on "):
                    return int(line.rsplit(":", 1)[1])
        self.kill()
        raise RuntimeError("no 'listening on' line within %ss: %s" % (STARTUP_TIMEOUT, self.stderr()))

    def _wait_healthy(self):
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            try:
                if self.api.get("/healthz", timeout=2).status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("/healthz never answered 200")

    def stderr(self):
        self._stderr.flush()
        with open(self.stderr_path, "rb") as f:
            return f.read().decode(errors="replace")

    def terminate(self, timeout=10.0, sig=signal.SIGTERM):
        """Sends `sig` (SIGTERM) and waits; returns (exit code, seconds taken)."""
        t0 = time.monotonic()
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("madeira did not exit within %ss of %s" % (timeout, sig.name))
        return rc, time.monotonic() - t0

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def close(self):
        self.kill()
        if self.proc.stdout:
            self.proc.stdout.close()
        self._stderr.close()


@pytest.fixture(scope="session")
def binary():
    path = madeira_bin()
    if not os.access(path, os.X_OK):
        pytest.fail("madeira binary not found at %s (set MADEIRA_BIN)" % path)
    return path


@pytest.fixture
def start_server(binary, tmp_path):
    """Factory: start_server(data_dir=None, config=None, args=(), env=None, store=None) ->
    Server, on `store` or else the store under test; all killed after."""
    started = []

    def start(data_dir=None, config=None, args=(), env=None, store=None):
        d = str(data_dir or tmp_path / ("data-%d" % len(started)))
        s = Server(d, str(tmp_path), config=config, args=args, env=env, store=store)
        started.append(s)
        return s

    yield start
    for s in started:
        s.close()


@pytest.fixture(scope="session")
def shared_server(binary, tmp_path_factory):
    """One server for the tests that isolate themselves by queue name."""
    d = tmp_path_factory.mktemp("shared")
    s = Server(str(d / "data"), str(d))
    yield s
    s.close()


@pytest.fixture
def server(request, start_server):
    """The shared server, or a fresh one per test with MADEIRA_IT_SERVER_PER_TEST=1 (to tell a
    test's own failure from one caused by an earlier test)."""
    if os.environ.get("MADEIRA_IT_SERVER_PER_TEST") == "1":
        return start_server()
    shared = request.getfixturevalue("shared_server")
    assert shared.proc.poll() is None, "the shared server died: " + shared.stderr()
    return shared


@pytest.fixture
def api(server):
    return server.api


@pytest.fixture
def q():
    """A queue name no other test uses."""
    return uid("q")
