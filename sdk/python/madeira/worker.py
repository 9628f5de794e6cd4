"""The worker: leases tasks, runs handlers on N slots, extends, acks (coalesced), fails."""
import json
import logging
import queue
import signal
import socket
import threading
import time
import traceback
import uuid
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from . import __version__
from .client import Client
from .context import ABANDONED, FINISHED, TaskContext
from .errors import ApiError, MadeiraError, PermanentError, TransientError
from .timefmt import parse_rfc3339

log = logging.getLogger("madeira.worker")

Handler = Callable[[TaskContext], Optional[Dict[str, Any]]]
MAX_TASKS_PER_LEASE = 100
ACK_BATCH = 1000


class Worker:
    """Runs handlers for the task types registered on it.

    >>> worker = Worker(Client(url), queues=["orders"], slots=8)
    >>> @worker.handler("order.close_timeout", versions=[1])
    ... def close(task): return {"closed": task.payload["order_id"]}
    >>> worker.run()          # blocks; SIGTERM/SIGINT or worker.close() stops it gracefully
    """

    def __init__(self, client: Union[Client, str], *, queues: Sequence[str] = ("default",),
                 slots: int = 8, worker_id: Optional[str] = None, wait_ms: int = 5000,
                 lease_ms: Optional[int] = None, grace_period: float = 10.0,
                 heartbeat_interval: float = 5.0, token: Optional[str] = None,
                 pollers: Optional[int] = None, ackers: int = 2):
        if isinstance(client, str):
            client = Client(client, token=token)
            self._owns_client = True
        else:
            self._owns_client = False
        if not 1 <= slots:
            raise ValueError("slots must be >= 1")
        if not 0 <= wait_ms <= 30000:
            raise ValueError("wait_ms must be 0..30000")
        if not 0 < heartbeat_interval <= 10:
            raise ValueError("heartbeat_interval must be in (0, 10] seconds")
        self.client = client
        self._http = client.transport
        self.queues = list(queues)
        self.slots = slots
        self.worker_id = worker_id or f"py-{socket.gethostname()}-{uuid.uuid4().hex[:8]}"
        self.wait_ms = wait_ms
        self.lease_ms = lease_ms
        self.grace_period = grace_period
        self.heartbeat_interval = heartbeat_interval
        # Concurrent lease calls and ack batches keep the pipeline full at high rates.
        self.pollers = pollers if pollers is not None else 1
        self.ackers = max(1, ackers)
        self._handlers: Dict[str, Dict[int, Handler]] = {}

        self._cond = threading.Condition()      # guards _free and _inflight
        self._free = slots
        self._inflight: Dict[str, TaskContext] = {}
        self._work: "queue.SimpleQueue[Optional[TaskContext]]" = queue.SimpleQueue()
        self._acks: List[Tuple[TaskContext, bytes]] = []
        self._ack_cond = threading.Condition()
        self._stopping = threading.Event()      # no more leasing
        self._halt = threading.Event()          # housekeeping and acking may end
        # Extends for the extend thread (None ends it): the deadline loop never waits on one.
        self._extends: "queue.SimpleQueue[Optional[TaskContext]]" = queue.SimpleQueue()
        self._threads: List[threading.Thread] = []
        self._started = False
        self._closed = False
        self.stats = {"succeeded": 0, "failed": 0, "timed_out": 0, "lost": 0, "handed_back": 0}
        self._stats_lock = threading.Lock()

    # -- registration ------------------------------------------------------------------------

    def register(self, task_type: str, fn: Handler, versions: Iterable[int] = (1,)) -> None:
        """Run `fn` for `task_type` tasks whose payload_version is in `versions`."""
        versions = list(versions)
        if not versions or not all(isinstance(v, int) and v >= 1 for v in versions):
            raise ValueError("versions must be a non-empty list of integers >= 1")
        if self._started:
            raise RuntimeError("register handlers before starting the worker")
        by_version = self._handlers.setdefault(task_type, {})
        for v in versions:
            by_version[v] = fn

    def handler(self, task_type: str, versions: Iterable[int] = (1,)) -> Callable[[Handler], Handler]:
        """Decorator form of register()."""
        def wrap(fn: Handler) -> Handler:
            self.register(task_type, fn, versions)
            return fn
        return wrap

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> "Worker":
        """Start leasing in background threads; returns at once."""
        if self._started:
            raise RuntimeError("worker already started")
        if not self._handlers:
            raise RuntimeError("register at least one handler first")
        self._started = True
        for _ in range(self.pollers):
            self._spawn(self._lease_loop, "lease")
        for _ in range(self.ackers):
            self._spawn(self._ack_loop, "ack")
        self._spawn(self._housekeeping_loop, "housekeeping")
        self._spawn(self._heartbeat_loop, "heartbeat")
        self._spawn(self._extend_loop, "extend")
        for _ in range(self.slots):
            self._spawn_slot()
        return self

    def run(self, install_signal_handlers: bool = True) -> None:
        """Start and block until SIGTERM/SIGINT (main thread only) or close() from elsewhere,
        then shut down gracefully."""
        stop = threading.Event()
        previous = {}
        if install_signal_handlers and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, lambda *_: stop.set())
        try:
            self.start()
            while not stop.wait(0.2) and not self._stopping.is_set():
                pass
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)
            self.close()

    def close(self, grace_period: Optional[float] = None) -> None:
        """Graceful stop: stop leasing, let in-flight tasks finish within the grace period,
        hand the rest back (fail with retry "fast"), flush acks, end the threads."""
        if self._closed:
            return
        self._closed = True
        grace = self.grace_period if grace_period is None else grace_period
        end = time.monotonic() + grace
        self._stopping.set()
        with self._cond:
            self._cond.notify_all()
        if self._started:
            # A lease call in flight answers within wait_ms; what it brings runs normally.
            for t in self._threads:
                if t.name == "madeira-lease":
                    t.join(self.wait_ms / 1000.0 + max(grace, 0) + 5)
            with self._cond:
                while self._inflight and time.monotonic() < end:
                    self._cond.wait(max(0.0, min(0.1, end - time.monotonic())))
                leftovers = list(self._inflight.values())
            for ctx in leftovers:
                if self._abandon(ctx, "shutdown"):
                    self._send_fail(ctx, "fast", {
                        "type": "WorkerShutdown",
                        "message": f"worker {self.worker_id} stopped before the task finished"})
                    self._count("handed_back")
            for _ in range(self.slots):
                self._work.put(None)
            self._halt.set()
            self._extends.put(None)
            with self._ack_cond:
                self._ack_cond.notify_all()
            for t in self._threads:
                if t.name in ("madeira-ack", "madeira-housekeeping", "madeira-heartbeat",
                              "madeira-extend"):
                    t.join(10)
        if self._owns_client:
            self.client.close()

    def __enter__(self) -> "Worker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    # -- threads -----------------------------------------------------------------------------

    def _spawn(self, target, name: str) -> threading.Thread:
        t = threading.Thread(target=target, name=f"madeira-{name}", daemon=True)
        self._threads.append(t)
        t.start()
        return t

    def _spawn_slot(self) -> None:
        self._spawn(self._slot_loop, "slot")

    def _count(self, key: str, n: int = 1) -> None:
        with self._stats_lock:
            self.stats[key] += n

    def _lease_loop(self) -> None:
        task_types = {t: sorted(v) for t, v in self._handlers.items()}
        pause = 0.0
        while not self._stopping.is_set():
            if pause and self._stopping.wait(pause):
                break
            with self._cond:
                while self._free == 0 and not self._stopping.is_set():
                    self._cond.wait()
                if self._stopping.is_set():
                    break
                want = min(self._free, MAX_TASKS_PER_LEASE)
                self._free -= want      # reserved for this call; unused ones are returned
            body = {"worker_id": self.worker_id, "queues": self.queues, "task_types": task_types,
                    "max_tasks": want, "wait_ms": self.wait_ms}
            if self.lease_ms is not None:
                body["lease_ms"] = self.lease_ms
            asked = time.time()
            try:
                _, doc = self._http.request("POST", "/v1/leases", body,
                                            timeout=self.wait_ms / 1000.0 + 30)
            except MadeiraError as exc:
                self._unreserve(want)
                log.warning("lease request failed: %s", exc)
                pause = min(max(pause * 2, 0.2), 5.0)
                continue
            pause = 0.0
            received = time.monotonic()
            received_wall = time.time()
            contexts = [TaskContext(lease, self.lease_ms, received, asked=asked,
                                    received=received_wall)
                        for lease in doc.get("leases", ())]
            with self._cond:
                for ctx in contexts:
                    self._inflight[ctx.lease_id] = ctx
            self._unreserve(want - len(contexts))
            for ctx in contexts:
                self._work.put(ctx)

    def _unreserve(self, n: int) -> None:
        if n > 0:
            with self._cond:
                self._free += n
                self._cond.notify_all()

    def _slot_loop(self) -> None:
        while True:
            ctx = self._work.get()
            if ctx is None:
                return
            if not self._run(ctx):
                return  # abandoned: a replacement slot thread took over

    def _run(self, ctx: TaskContext) -> bool:
        fn = self._handlers.get(ctx.task_type, {}).get(ctx.payload_version)
        retry = None
        result: Any = None
        try:
            if fn is None:
                raise LookupError(f"no handler for {ctx.task_type} v{ctx.payload_version}")
            result = fn(ctx)
            if result is not None and not isinstance(result, dict):
                raise TypeError(f"handler returned {type(result).__name__}, expected dict or None")
            ack = b'{"lease_id":' + json.dumps(ctx.lease_id).encode() + (
                b"}" if result is None else b',"result":' + json.dumps(
                    result, separators=(",", ":"), ensure_ascii=False,
                    allow_nan=False).encode("utf-8") + b"}")
        except PermanentError as exc:
            retry, error = "never", exc
        except TransientError as exc:
            retry, error = "fast", exc
        except Exception as exc:  # noqa: BLE001 - any other error is retried "auto"
            retry, error = "auto", exc
        if not ctx._finish(FINISHED):
            return False  # timed out or handed back meanwhile; its late result is dropped
        late = time.monotonic() >= ctx._deadline_mono
        if late:
            ctx._cancel("deadline")
            self._count("timed_out")
            log.warning("task %s finished after its deadline; result dropped, the lease expires",
                        ctx.task_id)
        elif ctx.lost.is_set():
            self._count("lost")
        elif retry is None:
            with self._ack_cond:
                self._acks.append((ctx, ack))
                if len(self._acks) == 1:
                    self._ack_cond.notify()
        else:
            self._send_fail(ctx, retry, {
                "type": type(error).__name__, "message": str(error),
                "stack": "".join(traceback.format_exception(type(error), error,
                                                            error.__traceback__))[-8000:]})
            self._count("failed")
        self._release(ctx)
        return True

    def _release(self, ctx: TaskContext) -> None:
        with self._cond:
            self._inflight.pop(ctx.lease_id, None)
            self._free += 1
            self._cond.notify_all()

    def _abandon(self, ctx: TaskContext, reason: str) -> bool:
        """Give up on a running handler (deadline or shutdown); its thread is left to end."""
        if not ctx._finish(ABANDONED):
            return False
        ctx._cancel(reason)
        self._release(ctx)
        if reason == "deadline" and not self._halt.is_set():
            self._spawn_slot()  # keep N slots serving while the stuck thread runs on
        return True

    def _send_fail(self, ctx: TaskContext, retry: str, error: Dict[str, str]) -> None:
        if not error.get("stack"):
            error.pop("stack", None)
        try:
            self._http.request("POST", f"/v1/leases/{ctx.lease_id}/fail",
                               {"error": error, "retry": retry})
        except ApiError as exc:
            if exc.code == "lease_lost":
                ctx.lost.set()
                ctx._cancel("lease_lost")
            log.warning("fail of task %s refused: %s", ctx.task_id, exc)
        except MadeiraError as exc:
            log.warning("fail of task %s not delivered: %s", ctx.task_id, exc)

    def _ack_loop(self) -> None:
        while True:
            with self._ack_cond:
                while not self._acks and not self._halt.is_set():
                    self._ack_cond.wait()
                if not self._acks:
                    return  # halted and drained
                batch, self._acks = self._acks[:ACK_BATCH], self._acks[ACK_BATCH:]
            self._send_acks(batch)

    def _send_acks(self, batch: List[Tuple[TaskContext, bytes]]) -> None:
        body = b'{"acks":[' + b",".join(item for _, item in batch) + b"]}"
        for attempt in range(3):
            try:
                _, doc = self._http.request("POST", "/v1/leases/ack", raw_body=body)
                break
            except MadeiraError as exc:
                log.warning("ack batch of %d failed (try %d): %s", len(batch), attempt + 1, exc)
                if attempt == 2:
                    return  # the leases expire and the tasks are retried: at-least-once
                time.sleep(0.2 * (attempt + 1))
        by_id = {ctx.lease_id: ctx for ctx, _ in batch}
        ok = 0
        for item in doc.get("results", ()):
            if "error" in item:
                ctx = by_id.get(item.get("lease_id"))
                code = item["error"].get("code")
                if ctx is not None and code == "lease_lost":
                    ctx.lost.set()
                    ctx._cancel("lease_lost")
                    self._count("lost")
                log.warning("ack of lease %s refused: %s", item.get("lease_id"), item["error"])
            else:
                ok += 1
        self._count("succeeded", ok)

    def _housekeeping_loop(self) -> None:
        """Abandons tasks past their deadline and asks for leases to be extended. It never waits
        for the server (extends and heartbeats have threads of their own), so a slow answer
        delays no deadline."""
        while not self._halt.is_set():
            with self._cond:
                running = list(self._inflight.values())
            wake = time.monotonic() + 0.05
            for ctx in running:
                now = time.monotonic()
                if now >= ctx._deadline_mono:
                    if self._abandon(ctx, "deadline"):
                        self._count("timed_out")
                        log.warning("task %s (%s) passed its %d ms deadline; handler abandoned, "
                                    "its lease expires", ctx.task_id, ctx.task_type, ctx.timeout_ms)
                    continue
                if now >= ctx._next_extend_mono and not ctx.lost.is_set() and not ctx._extending:
                    ctx._extending = True
                    ctx._next_extend_mono = now + ctx.lease_ms / 3000.0
                    self._extends.put(ctx)
                wake = min(wake, ctx._deadline_mono, ctx._next_extend_mono)
            self._halt.wait(max(0.0, wake - time.monotonic()))

    def _heartbeat_loop(self) -> None:
        while True:
            self._heartbeat()
            if self._halt.wait(self.heartbeat_interval):
                return

    def _extend_loop(self) -> None:
        while True:
            ctx = self._extends.get()
            if ctx is None:
                return
            try:
                if not ctx.cancelled.is_set():
                    self._extend(ctx)
            finally:
                ctx._extending = False

    def _extend(self, ctx: TaskContext) -> None:
        try:
            _, doc = self._http.request("POST", f"/v1/leases/{ctx.lease_id}/extend",
                                        {"extend_ms": ctx.lease_ms}, timeout=5.0)
            ctx.lease_deadline = parse_rfc3339(doc["deadline"])
        except ApiError as exc:
            if exc.code == "lease_lost" and time.monotonic() >= ctx._deadline_mono:
                # The server expired the lease at the deadline while this extend was on its
                # way: the deadline is the reason, and the loop abandons the task for it.
                return
            if exc.code == "lease_lost":
                ctx.lost.set()
                ctx._cancel("lease_lost")
                log.warning("lease of task %s lost: %s", ctx.task_id, exc)
            else:
                log.warning("extend of task %s refused: %s", ctx.task_id, exc)
        except MadeiraError as exc:
            log.warning("extend of task %s failed: %s", ctx.task_id, exc)

    def _heartbeat(self) -> None:
        try:
            self._http.request("POST", "/v1/workers/heartbeat", {
                "worker_id": self.worker_id, "language": "python", "sdk_version": __version__,
                "queues": self.queues}, timeout=5.0)
        except MadeiraError as exc:
            log.warning("heartbeat failed: %s", exc)
