package dev.madeira;

/** A webhook delivery that must not be trusted: bad or missing signature, or a stale timestamp. */
public class WebhookVerificationError extends MadeiraException {
    public WebhookVerificationError(String message) {
        super(message);
    }
}
