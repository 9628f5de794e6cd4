package dev.madeira;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Instant;

/** One entry of a task's attempt log ({@code GET /v1/tasks/{id}/attempts}). */
public final class Attempt {
    private final JsonNode json;

    Attempt(JsonNode json) {
        this.json = json;
    }

    public int attempt() {
        return json.path("attempt").asInt();
    }

    public String workerId() {
        return Json.text(json, "worker_id");
    }

    /** {@code succeeded}, {@code failed}, {@code lease_expired}, {@code cancelled}; {@code null} while running. */
    public String outcome() {
        return Json.text(json, "outcome");
    }

    public Instant startedAt() {
        return TaskInfo.instant(json, "started_at");
    }

    public Instant finishedAt() {
        return TaskInfo.instant(json, "finished_at");
    }

    public JsonNode error() {
        return json.get("error");
    }

    public Long durationMs() {
        JsonNode v = json.get("duration_ms");
        return v == null || v.isNull() ? null : v.asLong();
    }

    /** The whole entry as the server sent it. */
    public JsonNode json() {
        return json;
    }

    @Override
    public String toString() {
        return json.toString();
    }
}
