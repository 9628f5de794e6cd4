package dev.madeira;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/** envelopes.json: every valid envelope is accepted locally, every client-judgeable invalid one refused. */
class EnvelopeVectorsTest {
    private static final JsonNode VECTORS = TestData.load("envelopes.json");

    /** Client-side validation as submit() applies it. */
    static TaskRequest validate(JsonNode envelope) {
        TaskRequest request = TaskRequest.fromJson(envelope);
        PayloadLimits.DEFAULT.check(request);
        return request;
    }

    @TestFactory
    Stream<DynamicTest> validEnvelopesAreAccepted() {
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode c : VECTORS.get("valid")) {
            tests.add(DynamicTest.dynamicTest(c.get("name").asText(), () -> {
                JsonNode env = c.get("envelope");
                TaskRequest request = assertDoesNotThrow(() -> validate(env));
                JsonNode wire = request.toJson();
                for (Iterator<Map.Entry<String, JsonNode>> it = wire.fields(); it.hasNext(); ) {
                    Map.Entry<String, JsonNode> f = it.next();
                    assertFalse(f.getValue().isNull(), "never send null: " + f.getKey());
                }
                assertEquals(env.get("payload"), wire.get("payload"));
                if (env.has("schedule_time")) {
                    String sent = wire.get("schedule_time").asText();
                    assertTrue(sent.endsWith("Z"), sent);
                    assertEquals(Rfc3339.parse("schedule_time", env.get("schedule_time").asText()), Instant.parse(sent));
                }
                // what was sent reads back as the same request
                assertEquals(wire, TaskRequest.fromJson(wire).toJson());
            }));
        }
        return tests.stream();
    }

    @TestFactory
    Stream<DynamicTest> invalidEnvelopesAreRefusedLocally() {
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode c : VECTORS.get("invalid")) {
            if (c.get("server_only").asBoolean()) {
                continue;
            }
            tests.add(DynamicTest.dynamicTest(c.get("name").asText(), () -> {
                ValidationError e = assertThrows(ValidationError.class, () -> validate(c.get("envelope")));
                assertEquals(c.get("field").asText(), e.field(), e.getMessage());
                assertEquals(c.get("code").asText(), e.code(), e.getMessage());
            }));
        }
        return tests.stream();
    }

    @TestFactory
    Stream<DynamicTest> serverOnlyCasesPassLocalValidation() {
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode c : VECTORS.get("invalid")) {
            if (c.get("server_only").asBoolean()) {
                tests.add(DynamicTest.dynamicTest(c.get("name").asText(),
                        () -> assertDoesNotThrow(() -> validate(c.get("envelope")))));
            }
        }
        assertFalse(tests.isEmpty());
        return tests.stream();
    }
}
