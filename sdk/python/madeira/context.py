"""What a handler receives: the task, its lease, its deadline and cancellation signals."""
import threading
import time
from datetime import datetime, timezone
from typing import Any, Dict, Optional

from .timefmt import parse_rfc3339

RUNNING, FINISHED, ABANDONED = "running", "finished", "abandoned"


def attempt_deadline(lease_deadline: Optional[datetime], lease_ms: int, timeout_ms: int,
                     asked: float, received: float) -> float:
    """When an attempt must be over, in wall seconds: `timeout_ms` after it began on the server.

    It began at the lease's deadline - `lease_ms`, if that falls within the lease call (from
    `asked` - 1 s to `received`, wall seconds); otherwise the clocks disagree (or the lease had
    no deadline that is a time: None) and it is timed from `received`, at most a round trip late.
    """
    # Under clock skew the server's deadline can be hours off ours; Java's attemptStart rule.
    began = lease_deadline.timestamp() - lease_ms / 1000.0 if lease_deadline else None
    if began is None or not asked - 1.0 <= began <= received:
        began = received
    return began + timeout_ms / 1000.0


class TaskContext:
    """One leased task, handed to its handler.

    - `payload`, `task_id`, `task_type`, `payload_version`, `attempt`, `trace_id`, `task` (the
      whole envelope as leased).
    - `deadline`: when this attempt must be over (attempt start + `timeout_ms`), aware UTC; the
      start is read from the lease's deadline when the clocks agree, else its receipt.
    - `lease_id`, `lease_deadline`: the current lease, moved forward by the worker's extends.
    - `cancelled`: a threading.Event set when the handler should stop: the deadline passed
      (`cancel_reason == "deadline"`), the lease was lost (`"lease_lost"`), or the worker shut
      down past its grace period (`"shutdown"`). Python cannot stop a thread; long handlers
      should wait on `cancelled` (e.g. `ctx.cancelled.wait(seconds)`) or check it often.
    - `lost`: a threading.Event set when the server answered 409 lease_lost; the handler's
      result will not be acknowledged.
    """

    def __init__(self, lease: Dict[str, Any], lease_ms: Optional[int], received_mono: float,
                 *, asked: Optional[float] = None, received: Optional[float] = None):
        task = lease["task"]
        self.task: Dict[str, Any] = task
        self.lease_id: str = lease["lease_id"]
        self.fencing_token = lease.get("fencing_token")
        self.task_id: str = task["task_id"]
        self.task_type: str = task["task_type"]
        self.queue: str = task.get("queue", "default")
        self.payload_version: int = task["payload_version"]
        self.payload: Dict[str, Any] = task["payload"]
        self.attempt: int = task.get("attempt", 1)
        self.retry_count: int = task.get("retry_count", 0)
        self.trace_id: Optional[str] = task.get("trace_id")
        self.timeout_ms: int = task.get("timeout_ms", 30000)
        self.lease_ms: int = min(lease_ms or self.timeout_ms, self.timeout_ms)
        self.cancelled = threading.Event()
        self.lost = threading.Event()
        self.cancel_reason: Optional[str] = None

        # asked/received: wall times around the lease call (now, if the caller did not say).
        if received is None:
            received = time.time()
        if asked is None:
            asked = received
        lease_deadline: Optional[datetime]
        try:
            lease_deadline = parse_rfc3339(lease["deadline"])
        except (KeyError, TypeError, ValueError):
            lease_deadline = None
        self.lease_deadline: datetime = lease_deadline or datetime.fromtimestamp(
            received + self.lease_ms / 1000.0, timezone.utc)
        deadline_wall = attempt_deadline(lease_deadline, self.lease_ms, self.timeout_ms, asked,
                                         received)
        self.deadline: datetime = datetime.fromtimestamp(deadline_wall, timezone.utc)
        self._deadline_mono = received_mono + (deadline_wall - received)
        self._next_extend_mono = received_mono + self.lease_ms / 3000.0
        self._extending = False  # an extend queued or on its way (set by the housekeeping loop)
        self._state = RUNNING
        self._lock = threading.Lock()

    def remaining(self) -> float:
        """Seconds left before the deadline (negative once it has passed)."""
        return self._deadline_mono - time.monotonic()

    def _cancel(self, reason: str) -> None:
        if self.cancel_reason is None:
            self.cancel_reason = reason
        self.cancelled.set()

    def _finish(self, state: str) -> bool:
        """Move from running to `state`; False if another party got there first."""
        with self._lock:
            if self._state != RUNNING:
                return False
            self._state = state
            return True

    def __repr__(self) -> str:
        return (f"TaskContext(task_id={self.task_id!r}, task_type={self.task_type!r}, "
                f"attempt={self.attempt}, lease_id={self.lease_id!r})")
