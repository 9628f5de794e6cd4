package dev.madeira;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Signs an event for {@code POST /v1/events} as a configured source: the three headers
 * {@code X-Madeira-Source}, {@code X-Madeira-Timestamp} (Unix seconds) and
 * {@code X-Madeira-Signature: sha256=HEX}, HEX = HMAC-SHA256(secret, timestamp + "\n" + body).
 * Sign the exact bytes you send.
 */
public final class EventSigner {
    public static final String SOURCE_HEADER = "X-Madeira-Source";
    public static final String TIMESTAMP_HEADER = "X-Madeira-Timestamp";
    public static final String SIGNATURE_HEADER = "X-Madeira-Signature";

    private final String sourceId;
    private final byte[] secret;

    public EventSigner(String sourceId, String secret) {
        this.sourceId = sourceId;
        this.secret = secret.getBytes(StandardCharsets.UTF_8);
    }

    /** Headers for {@code body} signed now. */
    public Map<String, String> sign(byte[] body) {
        return sign(body, Instant.now().getEpochSecond());
    }

    /** Headers for {@code body} (UTF-8) signed now. */
    public Map<String, String> sign(String body) {
        return sign(body.getBytes(StandardCharsets.UTF_8));
    }

    public Map<String, String> sign(String body, long timestamp) {
        return sign(body.getBytes(StandardCharsets.UTF_8), timestamp);
    }

    public Map<String, String> sign(byte[] body, long timestamp) {
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put(SOURCE_HEADER, sourceId);
        headers.put(TIMESTAMP_HEADER, Long.toString(timestamp));
        headers.put(SIGNATURE_HEADER, signature(body, timestamp));
        return headers;
    }

    /** {@code sha256=} + lower-case hex HMAC-SHA256(secret, timestamp + "\n" + body). */
    public String signature(byte[] body, long timestamp) {
        byte[] prefix = (timestamp + "\n").getBytes(StandardCharsets.UTF_8);
        return "sha256=" + HexFormat.of().formatHex(Hmac.sha256(secret, prefix, body));
    }
}
