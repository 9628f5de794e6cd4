"""Client-side validation of the task envelope (SPEC §2, docs/protocol.md).

`to_wire(fields)` checks the shape of one envelope and returns the JSON-ready dict that
is sent. What only the server can judge (schedule too far ahead, registered schemas,
configured limits other than the defaults) is left to the server.
"""
import json
import re
from datetime import datetime
from typing import Any, Dict, Mapping, Optional

from .errors import ValidationError
from .timefmt import format_rfc3339, is_aware

NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,127}\Z")
TASK_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}\Z")
TRACE_ID = re.compile(r"^[\x21-\x7e]{1,128}\Z")

FIELDS = ("task_id", "task_type", "queue", "payload_version", "payload", "schedule_time",
          "timeout_ms", "max_retries", "retry_count", "priority", "trace_id", "idempotency_key")
REQUIRED = ("task_type", "payload_version", "payload")
INT_RANGES = {
    "timeout_ms": (100, 86_400_000),
    "max_retries": (0, 100),
    "retry_count": (0, 0),
    "priority": (0, 1000),
    "payload_version": (1, None),
}

DEFAULT_MAX_DEPTH = 5
DEFAULT_MAX_PAYLOAD_BYTES = 65536


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def depth(value: Any) -> int:
    """Nesting depth of JSON containers; a bare object or array is 1."""
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, (list, tuple)):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


def to_wire(fields: Mapping[str, Any], *, max_depth: Optional[int] = DEFAULT_MAX_DEPTH,
            max_payload_bytes: Optional[int] = DEFAULT_MAX_PAYLOAD_BYTES) -> Dict[str, Any]:
    """Validate one envelope and return what goes on the wire.

    `None` means absent (never sent as null). `schedule_time` must be a zone-aware
    `datetime`; anything else (naive datetime, number, string) is refused."""
    for key in fields:
        if key not in FIELDS:
            raise ValidationError(key, "unknown field", "unknown_field")
    present = {k: v for k, v in fields.items() if v is not None}
    for key in REQUIRED:
        if key not in present:
            raise ValidationError(key, "is required", "missing_field")

    wire: Dict[str, Any] = {}
    for key in FIELDS:
        if key not in present:
            continue
        value = present[key]
        if key in ("task_type", "queue"):
            if not isinstance(value, str) or not NAME.match(value):
                raise ValidationError(key, "must match ^[a-z0-9][a-z0-9_.-]{0,127}$")
        elif key == "task_id":
            if not isinstance(value, str) or not TASK_ID.match(value):
                raise ValidationError(key, "must be 1-128 characters of [A-Za-z0-9._:-]")
        elif key == "trace_id":
            if not isinstance(value, str) or not TRACE_ID.match(value):
                raise ValidationError(key, "must be 1-128 visible ASCII characters")
        elif key == "idempotency_key":
            if (not isinstance(value, str) or not 1 <= len(value) <= 200
                    or any(c < " " or c == "\x7f" for c in value)):
                raise ValidationError(
                    key, "must be a string of 1-200 characters, none of them a control character")
        elif key in INT_RANGES:
            low, high = INT_RANGES[key]
            if not is_int(value) or value < low or (high is not None and value > high):
                bound = f"from {low} to {high}" if high is not None else f">= {low}"
                raise ValidationError(key, f"must be an integer {bound}")
        elif key == "payload":
            _check_payload(value, max_depth, max_payload_bytes)
        elif key == "schedule_time":
            if not is_aware(value):
                what = "a naive datetime" if isinstance(value, datetime) else type(value).__name__
                raise ValidationError(
                    key, f"must be a zone-aware datetime (got {what})", "invalid_schedule_time")
            value = format_rfc3339(value)
        wire[key] = value
    return wire


def _check_payload(value: Any, max_depth: Optional[int], max_bytes: Optional[int]) -> None:
    if not isinstance(value, dict):
        raise ValidationError("payload", "must be a JSON object")
    if max_depth is not None and depth(value) > max_depth:
        raise ValidationError(
            "payload", f"nests deeper than {max_depth} levels (the payload object is level 1)",
            "payload_too_deep")
    try:
        encoded = json.dumps(value, separators=(",", ":"), ensure_ascii=False,
                             allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise ValidationError("payload", f"is not JSON-encodable: {exc}") from None
    if max_bytes is not None and len(encoded) > max_bytes:
        raise ValidationError("payload", f"encodes to more than {max_bytes} bytes",
                              "payload_too_large")
