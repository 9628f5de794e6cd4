package dev.madeira;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/** event_signatures.json and webhook_signatures.json. */
class SignatureVectorsTest {
    @TestFactory
    Stream<DynamicTest> eventSignatures() {
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode c : TestData.load("event_signatures.json").get("cases")) {
            tests.add(DynamicTest.dynamicTest(c.get("name").asText(), () -> {
                EventSigner signer = new EventSigner("billing", c.get("secret").asText());
                Map<String, String> headers = signer.sign(c.get("body").asText(), c.get("timestamp").asLong());
                assertEquals("billing", headers.get("X-Madeira-Source"));
                assertEquals(c.get("timestamp").asText(), headers.get("X-Madeira-Timestamp"));
                assertEquals(c.get("signature").asText(), headers.get("X-Madeira-Signature"));
            }));
        }
        return tests.stream();
    }

    @TestFactory
    Stream<DynamicTest> webhookSignatures() {
        JsonNode file = TestData.load("webhook_signatures.json");
        Duration tolerance = Duration.ofSeconds(file.get("tolerance_seconds").asLong());
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode c : file.get("cases")) {
            tests.add(DynamicTest.dynamicTest(c.get("name").asText(), () -> {
                List<String> secrets = new ArrayList<>();
                c.get("secrets").forEach(s -> secrets.add(s.asText()));
                WebhookVerifier verifier = new WebhookVerifier(secrets, tolerance);
                byte[] body = c.get("body").asText().getBytes(StandardCharsets.UTF_8);
                Instant now = Instant.ofEpochSecond(c.get("now").asLong());
                boolean valid = verifier.isValid(c.get("id").asText(), c.get("timestamp").asText(),
                        c.get("signature").asText(), body, now);
                assertEquals(c.get("valid").asBoolean(), valid, c.path("reason").asText("should verify"));
            }));
        }
        return tests.stream();
    }

    @Test
    void verifyFromHeadersIsCaseInsensitiveAndThrows() {
        WebhookVerifier verifier = new WebhookVerifier("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        Map<String, String> headers = Map.of("Webhook-Id", "msg_p5jXN8AQM9LWM0D4loKWxJek",
                "Webhook-Timestamp", Long.toString(Instant.now().getEpochSecond()),
                "Webhook-Signature", "v1,AAAA");
        assertThrows(WebhookVerificationError.class,
                () -> verifier.verify(headers, "{}".getBytes(StandardCharsets.UTF_8)));
        assertThrows(WebhookVerificationError.class,
                () -> verifier.verify(Map.of(), "{}".getBytes(StandardCharsets.UTF_8)));
    }
}
