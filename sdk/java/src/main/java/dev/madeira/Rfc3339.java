package dev.madeira;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.time.temporal.TemporalAccessor;
import java.util.Locale;
import java.util.regex.Pattern;

/** RFC 3339 times with a mandatory zone: what {@code schedule_time} must be. */
final class Rfc3339 {
    private static final Pattern WITH_OFFSET = Pattern.compile(
            "\\d{4}-\\d{2}-\\d{2}[Tt]\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,9})?([Zz]|[+-]\\d{2}:\\d{2})");

    private Rfc3339() {
    }

    /** Parses a wire string; a time without an offset, a date alone or garbage is refused. */
    static Instant parse(String field, String text) {
        if (!WITH_OFFSET.matcher(text).matches()) {
            throw refused(field, "must be RFC 3339 with a zone offset or Z, got \"" + text + "\"");
        }
        try {
            return OffsetDateTime.parse(text.toUpperCase(Locale.ROOT), DateTimeFormatter.ISO_OFFSET_DATE_TIME).toInstant();
        } catch (DateTimeParseException e) {
            throw refused(field, "is not a valid time: \"" + text + "\"");
        }
    }

    /**
     * A Java value that names one instant: {@link Instant}, {@link OffsetDateTime},
     * {@link ZonedDateTime} or an RFC 3339 string with an offset. A {@code LocalDateTime},
     * a date, a number or anything else is refused.
     */
    static Instant fromValue(String field, Object value) {
        if (value instanceof Instant) {
            return (Instant) value;
        }
        if (value instanceof OffsetDateTime) {
            return ((OffsetDateTime) value).toInstant();
        }
        if (value instanceof ZonedDateTime) {
            return ((ZonedDateTime) value).toInstant();
        }
        if (value instanceof CharSequence) {
            return parse(field, value.toString());
        }
        if (value instanceof Number) {
            throw refused(field, "must be a zone-aware time, not a number");
        }
        if (value instanceof TemporalAccessor) {
            throw refused(field, "must be a zone-aware time (Instant, OffsetDateTime, ZonedDateTime), not "
                    + value.getClass().getSimpleName());
        }
        throw refused(field, "must be a zone-aware time, not " + (value == null ? "null" : value.getClass().getSimpleName()));
    }

    /** The wire form: UTC with {@code Z}, fraction only where there is one. */
    static String format(Instant instant) {
        return DateTimeFormatter.ISO_INSTANT.format(instant);
    }

    private static ValidationError refused(String field, String why) {
        return new ValidationError(field, "invalid_schedule_time", field + " " + why);
    }
}
