"""What a handler receives: the task, its lease, its deadline and cancellation signals."""
import threading
import time
from datetime import datetime, timezone
from typing import Any, Dict, Optional

from .timefmt import parse_rfc3339

RUNNING, FINISHED, ABANDONED = "running", "finished", "abandoned"


class TaskContext:
    """One leased task, handed to its handler.

    - `payload`, `task_id`, `task_type`, `payload_version`, `attempt`, `trace_id`, `task` (the
      whole envelope as leased).
    - `deadline`: when this attempt must be over (attempt start + `timeout_ms`), aware UTC.
    - `lease_id`, `lease_deadline`: the current lease, moved forward by the worker's extends.
    - `cancelled`: a threading.Event set when the handler should stop: the deadline passed
      (`cancel_reason == "deadline"`), the lease was lost (`"lease_lost"`), or the worker shut
      down past its grace period (`"shutdown"`). Python cannot stop a thread; long handlers
      should wait on `cancelled` (e.g. `ctx.cancelled.wait(seconds)`) or check it often.
    - `lost`: a threading.Event set when the server answered 409 lease_lost; the handler's
      result will not be acknowledged.
    """

    def __init__(self, lease: Dict[str, Any], lease_ms: Optional[int], received_mono: float):
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

        lease_deadline = parse_rfc3339(lease["deadline"])
        self.lease_deadline: datetime = lease_deadline
        # The attempt began when the lease was granted: lease deadline - lease_ms.
        began = lease_deadline.timestamp() - self.lease_ms / 1000.0
        deadline_wall = began + self.timeout_ms / 1000.0
        self.deadline: datetime = datetime.fromtimestamp(deadline_wall, timezone.utc)
        # Local monotonic view; never later than "received + timeout" whatever the clocks say.
        self._deadline_mono = min(received_mono + (deadline_wall - time.time()),
                                  received_mono + self.timeout_ms / 1000.0)
        self._next_extend_mono = received_mono + self.lease_ms / 3000.0
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
