package dev.madeira;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The producer client: submit (one or a batch), get, attempts, cancel. Thread-safe; share one
 * per process. Envelopes are validated before sending ({@link ValidationError}); what only the
 * server can judge comes back as {@link ApiError} with the server's status, code, field and
 * message unchanged; an unreachable server is a {@link TransportError}.
 */
public final class MadeiraClient {
    /** The most tasks one {@code POST /v1/tasks/batch} takes. */
    public static final int MAX_BATCH = 1000;
    private static final Pattern ID = Pattern.compile("[A-Za-z0-9._:-]{1,128}");

    private final Transport transport;
    private final PayloadLimits limits;

    private MadeiraClient(Builder b) {
        this.transport = new Transport(b.baseUrl, b.token, b.requestTimeout);
        this.limits = b.limits;
    }

    public static Builder builder(String baseUrl) {
        return new Builder(URI.create(baseUrl));
    }

    public static MadeiraClient create(String baseUrl) {
        return builder(baseUrl).build();
    }

    Transport transport() {
        return transport;
    }

    public URI baseUrl() {
        return transport.base();
    }

    /** {@code POST /v1/tasks}. A repeat of an earlier submit answers {@code duplicate = true}. */
    public SubmitResult submit(TaskRequest task) {
        limits.check(task);
        return SubmitResult.from(transport.send("POST", "/v1/tasks", task.toJson()));
    }

    /**
     * {@code POST /v1/tasks/batch}, split into requests of {@link #MAX_BATCH}. Items are judged
     * one by one (locally, then by the server); the answer has one {@link BatchItem} per task,
     * in order.
     */
    public List<BatchItem> submitBatch(List<TaskRequest> tasks) {
        List<BatchItem> out = new ArrayList<>(tasks.size());
        for (int start = 0; start < tasks.size(); start += MAX_BATCH) {
            List<TaskRequest> chunk = tasks.subList(start, Math.min(tasks.size(), start + MAX_BATCH));
            BatchItem[] items = new BatchItem[chunk.size()];
            List<Integer> sent = new ArrayList<>(chunk.size());
            ObjectNode body = Json.object();
            ArrayNode array = body.putArray("tasks");
            for (int i = 0; i < chunk.size(); i++) {
                try {
                    limits.check(chunk.get(i));
                    array.add(chunk.get(i).toJson());
                    sent.add(i);
                } catch (ValidationError e) {
                    items[i] = new BatchItem(null, e);
                }
            }
            if (!sent.isEmpty()) {
                JsonNode results = transport.send("POST", "/v1/tasks/batch", body).path("results");
                if (results.size() != sent.size()) {
                    throw new TransportError("batch answer has " + results.size() + " results for "
                            + sent.size() + " tasks", null);
                }
                for (int k = 0; k < sent.size(); k++) {
                    items[sent.get(k)] = item(results.get(k));
                }
            }
            for (BatchItem item : items) {
                out.add(item);
            }
        }
        return out;
    }

    private static BatchItem item(JsonNode r) {
        JsonNode err = r.get("error");
        if (err != null && err.isObject()) {
            return new BatchItem(null, new ApiError(0, Json.text(err, "code"), Json.text(err, "message"),
                    Json.text(err, "field")));
        }
        return new BatchItem(SubmitResult.from(r), null);
    }

    /** {@code GET /v1/tasks/{id}}; an unknown id is an {@link ApiError} 404 {@code not_found}. */
    public TaskInfo get(String taskId) {
        return new TaskInfo(transport.send("GET", "/v1/tasks/" + id(taskId), null));
    }

    /** {@code GET /v1/tasks/{id}/attempts}, oldest first. */
    public List<Attempt> attempts(String taskId) {
        JsonNode list = transport.send("GET", "/v1/tasks/" + id(taskId) + "/attempts", null).path("attempts");
        List<Attempt> out = new ArrayList<>(list.size());
        for (JsonNode a : list) {
            out.add(new Attempt(a));
        }
        return out;
    }

    /**
     * {@code POST /v1/tasks/{id}/cancel}: a scheduled, pending, retrying or dead task becomes
     * {@code cancelled}; a running one is {@link ApiError} 409 {@code task_running}, a finished
     * one 409 {@code task_terminal}.
     */
    public TaskInfo cancel(String taskId) {
        return new TaskInfo(transport.send("POST", "/v1/tasks/" + id(taskId) + "/cancel", null));
    }

    private static String id(String taskId) {
        if (taskId == null || !ID.matcher(taskId).matches()) {
            throw new ValidationError("task_id", "invalid_field", "task_id must be 1-128 characters of [A-Za-z0-9._:-]");
        }
        return taskId;
    }

    /** Builds a {@link Worker} that shares this client's connections and token. */
    public Worker.Builder worker() {
        return Worker.builder(this);
    }

    public static final class Builder {
        private final URI baseUrl;
        private String token;
        private Duration requestTimeout = Duration.ofSeconds(30);
        private PayloadLimits limits = PayloadLimits.DEFAULT;

        private Builder(URI baseUrl) {
            this.baseUrl = baseUrl;
        }

        /** Sends {@code Authorization: Bearer TOKEN} on every request. */
        public Builder token(String token) {
            this.token = token;
            return this;
        }

        public Builder requestTimeout(Duration timeout) {
            this.requestTimeout = timeout;
            return this;
        }

        /** The server's {@code [limits]}, when configured other than the defaults. */
        public Builder payloadLimits(PayloadLimits limits) {
            this.limits = limits;
            return this;
        }

        public MadeiraClient build() {
            return new MadeiraClient(this);
        }
    }
}
