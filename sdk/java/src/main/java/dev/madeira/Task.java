package dev.madeira;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import java.time.Instant;

/** A leased task: the envelope as the server stored it, plus the attempt number. */
public final class Task {
    private final JsonNode json;

    Task(JsonNode json) {
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

    public int payloadVersion() {
        return json.path("payload_version").asInt();
    }

    public JsonNode payload() {
        return json.get("payload");
    }

    /** The payload bound to a class with Jackson. */
    public <T> T payloadAs(Class<T> type) {
        try {
            return Json.MAPPER.treeToValue(payload(), type);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("payload of " + taskId() + " is not a " + type.getSimpleName(), e);
        }
    }

    /** 1 for the first attempt. */
    public int attempt() {
        return json.path("attempt").asInt(1);
    }

    public int retryCount() {
        return json.path("retry_count").asInt();
    }

    public int maxRetries() {
        return json.path("max_retries").asInt();
    }

    public int priority() {
        return json.path("priority").asInt();
    }

    public long timeoutMs() {
        return json.path("timeout_ms").asLong(30000);
    }

    public String traceId() {
        return Json.text(json, "trace_id");
    }

    public String idempotencyKey() {
        return Json.text(json, "idempotency_key");
    }

    public Instant scheduleTime() {
        return TaskInfo.instant(json, "schedule_time");
    }

    /** The envelope as the server sent it. */
    public JsonNode json() {
        return json;
    }

    @Override
    public String toString() {
        return "Task{" + taskType() + " v" + payloadVersion() + " " + taskId() + " attempt " + attempt() + "}";
    }
}
