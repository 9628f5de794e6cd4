package dev.madeira;

/** Base class of every error the SDK itself raises (not of the handler errors a worker reports). */
public class MadeiraException extends RuntimeException {
    public MadeiraException(String message) {
        super(message);
    }

    public MadeiraException(String message, Throwable cause) {
        super(message, cause);
    }
}
