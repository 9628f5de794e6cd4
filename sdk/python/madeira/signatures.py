"""Signatures: signing events for POST /v1/events and verifying Standard Webhooks deliveries."""
import base64
import binascii
import hashlib
import hmac
import time
from typing import Iterable, Mapping, Optional, Union

from .errors import WebhookVerificationError

Bytesish = Union[str, bytes]
TOLERANCE_SECONDS = 300


def _bytes(value: Bytesish) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def sign_event(source: str, secret: Bytesish, body: Bytesish,
               timestamp: Optional[int] = None) -> dict:
    """The three headers that authenticate `body` (the exact bytes sent) as coming from
    `source`: HMAC-SHA256(secret, timestamp + "\\n" + body) in lower-case hex."""
    ts = str(int(time.time()) if timestamp is None else int(timestamp))
    mac = hmac.new(_bytes(secret), ts.encode("ascii") + b"\n" + _bytes(body), hashlib.sha256)
    return {
        "X-Madeira-Source": source,
        "X-Madeira-Timestamp": ts,
        "X-Madeira-Signature": "sha256=" + mac.hexdigest(),
    }


def _secret_key(secret: Bytesish) -> bytes:
    if isinstance(secret, bytes):
        return secret
    text = secret[len("whsec_"):] if secret.startswith("whsec_") else secret
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise WebhookVerificationError("a webhook secret must be whsec_ + base64") from None


def _header(headers: Mapping[str, str], name: str) -> str:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    raise WebhookVerificationError(f"missing header {name}")


def verify_webhook(body: Bytesish, headers: Mapping[str, str],
                   secrets: Union[Bytesish, Iterable[Bytesish]], *,
                   tolerance: int = TOLERANCE_SECONDS, now: Optional[float] = None) -> None:
    """Verify a Standard Webhooks delivery; raise WebhookVerificationError if it fails.

    `body` is the raw request body; `secrets` one or several `whsec_…` secrets (rotation);
    any `v1,` signature in `webhook-signature` made with any secret is accepted, compared in
    constant time; the timestamp must be within `tolerance` seconds of now."""
    if isinstance(secrets, (str, bytes)):
        secrets = [secrets]
    msg_id = _header(headers, "webhook-id")
    ts_text = _header(headers, "webhook-timestamp")
    sig_header = _header(headers, "webhook-signature")
    try:
        ts = int(ts_text)
    except ValueError:
        raise WebhookVerificationError("bad webhook-timestamp") from None
    current = time.time() if now is None else now
    if abs(current - ts) > tolerance:
        raise WebhookVerificationError("timestamp outside tolerance")
    signed = _bytes(msg_id) + b"." + ts_text.encode("ascii") + b"." + _bytes(body)
    expected = [base64.b64encode(hmac.new(_secret_key(s), signed, hashlib.sha256).digest())
                for s in secrets]
    matched = False
    for part in sig_header.split():
        version, _, sig = part.partition(",")
        if version != "v1":
            continue
        for want in expected:
            matched |= hmac.compare_digest(want, sig.encode("ascii", "replace"))
    if not matched:
        raise WebhookVerificationError("no matching signature")
