"""Signing events and verifying webhooks, driven by ../testdata/*_signatures.json."""
import pytest

from madeira import WebhookVerificationError, sign_event, verify_webhook

from conftest import vectors

EVENTS = vectors("event_signatures.json")["cases"]
WEBHOOKS = vectors("webhook_signatures.json")
HOOKS = WEBHOOKS["cases"]


@pytest.mark.parametrize("case", EVENTS, ids=[c["name"] for c in EVENTS])
def test_sign_event_vectors(case):
    headers = sign_event("billing", case["secret"], case["body"], case["timestamp"])
    assert headers == {
        "X-Madeira-Source": "billing",
        "X-Madeira-Timestamp": str(case["timestamp"]),
        "X-Madeira-Signature": case["signature"],
    }
    # the same with the exact bytes
    assert sign_event("billing", case["secret"].encode(), case["body"].encode("utf-8"),
                      case["timestamp"])["X-Madeira-Signature"] == case["signature"]


def _headers(case):
    return {"webhook-id": case["id"], "webhook-timestamp": str(case["timestamp"]),
            "webhook-signature": case["signature"]}


@pytest.mark.parametrize("case", HOOKS, ids=[c["name"] for c in HOOKS])
def test_verify_webhook_vectors(case):
    args = (case["body"].encode("utf-8"), _headers(case), case["secrets"])
    kwargs = {"now": case["now"], "tolerance": WEBHOOKS["tolerance_seconds"]}
    if case["valid"]:
        verify_webhook(*args, **kwargs)
    else:
        with pytest.raises(WebhookVerificationError):
            verify_webhook(*args, **kwargs)


def test_verify_accepts_any_of_several_secrets_and_header_case():
    case = HOOKS[0]
    headers = {k.upper(): v for k, v in _headers(case).items()}
    verify_webhook(case["body"], headers, ["whsec_bWFkZWlyYS1yb3RhdGlvbi1zZWNyZXQtMg==",
                                           case["secrets"][0]], now=case["now"])


def test_verify_refuses_missing_headers():
    case = HOOKS[0]
    headers = _headers(case)
    del headers["webhook-signature"]
    with pytest.raises(WebhookVerificationError):
        verify_webhook(case["body"], headers, case["secrets"], now=case["now"])
