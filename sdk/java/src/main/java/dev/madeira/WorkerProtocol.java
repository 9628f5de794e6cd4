package dev.madeira;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/** The worker routes of the protocol (SPEC §3 "Workers"), as request bodies and calls. */
final class WorkerProtocol {
    static final String LANGUAGE = "java";
    private static final int MAX_STACK_CHARS = 8192;

    private final Transport transport;
    private final String workerId;
    private final List<String> queues;
    private final Map<String, List<Integer>> taskTypes;
    private final int waitMs;
    private final Long leaseMs;

    WorkerProtocol(Transport transport, String workerId, List<String> queues, Map<String, List<Integer>> taskTypes,
                   int waitMs, Long leaseMs) {
        this.transport = transport;
        this.workerId = workerId;
        this.queues = queues;
        this.taskTypes = taskTypes;
        this.waitMs = waitMs;
        this.leaseMs = leaseMs;
    }

    /** {@code POST /v1/leases}: long-polls up to {@code wait_ms} for up to {@code maxTasks} tasks. */
    JsonNode lease(int maxTasks) {
        ObjectNode body = Json.object();
        body.put("worker_id", workerId);
        ArrayNode q = body.putArray("queues");
        queues.forEach(q::add);
        if (!taskTypes.isEmpty()) {
            ObjectNode types = body.putObject("task_types");
            taskTypes.forEach((type, versions) -> {
                ArrayNode v = types.putArray(type);
                versions.forEach(v::add);
            });
        }
        body.put("max_tasks", maxTasks);
        body.put("wait_ms", waitMs);
        if (leaseMs != null) {
            body.put("lease_ms", leaseMs);
        }
        return transport.send("POST", "/v1/leases", body, Duration.ofMillis(waitMs + 15_000L)).path("leases");
    }

    /** {@code POST /v1/leases/ack} for several leases; the answer's per-item results. */
    JsonNode ackBatch(List<PendingAck> acks) {
        ObjectNode body = Json.object();
        ArrayNode array = body.putArray("acks");
        for (PendingAck a : acks) {
            ObjectNode item = array.addObject();
            item.put("lease_id", a.execution.leaseId);
            if (a.result != null) {
                item.set("result", a.result);
            }
        }
        return transport.send("POST", "/v1/leases/ack", body).path("results");
    }

    /** {@code POST /v1/leases/{id}/fail} with {@code {"error":{type,message,stack},"retry"}}. */
    JsonNode fail(String leaseId, Throwable error, String retry) {
        ObjectNode body = Json.object();
        ObjectNode err = body.putObject("error");
        err.put("type", typeName(error));
        err.put("message", error.getMessage() == null ? error.getClass().getName() : error.getMessage());
        err.put("stack", stack(error));
        body.put("retry", retry);
        return transport.send("POST", "/v1/leases/" + leaseId + "/fail", body);
    }

    /** {@code POST /v1/leases/{id}/extend}, without blocking the caller. */
    CompletableFuture<JsonNode> extend(String leaseId, long extendMs) {
        ObjectNode body = Json.object();
        body.put("extend_ms", extendMs);
        return transport.sendAsync("POST", "/v1/leases/" + leaseId + "/extend", body);
    }

    /** {@code POST /v1/workers/heartbeat}, without blocking the caller. */
    CompletableFuture<JsonNode> heartbeat(int slots, int inFlight) {
        ObjectNode body = Json.object();
        body.put("worker_id", workerId);
        body.put("language", LANGUAGE);
        body.put("sdk_version", Version.SDK_VERSION);
        ArrayNode q = body.putArray("queues");
        queues.forEach(q::add);
        body.put("slots", slots);
        body.put("in_flight", inFlight);
        return transport.sendAsync("POST", "/v1/workers/heartbeat", body);
    }

    /** The error class's simple name ({@code PermanentError}), as {@code last_error.type}. */
    static String typeName(Throwable error) {
        String simple = error.getClass().getSimpleName();
        return simple.isEmpty() ? error.getClass().getName() : simple;
    }

    private static String stack(Throwable error) {
        StringWriter out = new StringWriter();
        error.printStackTrace(new PrintWriter(out));
        String s = out.toString();
        return s.length() <= MAX_STACK_CHARS ? s : s.substring(0, MAX_STACK_CHARS);
    }
}
