"""The producer client: submit (one or a batch), get, attempts, cancel, send events."""
import json
import time
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Union
from urllib.parse import quote

from ._http import Transport
from .envelope import DEFAULT_MAX_DEPTH, DEFAULT_MAX_PAYLOAD_BYTES, to_wire
from .errors import ApiError, ValidationError
from .signatures import sign_event

BATCH_LIMIT = 1000


@dataclass(frozen=True)
class SubmitResult:
    task_id: str
    status: str
    duplicate: bool

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "SubmitResult":
        return cls(doc["task_id"], doc["status"], bool(doc.get("duplicate", False)))


class Client:
    """A Madeira client. Thread-safe; reuses keep-alive connections.

    >>> client = Client("http://127.0.0.1:8080", token=None)
    >>> client.submit(task_type="order.close_timeout", payload_version=1, payload={"id": 7})
    """

    def __init__(self, base_url: str = "http://127.0.0.1:8080", *, token: Optional[str] = None,
                 timeout: float = 30.0, max_payload_depth: Optional[int] = DEFAULT_MAX_DEPTH,
                 max_payload_bytes: Optional[int] = DEFAULT_MAX_PAYLOAD_BYTES):
        self.base_url = base_url
        self.transport = Transport(base_url, token=token, timeout=timeout)
        self._limits = {"max_depth": max_payload_depth, "max_payload_bytes": max_payload_bytes}

    # -- producing -----------------------------------------------------------------------

    def validate(self, envelope: Optional[Mapping[str, Any]] = None, /,
                 **fields: Any) -> Dict[str, Any]:
        """Check an envelope locally; return its wire form or raise ValidationError."""
        merged = dict(envelope or {})
        merged.update(fields)
        return to_wire(merged, **self._limits)

    def submit(self, envelope: Optional[Mapping[str, Any]] = None, /,
               **fields: Any) -> SubmitResult:
        """Submit one task, given as a mapping and/or keyword fields of the envelope.

        `schedule_time` must be a zone-aware datetime. Raises ValidationError before
        sending, ApiError with the server's code/field/message/status when refused."""
        wire = self.validate(envelope, **fields)
        _, doc = self.transport.request("POST", "/v1/tasks", wire)
        return SubmitResult.from_json(doc)

    def submit_batch(self, envelopes: Iterable[Mapping[str, Any]]
                     ) -> List[Union[SubmitResult, ApiError]]:
        """Submit many tasks (sent in batches of up to 1000). Every envelope is validated
        before anything is sent (a ValidationError carries `index`). The server judges each
        item alone: the answer holds a SubmitResult or an ApiError per envelope, in order."""
        wires = []
        for index, env in enumerate(envelopes):
            try:
                wires.append(to_wire(env, **self._limits))
            except ValidationError as exc:
                exc.index = index
                raise
        results: List[Union[SubmitResult, ApiError]] = []
        for start in range(0, len(wires), BATCH_LIMIT):
            chunk = wires[start:start + BATCH_LIMIT]
            status, doc = self.transport.request("POST", "/v1/tasks/batch", {"tasks": chunk})
            for item in doc["results"]:
                if "error" in item:
                    results.append(ApiError.from_body(status, item))
                else:
                    results.append(SubmitResult.from_json(item))
        return results

    # -- reading and cancelling -------------------------------------------------------------

    def get(self, task_id: str) -> Dict[str, Any]:
        """The task: envelope + status, created_at, updated_at, attempts, last_error, result."""
        return self.transport.request("GET", f"/v1/tasks/{_seg(task_id)}")[1]

    def attempts(self, task_id: str) -> List[Dict[str, Any]]:
        """The attempt log of a task, oldest first."""
        return self.transport.request("GET", f"/v1/tasks/{_seg(task_id)}/attempts")[1]["attempts"]

    def cancel(self, task_id: str) -> Dict[str, Any]:
        """Cancel a scheduled/pending/retrying/dead task; ApiError 409 task_running or
        task_terminal otherwise."""
        return self.transport.request("POST", f"/v1/tasks/{_seg(task_id)}/cancel")[1]

    # -- events ----------------------------------------------------------------------------

    def send_event(self, source: str, secret: str, event: Mapping[str, Any],
                   timestamp: Optional[int] = None) -> Dict[str, Any]:
        """POST /v1/events signed for `source` with `secret`."""
        body = json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        headers = sign_event(source, secret, body,
                             int(time.time()) if timestamp is None else timestamp)
        return self.transport.request("POST", "/v1/events", raw_body=body, headers=headers)[1]

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _seg(value: str) -> str:
    return quote(value, safe="")
