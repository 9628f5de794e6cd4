package dev.madeira;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZonedDateTime;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;

/**
 * One task to submit (the SPEC §2 envelope minus server-owned fields). Built with
 * {@link #builder(String)}; every rule a client can judge is checked by {@code build()}, which
 * throws {@link ValidationError} naming the field. {@code schedule_time} is taken only as a
 * zone-aware {@link Instant}, {@link OffsetDateTime} or {@link ZonedDateTime}, so a naive
 * {@code LocalDateTime} does not compile; it is sent as RFC 3339 in UTC ({@code Z}).
 */
public final class TaskRequest {
    static final Set<String> FIELDS = Set.of("task_id", "task_type", "queue", "payload_version", "payload",
            "schedule_time", "timeout_ms", "max_retries", "retry_count", "priority", "trace_id", "idempotency_key");

    private final String taskId;
    private final String taskType;
    private final String queue;
    private final int payloadVersion;
    private final JsonNode payload;
    private final Instant scheduleTime;
    private final Long timeoutMs;
    private final Integer maxRetries;
    private final Integer priority;
    private final String traceId;
    private final String idempotencyKey;

    private TaskRequest(Builder b) {
        EnvelopeRules.taskId(b.taskId);
        EnvelopeRules.taskType(b.taskType);
        EnvelopeRules.queue(b.queue);
        EnvelopeRules.payloadVersion(b.payloadVersion);
        if (b.payload == null) {
            throw new ValidationError("payload", "missing_field", "payload is required");
        }
        if (!b.payload.isObject()) {
            throw EnvelopeRules.invalid("payload", "payload must be a JSON object");
        }
        EnvelopeRules.timeoutMs(b.timeoutMs);
        EnvelopeRules.maxRetries(b.maxRetries);
        EnvelopeRules.priority(b.priority);
        EnvelopeRules.traceId(b.traceId);
        EnvelopeRules.idempotencyKey(b.idempotencyKey);
        this.taskId = b.taskId;
        this.taskType = b.taskType;
        this.queue = b.queue;
        this.payloadVersion = b.payloadVersion;
        this.payload = b.payload.deepCopy();
        this.scheduleTime = b.scheduleTime;
        this.timeoutMs = b.timeoutMs;
        this.maxRetries = b.maxRetries;
        this.priority = b.priority;
        this.traceId = b.traceId;
        this.idempotencyKey = b.idempotencyKey;
    }

    public static Builder builder(String taskType) {
        return new Builder().taskType(taskType);
    }

    /**
     * Reads an envelope as it would be sent on the wire, strictly: unknown fields, {@code null}s,
     * strings where integers belong, {@code 3.0}, a {@code schedule_time} that is a number or has
     * no offset are all refused with {@link ValidationError}.
     */
    public static TaskRequest fromJson(JsonNode envelope) {
        if (envelope == null || !envelope.isObject()) {
            throw new ValidationError("", "invalid_json", "an envelope is a JSON object");
        }
        return parse((ObjectNode) envelope, null, false);
    }

    /**
     * Reads an envelope given as a map. {@code schedule_time} may be an {@link Instant},
     * {@link OffsetDateTime}, {@link ZonedDateTime} or an RFC 3339 string with an offset; a
     * {@code LocalDateTime} or a number is refused ({@link ValidationError} naming
     * {@code schedule_time}). Other values are converted with Jackson.
     */
    public static TaskRequest fromMap(Map<String, ?> envelope) {
        ObjectNode node = Json.object();
        Object schedule = null;
        boolean hasSchedule = false;
        for (Map.Entry<String, ?> e : envelope.entrySet()) {
            if ("schedule_time".equals(e.getKey())) {
                schedule = e.getValue();
                hasSchedule = true;
            } else {
                JsonNode v = Json.tree(e.getValue());
                node.set(e.getKey(), v == null ? node.nullNode() : v);
            }
        }
        return parse(node, schedule, hasSchedule);
    }

    private static TaskRequest parse(ObjectNode env, Object scheduleValue, boolean scheduleGiven) {
        for (Iterator<String> it = env.fieldNames(); it.hasNext(); ) {
            String name = it.next();
            if (!FIELDS.contains(name)) {
                throw new ValidationError(name, "unknown_field", "unknown field " + name);
            }
        }
        Builder b = new Builder();
        b.taskId = string(env, "task_id");
        b.taskType = string(env, "task_type");
        b.queue = string(env, "queue");
        b.payloadVersion = integer(env, "payload_version");
        b.payload = env.get("payload");
        if (b.payload != null && b.payload.isNull()) {
            throw EnvelopeRules.invalid("payload", "payload must be a JSON object, not null");
        }
        b.timeoutMs = longInteger(env, "timeout_ms");
        b.maxRetries = integer(env, "max_retries");
        EnvelopeRules.retryCount(integer(env, "retry_count"));
        b.priority = integer(env, "priority");
        b.traceId = string(env, "trace_id");
        b.idempotencyKey = string(env, "idempotency_key");
        JsonNode st = env.get("schedule_time");
        if (scheduleGiven) {
            b.scheduleTime = Rfc3339.fromValue("schedule_time", scheduleValue);
        } else if (st != null) {
            if (!st.isTextual()) {
                throw new ValidationError("schedule_time", "invalid_schedule_time",
                        "schedule_time must be an RFC 3339 string with a zone offset");
            }
            b.scheduleTime = Rfc3339.parse("schedule_time", st.asText());
        }
        return b.build();
    }

