package dev.madeira;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Instant;

/** A task as the server reports it ({@code GET /v1/tasks/{id}}): the envelope plus its state. */
public final class TaskInfo {
    private final JsonNode json;

    TaskInfo(JsonNode json) {
        this.json = json;
    }

    public String taskId() {
        return Json.text(json, "task_id");
    }

    public String taskType() {
        return Json.text(json, "task_type");
    }

    public String queue() {
        return Json.text(json, "queue");
    }

    /** {@code scheduled}, {@code pending}, {@code running}, {@code retrying}, {@code succeeded}, {@code dead}, {@code cancelled}. */
    public String status() {
        return Json.text(json, "status");
    }

    public boolean isTerminal() {
        String s = status();
        return "succeeded".equals(s) || "dead".equals(s) || "cancelled".equals(s);
    }

    public int payloadVersion() {
        return json.path("payload_version").asInt();
    }

    public JsonNode payload() {
        return json.get("payload");
    }

    public Instant scheduleTime() {
        return instant(json, "schedule_time");
    }

    public int retryCount() {
        return json.path("retry_count").asInt();
    }

    public int priority() {
        return json.path("priority").asInt();
    }

    public String traceId() {
        return Json.text(json, "trace_id");
    }

    /** Number of attempts so far, where the server reports it as a count. */
    public int attempts() {
        JsonNode a = json.get("attempts");
        if (a == null || a.isNull()) {
            return 0;
        }
        return a.isArray() ? a.size() : a.asInt();
    }

    /** {@code {"type","message","stack"?}} of the last failure, or {@code null}. */
    public JsonNode lastError() {
        JsonNode v = json.get("last_error");
        return v == null || v.isNull() ? null : v;
    }

    public JsonNode result() {
        JsonNode v = json.get("result");
        return v == null || v.isNull() ? null : v;
    }

    public boolean deduplicated() {
        return json.path("deduplicated").asBoolean(false);
    }

    public Instant createdAt() {
        return instant(json, "created_at");
    }

    public Instant updatedAt() {
        return instant(json, "updated_at");
    }

    public Instant nextAttemptAt() {
        return instant(json, "next_attempt_at");
    }

    /** The whole answer as the server sent it. */
    public JsonNode json() {
        return json;
    }

    static Instant instant(JsonNode json, String field) {
        String v = Json.text(json, field);
        return v == null ? null : Rfc3339.parse(field, v);
    }

    @Override
    public String toString() {
        return json.toString();
    }
}
