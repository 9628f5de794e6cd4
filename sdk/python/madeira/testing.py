"""Start a throwaway `madeira serve` for tests and benchmarks (loopback, fresh data dir)."""
import os
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.request
from typing import List, Optional


def default_binary() -> str:
    """$MADEIRA_BIN, else <repo>/build/madeira relative to this SDK's folder."""
    env = os.environ.get("MADEIRA_BIN")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", "..", "..", "build", "madeira"))


class MadeiraServer:
    """`with MadeiraServer() as server: Client(server.url)`"""

    def __init__(self, binary: Optional[str] = None, config: Optional[str] = None,
                 extra_args: Optional[List[str]] = None, start_timeout: float = 15.0):
        self.binary = binary or default_binary()
        self.config = config
        self.extra_args = extra_args or []
        self.start_timeout = start_timeout
        self.url = ""
        self.data_dir = ""
        self.proc: Optional[subprocess.Popen] = None
        self._stderr = None

    def start(self) -> "MadeiraServer":
        if not os.access(self.binary, os.X_OK):
            raise RuntimeError(f"madeira binary not found at {self.binary} (set MADEIRA_BIN)")
        self.data_dir = tempfile.mkdtemp(prefix="madeira-py-")
        args = [self.binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", self.data_dir]
        if self.config:
            path = os.path.join(self.data_dir, "madeira.toml")
            with open(path, "w") as fh:
                fh.write(self.config)
            args += ["--config", path]
        self._stderr = open(os.path.join(self.data_dir, "stderr.log"), "wb")
        self.proc = subprocess.Popen(args + self.extra_args, stdout=subprocess.PIPE,
                                     stderr=self._stderr)
        line = self._first_line()
        prefix = "listening on "
        if not line.startswith(prefix):
            self.stop()
            raise RuntimeError(f"unexpected first line from madeira: {line!r}")
        self.url = "http://" + line[len(prefix):].strip()
        threading.Thread(target=self._drain_stdout, daemon=True).start()
        self._wait_healthy()
        return self

    def _first_line(self) -> str:
        box: List[bytes] = []
        reader = threading.Thread(target=lambda: box.append(self.proc.stdout.readline()),
                                  daemon=True)
        reader.start()
        reader.join(self.start_timeout)
        if not box:
            self.stop()
            raise RuntimeError("madeira did not print its listen address in time")
        return box[0].decode("utf-8", "replace")

    def _drain_stdout(self) -> None:
        for _ in iter(self.proc.stdout.readline, b""):
            pass

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=1) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("madeira did not become healthy in time")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        if self.data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.data_dir = ""

    def __enter__(self) -> "MadeiraServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
