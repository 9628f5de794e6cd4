package dev.madeira;

/**
 * The server refused a request: its HTTP status and its {@code {"error":{"code","message","field"?}}}
 * body, unchanged. {@link #field()} is {@code null} when the server named no field.
 */
public class ApiError extends MadeiraException {
    private final int status;
    private final String code;
    private final String field;
    private final String serverMessage;

    public ApiError(int status, String code, String message, String field) {
        super("HTTP " + status + " " + code + (field != null ? " [" + field + "]" : "") + ": " + message);
        this.status = status;
        this.code = code;
        this.field = field;
        this.serverMessage = message;
    }

    /** HTTP status; 0 for an error reported per item inside a 200 batch answer. */
    public int status() {
        return status;
    }

    public String code() {
        return code;
    }

    public String field() {
        return field;
    }

    /** The server's own message text. */
    public String serverMessage() {
        return serverMessage;
    }
}
