package dev.madeira;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;

/**
 * Verifies a Standard Webhooks delivery from Madeira at the receiving end. The
 * {@code webhook-signature} header holds space-separated {@code v1,BASE64} signatures of
 * {@code id + "." + timestamp + "." + body} (HMAC-SHA256 keyed with the base64-decoded secret
 * after {@code whsec_}). A delivery is accepted when any v1 signature matches any of the
 * secrets (rotation) and the timestamp is within the tolerance (default 300 s) of now.
 * Comparisons are constant-time.
 */
public final class WebhookVerifier {
    public static final String ID_HEADER = "webhook-id";
    public static final String TIMESTAMP_HEADER = "webhook-timestamp";
    public static final String SIGNATURE_HEADER = "webhook-signature";
    public static final Duration DEFAULT_TOLERANCE = Duration.ofSeconds(300);

    private final List<byte[]> keys = new ArrayList<>();
    private final long toleranceSeconds;

    public WebhookVerifier(String... secrets) {
        this(List.of(secrets), DEFAULT_TOLERANCE);
    }

    public WebhookVerifier(List<String> secrets, Duration tolerance) {
        if (secrets.isEmpty()) {
            throw new IllegalArgumentException("at least one secret");
        }
        for (String s : secrets) {
            String b64 = s.startsWith("whsec_") ? s.substring("whsec_".length()) : s;
            keys.add(Base64.getDecoder().decode(b64));
        }
        this.toleranceSeconds = tolerance.getSeconds();
    }

    /** Verifies using the request's headers (names case-insensitive). */
    public void verify(Map<String, String> headers, byte[] body) {
        verify(header(headers, ID_HEADER), header(headers, TIMESTAMP_HEADER), header(headers, SIGNATURE_HEADER),
                body, Instant.now());
    }

    public void verify(String id, String timestamp, String signatures, byte[] body) {
        verify(id, timestamp, signatures, body, Instant.now());
    }

    /** @throws WebhookVerificationError when the delivery is not to be trusted */
    public void verify(String id, String timestamp, String signatures, byte[] body, Instant now) {
        if (id == null || timestamp == null || signatures == null) {
            throw new WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature");
        }
        long ts;
        try {
            ts = Long.parseLong(timestamp);
        } catch (NumberFormatException e) {
            throw new WebhookVerificationError("webhook-timestamp is not Unix seconds");
        }
        if (Math.abs(now.getEpochSecond() - ts) > toleranceSeconds) {
            throw new WebhookVerificationError("timestamp outside tolerance");
        }
        byte[] signed = (id + "." + timestamp + ".").getBytes(StandardCharsets.UTF_8);
        boolean matched = false;
        for (byte[] key : keys) {
            byte[] expected = Base64.getEncoder().encode(Hmac.sha256(key, signed, body));
            for (String sig : signatures.trim().split("\\s+")) {
                if (sig.startsWith("v1,")) {
                    byte[] given = sig.substring(3).getBytes(StandardCharsets.US_ASCII);
                    matched |= MessageDigest.isEqual(expected, given);
                }
            }
        }
        if (!matched) {
            throw new WebhookVerificationError("no valid v1 signature");
        }
    }

    public boolean isValid(String id, String timestamp, String signatures, byte[] body, Instant now) {
        try {
            verify(id, timestamp, signatures, body, now);
            return true;
        } catch (WebhookVerificationError e) {
            return false;
        }
    }

    private static String header(Map<String, String> headers, String name) {
        for (Map.Entry<String, String> e : headers.entrySet()) {
            if (e.getKey() != null && e.getKey().equalsIgnoreCase(name)) {
                return e.getValue();
            }
        }
        return null;
    }
}
