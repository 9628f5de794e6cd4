package dev.madeira;

/**
 * An envelope refused on the client, before anything was sent. {@link #field()} names the
 * field to blame and {@link #code()} is the code the server would have answered with
 * ({@code missing_field}, {@code invalid_field}, {@code unknown_field},
 * {@code invalid_schedule_time}, {@code payload_too_deep}, {@code payload_too_large}).
 */
public class ValidationError extends MadeiraException {
    private final String field;
    private final String code;

    public ValidationError(String field, String code, String message) {
        super(field + ": " + message + " (" + code + ")");
        this.field = field;
        this.code = code;
    }

    public String field() {
        return field;
    }

    public String code() {
        return code;
    }
}
