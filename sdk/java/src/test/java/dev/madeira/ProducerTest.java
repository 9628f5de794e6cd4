package dev.madeira;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The producer client against a real server. */
class ProducerTest extends LiveServerTest {
    @Test
    void everyValidVectorIsAcceptedByTheServer() {
        String q = queue("producer");
        for (JsonNode c : TestData.load("envelopes.json").get("valid")) {
            ObjectNode env = c.get("envelope").deepCopy();
            env.put("queue", q);
            env.remove("task_id"); // ids must be unique across cases that share one
            SubmitResult r = client.submit(TaskRequest.fromJson(env));
            assertFalse(r.duplicate(), c.get("name").asText());
            assertEquals(r.taskId(), client.get(r.taskId()).taskId());
        }
    }

    @Test
    void serverOnlyRefusalsSurfaceTheServersCodeAndField() {
        for (JsonNode c : TestData.load("envelopes.json").get("invalid")) {
            if (!c.get("server_only").asBoolean()) {
                continue;
            }
            TaskRequest request = TaskRequest.fromJson(c.get("envelope"));
            ApiError e = assertThrows(ApiError.class, () -> client.submit(request), c.get("name").asText());
            assertEquals(400, e.status());
            assertEquals(c.get("code").asText(), e.code());
            assertEquals(c.get("field").asText(), e.field());
            assertTrue(e.serverMessage() != null && !e.serverMessage().isEmpty());
        }
    }

    @Test
    void submitGetCancelAndDuplicates() {
        String id = "java-" + UUID.randomUUID();
        OffsetDateTime later = OffsetDateTime.now(ZoneOffset.ofHours(8)).plusHours(1);
        TaskRequest request = TaskRequest.builder("producer.test").queue(queue("producer")).taskId(id).payloadVersion(2)
                .payload(Map.of("n", 1, "nested", Map.of("ok", true))).scheduleTime(later).timeout(Duration.ofSeconds(5))
                .maxRetries(7).priority(42).traceId("trace-java-1").idempotencyKey("idem-" + id).build();
        SubmitResult first = client.submit(request);
        assertEquals(id, first.taskId());
        assertEquals("scheduled", first.status());
        assertFalse(first.duplicate());
        assertTrue(client.submit(request).duplicate());

        TaskRequest other = TaskRequest.builder("producer.test").taskId(id).payloadVersion(2).payload(Map.of("n", 2)).build();
        ApiError conflict = assertThrows(ApiError.class, () -> client.submit(other));
        assertEquals(409, conflict.status());
        assertEquals("task_id_conflict", conflict.code());

        TaskInfo info = client.get(id);
        assertEquals("scheduled", info.status());
        assertEquals(2, info.payloadVersion());
        assertEquals(1, info.payload().get("n").asInt());
        assertEquals(later.toInstant().toEpochMilli(), info.scheduleTime().toEpochMilli());
        assertEquals(42, info.priority());
        assertEquals("trace-java-1", info.traceId());
        assertEquals(0, info.attempts());
        assertTrue(client.attempts(id).isEmpty());

        assertEquals("cancelled", client.cancel(id).status());
        ApiError terminal = assertThrows(ApiError.class, () -> client.cancel(id));
        assertEquals(409, terminal.status());
        assertEquals("task_terminal", terminal.code());

        ApiError missing = assertThrows(ApiError.class, () -> client.get("no-such-task"));
        assertEquals(404, missing.status());
        assertEquals("not_found", missing.code());
    }

    @Test
    void batchJudgesEachItemAlone() {
        String q = queue("producer");
        List<TaskRequest> tasks = new ArrayList<>();
        for (int i = 0; i < 1500; i++) {
            tasks.add(TaskRequest.builder("producer.batch").queue(q).payloadVersion(1).payload(Map.of("i", i)).build());
        }
        tasks.add(TaskRequest.builder("producer.batch").queue(q).payloadVersion(1).payload(Map.of())
                .scheduleTime(Instant.now().plus(Duration.ofDays(400))).build());
        tasks.add(TaskRequest.builder("producer.batch").queue(q).payloadVersion(1)
                .payload(Map.of("a", Map.of("b", Map.of("c", Map.of("d", Map.of("e", Map.of("f", 1))))))).build());
        List<BatchItem> items = client.submitBatch(tasks);
        assertEquals(tasks.size(), items.size());
        for (int i = 0; i < 1500; i++) {
            assertTrue(items.get(i).ok(), items.get(i).toString());
            assertEquals("pending", items.get(i).result().status());
        }
        ApiError tooFar = (ApiError) items.get(1500).error();
        assertEquals("schedule_too_far", tooFar.code());
        assertEquals("schedule_time", tooFar.field());
        ValidationError tooDeep = (ValidationError) items.get(1501).error();
        assertEquals("payload_too_deep", tooDeep.code());
        assertNull(items.get(1501).result());
    }

    @Test
    void unreachableServerIsATransportError() {
        MadeiraClient nowhere = MadeiraClient.builder("http://127.0.0.1:1").requestTimeout(Duration.ofSeconds(2)).build();
        assertThrows(TransportError.class, () -> nowhere.get("x"));
    }
}
