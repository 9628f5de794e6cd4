package dev.madeira;

/** The server could not be reached, or answered with something that is not the protocol. */
public class TransportError extends MadeiraException {
    public TransportError(String message, Throwable cause) {
        super(message, cause);
    }
}
