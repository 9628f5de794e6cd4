"""Madeira SDK for Python: producer client, worker, and signature helpers."""
__version__ = "0.1.0"

from .errors import (ApiError, MadeiraError, PermanentError, TransientError, TransportError,
                     ValidationError, WebhookVerificationError)
from .client import Client, SubmitResult
from .context import TaskContext
from .worker import Worker
from .signatures import sign_event, verify_webhook

__all__ = [
    "__version__", "Client", "SubmitResult", "Worker", "TaskContext",
    "MadeiraError", "ValidationError", "ApiError", "TransportError",
    "PermanentError", "TransientError", "WebhookVerificationError",
    "sign_event", "verify_webhook",
]
