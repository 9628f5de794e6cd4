package dev.madeira;

/**
 * Thrown by a handler for a blip (network, lock conflict): the task is failed with
 * {@code "retry": "fast"} and re-queued at once while fast retries remain.
 */
public class TransientError extends RuntimeException {
    public TransientError(String message) {
        super(message);
    }

    public TransientError(String message, Throwable cause) {
        super(message, cause);
    }
}