    private static String string(ObjectNode env, String field) {
        JsonNode v = env.get(field);
        if (v == null) {
            return null;
        }
        if (!v.isTextual()) {
            throw EnvelopeRules.invalid(field, field + " must be a string");
        }
        return v.asText();
    }

    private static Integer integer(ObjectNode env, String field) {
        Long v = longInteger(env, field);
        if (v == null) {
            return null;
        }
        if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
            throw EnvelopeRules.invalid(field, field + " is out of range");
        }
        return v.intValue();
    }

    private static Long longInteger(ObjectNode env, String field) {
        JsonNode v = env.get(field);
        if (v == null) {
            return null;
        }
        if (!v.isIntegralNumber() || !v.canConvertToLong()) {
            throw EnvelopeRules.invalid(field, field + " must be a JSON integer");
        }
        return v.longValue();
    }

    /** The envelope as sent: absent options are omitted, never {@code null}. */
    public ObjectNode toJson() {
        ObjectNode o = Json.object();
        if (taskId != null) {
            o.put("task_id", taskId);
        }
        o.put("task_type", taskType);
        if (queue != null) {
            o.put("queue", queue);
        }
        o.put("payload_version", payloadVersion);
        o.set("payload", payload.deepCopy());
        if (scheduleTime != null) {
            o.put("schedule_time", Rfc3339.format(scheduleTime));
        }
        if (timeoutMs != null) {
            o.put("timeout_ms", timeoutMs);
        }
        if (maxRetries != null) {
            o.put("max_retries", maxRetries);
        }
        if (priority != null) {
            o.put("priority", priority);
        }
        if (traceId != null) {
            o.put("trace_id", traceId);
        }
        if (idempotencyKey != null) {
            o.put("idempotency_key", idempotencyKey);
        }
        return o;
    }

    public String taskId() {
        return taskId;
    }

    public String taskType() {
        return taskType;
    }

    public String queue() {
        return queue;
    }

    public int payloadVersion() {
        return payloadVersion;
    }

    public JsonNode payload() {
        return payload.deepCopy();
    }

    public Instant scheduleTime() {
        return scheduleTime;
    }

    public Long timeoutMs() {
        return timeoutMs;
    }

    public Integer maxRetries() {
        return maxRetries;
    }

    public Integer priority() {
        return priority;
    }

    public String traceId() {
        return traceId;
    }

    public String idempotencyKey() {
        return idempotencyKey;
    }

    @Override
    public String toString() {
        return "TaskRequest" + toJson();
    }

    /** Options left unset are omitted from the envelope, so the server's defaults apply. */
    public static final class Builder {
        private String taskId;
        private String taskType;
        private String queue;
        private Integer payloadVersion;
        private JsonNode payload;
        private Instant scheduleTime;
        private Long timeoutMs;
        private Integer maxRetries;
        private Integer priority;
        private String traceId;
        private String idempotencyKey;

        private Builder() {
        }

        public Builder taskId(String taskId) {
            this.taskId = taskId;
            return this;
        }

        public Builder taskType(String taskType) {
            this.taskType = taskType;
            return this;
        }

        public Builder queue(String queue) {
            this.queue = queue;
            return this;
        }

        public Builder payloadVersion(int payloadVersion) {
            this.payloadVersion = payloadVersion;
            return this;
        }

        /** A JSON object: a {@code Map}, a POJO Jackson can serialise, or an {@code ObjectNode}. */
        public Builder payload(Object payload) {
            this.payload = Json.tree(payload);
            return this;
        }

        public Builder scheduleTime(Instant at) {
            this.scheduleTime = at;
            return this;
        }

        public Builder scheduleTime(OffsetDateTime at) {
            this.scheduleTime = at == null ? null : at.toInstant();
            return this;
        }

        public Builder scheduleTime(ZonedDateTime at) {
            this.scheduleTime = at == null ? null : at.toInstant();
            return this;
        }

        /** Schedules the task {@code delay} from now. */
        public Builder delay(Duration delay) {
            this.scheduleTime = Instant.now().plus(delay);
            return this;
        }

        public Builder timeout(Duration timeout) {
            this.timeoutMs = timeout.toMillis();
            return this;
        }

        public Builder timeoutMs(long timeoutMs) {
            this.timeoutMs = timeoutMs;
            return this;
        }

        public Builder maxRetries(int maxRetries) {
            this.maxRetries = maxRetries;
            return this;
        }

        public Builder priority(int priority) {
            this.priority = priority;
            return this;
        }

        public Builder traceId(String traceId) {
            this.traceId = traceId;
            return this;
        }

        public Builder idempotencyKey(String idempotencyKey) {
            this.idempotencyKey = idempotencyKey;
            return this;
        }

        /** @throws ValidationError naming the first field that breaks a rule */
        public TaskRequest build() {
            return new TaskRequest(this);
        }
    }
}
