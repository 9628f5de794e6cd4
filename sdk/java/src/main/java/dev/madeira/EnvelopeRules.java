package dev.madeira;

import java.util.regex.Pattern;

/** The field rules of SPEC §2 that a client can judge alone. Each check throws {@link ValidationError}. */
final class EnvelopeRules {
    private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9_.-]{0,127}");
    private static final Pattern TASK_ID = Pattern.compile("[A-Za-z0-9._:-]{1,128}");
    private static final Pattern VISIBLE_ASCII = Pattern.compile("[\\x21-\\x7e]{1,128}");

    static final long TIMEOUT_MIN_MS = 100;
    static final long TIMEOUT_MAX_MS = 86_400_000;

    private EnvelopeRules() {
    }

    static void taskType(String v) {
        if (v == null) {
            throw new ValidationError("task_type", "missing_field", "task_type is required");
        }
        name("task_type", v);
    }

    static void queue(String v) {
        if (v != null) {
            name("queue", v);
        }
    }

    private static void name(String field, String v) {
        if (!NAME.matcher(v).matches()) {
            throw invalid(field, field + " must match ^[a-z0-9][a-z0-9_.-]{0,127}$");
        }
    }

    static void taskId(String v) {
        if (v != null && !TASK_ID.matcher(v).matches()) {
            throw invalid("task_id", "task_id must be 1-128 characters of [A-Za-z0-9._:-]");
        }
    }

    static void payloadVersion(Integer v) {
        if (v == null) {
            throw new ValidationError("payload_version", "missing_field", "payload_version is required");
        }
        if (v < 1) {
            throw invalid("payload_version", "payload_version must be an integer >= 1");
        }
    }

    static void timeoutMs(Long v) {
        if (v != null && (v < TIMEOUT_MIN_MS || v > TIMEOUT_MAX_MS)) {
            throw invalid("timeout_ms", "timeout_ms must be from 100 to 86400000");
        }
    }

    static void maxRetries(Integer v) {
        range("max_retries", v, 0, 100);
    }

    static void priority(Integer v) {
        range("priority", v, 0, 1000);
    }

    static void retryCount(Integer v) {
        if (v != null && v != 0) {
            throw invalid("retry_count", "retry_count is server-owned: only 0 may be sent");
        }
    }

    static void traceId(String v) {
        if (v != null && !VISIBLE_ASCII.matcher(v).matches()) {
            throw invalid("trace_id", "trace_id must be 1-128 visible ASCII characters");
        }
    }

    static void idempotencyKey(String v) {
        if (v != null) {
            int n = v.codePointCount(0, v.length());
            if (n < 1 || n > 200 || v.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
                throw invalid("idempotency_key",
                        "idempotency_key must be 1-200 characters, none of them a control character");
            }
        }
    }

    private static void range(String field, Integer v, int min, int max) {
        if (v != null && (v < min || v > max)) {
            throw invalid(field, field + " must be an integer from " + min + " to " + max);
        }
    }

    static ValidationError invalid(String field, String message) {
        return new ValidationError(field, "invalid_field", message);
    }
}
