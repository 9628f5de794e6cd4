package dev.madeira;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TaskRequestTest {
    private static TaskRequest.Builder order() {
        return TaskRequest.builder("order.close_timeout").payloadVersion(1).payload(Map.of("order_id", 7));
    }

    @Test
    void zoneAwareTimesAreSentAsUtcWithOffset() {
        OffsetDateTime at = OffsetDateTime.of(2025, 9, 11, 12, 45, 0, 0, ZoneOffset.ofHours(8));
        assertEquals("2025-09-11T04:45:00Z", order().scheduleTime(at).build().toJson().get("schedule_time").asText());
        ZonedDateTime z = ZonedDateTime.of(2025, 9, 11, 12, 45, 0, 123_000_000, ZoneId.of("Asia/Shanghai"));
        assertEquals("2025-09-11T04:45:00.123Z", order().scheduleTime(z).build().toJson().get("schedule_time").asText());
        Instant i = Instant.parse("2025-09-11T04:45:00Z");
        assertEquals(i, order().scheduleTime(i).build().scheduleTime());
    }

    @Test
    void naiveTimesAndNumbersAreRefusedBeforeSending() {
        for (Object naive : new Object[] {LocalDateTime.of(2025, 9, 11, 12, 45), LocalDate.of(2025, 9, 11),
                1757565900L, 1757565900.5, "2025-09-11T12:45:00", "2025-09-11", new java.util.Date()}) {
            Map<String, Object> env = new HashMap<>(Map.of("task_type", "t", "payload_version", 1, "payload", Map.of()));
            env.put("schedule_time", naive);
            ValidationError e = assertThrows(ValidationError.class, () -> TaskRequest.fromMap(env), naive.toString());
            assertEquals("schedule_time", e.field());
            assertEquals("invalid_schedule_time", e.code());
        }
    }

    @Test
    void mapEnvelopeWithZoneAwareTimeIsAccepted() {
        Map<String, Object> env = new HashMap<>(Map.of("task_type", "t", "payload_version", 1, "payload", Map.of(),
                "schedule_time", OffsetDateTime.of(2025, 9, 11, 12, 45, 0, 0, ZoneOffset.ofHours(-3))));
        assertEquals("2025-09-11T15:45:00Z", TaskRequest.fromMap(env).toJson().get("schedule_time").asText());
    }

    @Test
    void unsetOptionsAreOmittedNotNull() {
        JsonNode wire = order().build().toJson();
        assertEquals(3, wire.size(), wire.toString());
        JsonNode full = order().queue("orders").taskId("a:1").timeout(Duration.ofSeconds(2)).maxRetries(0)
                .priority(1000).traceId("t-1").idempotencyKey("k").delay(Duration.ofSeconds(1)).build().toJson();
        assertEquals(11, full.size(), full.toString());
        assertEquals(2000, full.get("timeout_ms").asInt());
        full.fields().forEachRemaining(f -> assertFalse(f.getValue().isNull(), f.getKey()));
    }

    @Test
    void builderRefusesWithTheFieldNamed() {
        assertEquals("payload_version", assertThrows(ValidationError.class,
                () -> TaskRequest.builder("t").payload(Map.of()).build()).field());
        assertEquals("payload", assertThrows(ValidationError.class,
                () -> TaskRequest.builder("t").payloadVersion(1).payload(java.util.List.of(1)).build()).field());
        assertEquals("trace_id", assertThrows(ValidationError.class,
                () -> order().traceId("has space").build()).field());
        assertEquals("idempotency_key", assertThrows(ValidationError.class,
                () -> order().idempotencyKey("").build()).field());
        ValidationError big = assertThrows(ValidationError.class, () -> PayloadLimits.DEFAULT.check(
                order().payload(Map.of("blob", "x".repeat(70_000))).build()));
        assertEquals("payload_too_large", big.code());
    }

    @Test
    void retryTierFollowsTheErrorClass() {
        assertEquals("never", Worker.retryFor(new PermanentError("x")));
        assertEquals("fast", Worker.retryFor(new TransientError("x")));
        assertEquals("auto", Worker.retryFor(new IllegalStateException("x")));
        assertEquals("PermanentError", WorkerProtocol.typeName(new PermanentError("x")));
    }
}
