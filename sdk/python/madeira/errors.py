"""The SDK's error classes.

Raised by the SDK:
  ValidationError  - an envelope refused locally, before anything is sent.
  ApiError         - the server answered with an error; its code/field/message/status unchanged.
  TransportError   - the server could not be reached or answered something that is not HTTP/JSON.
  WebhookVerificationError - a webhook delivery failed verification.

Raised by handlers to steer retries:
  PermanentError   - fail the task with retry "never" (dead at once).
  TransientError   - fail the task with retry "fast" (re-queued at once, bounded by the server).
Any other exception from a handler fails the task with retry "auto".
"""
from typing import Optional


class MadeiraError(Exception):
    """Base class of every error the SDK raises."""


class ValidationError(MadeiraError, ValueError):
    """An envelope (or a request) refused before it was sent."""

    def __init__(self, field: str, message: str, code: str = "invalid_field"):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.code = code
        self.message = message


class ApiError(MadeiraError):
    """An error answer from the server, surfaced unchanged."""

    def __init__(self, status: int, code: str, message: str = "", field: Optional[str] = None,
                 retry_after: Optional[str] = None):
        text = f"{status} {code}"
        if field:
            text += f" ({field})"
        if message:
            text += f": {message}"
        super().__init__(text)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.retry_after = retry_after

    @classmethod
    def from_body(cls, status: int, body, retry_after: Optional[str] = None) -> "ApiError":
        err = body.get("error") if isinstance(body, dict) else None
        if not isinstance(err, dict):
            return cls(status, "http_error", f"unexpected body: {body!r}"[:500], None, retry_after)
        return cls(status, str(err.get("code", "")), str(err.get("message", "")),
                   err.get("field"), retry_after)


class TransportError(MadeiraError):
    """The request could not be completed (connection refused/reset, bad response)."""


class WebhookVerificationError(MadeiraError):
    """A webhook delivery whose signature or timestamp does not verify."""


class PermanentError(Exception):
    """Raise from a handler: the task cannot succeed; it goes dead without retries."""


class TransientError(Exception):
    """Raise from a handler: a blip (network, lock conflict); retry fast."""
