package dev.madeira;

/**
 * Thrown by a handler for a failure that retrying cannot fix: the task is failed with
 * {@code "retry": "never"} and goes {@code dead} at once.
 */
public class PermanentError extends RuntimeException {
    public PermanentError(String message) {
        super(message);
    }

    public PermanentError(String message, Throwable cause) {
        super(message, cause);
    }
}
