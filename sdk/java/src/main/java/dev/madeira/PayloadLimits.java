package dev.madeira;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;

/**
 * The server's payload limits ({@code limits.max_depth}, {@code limits.max_payload_bytes}),
 * checked before sending. The defaults are the server's defaults; a client talking to a
 * server configured otherwise says so with {@link MadeiraClient.Builder#payloadLimits}.
 */
public final class PayloadLimits {
    public static final PayloadLimits DEFAULT = new PayloadLimits(5, 65536);

    private final int maxDepth;
    private final int maxBytes;

    public PayloadLimits(int maxDepth, int maxBytes) {
        this.maxDepth = maxDepth;
        this.maxBytes = maxBytes;
    }

    public int maxDepth() {
        return maxDepth;
    }

    public int maxBytes() {
        return maxBytes;
    }

    /** Throws {@link ValidationError} ({@code payload_too_deep} or {@code payload_too_large}) naming {@code payload}. */
    public void check(TaskRequest request) {
        check(request.payload());
    }

    void check(JsonNode payload) {
        int depth = depth(payload);
        if (depth > maxDepth) {
            throw new ValidationError("payload", "payload_too_deep",
                    "payload nests " + depth + " levels, more than " + maxDepth);
        }
        int size;
        try {
            size = Json.MAPPER.writeValueAsBytes(payload).length;
        } catch (JsonProcessingException e) {
            throw new ValidationError("payload", "invalid_field", "payload cannot be encoded: " + e.getMessage());
        }
        if (size > maxBytes) {
            throw new ValidationError("payload", "payload_too_large",
                    "payload is " + size + " bytes encoded, more than " + maxBytes);
        }
    }

    /** Containers count one level each; the payload object itself is level 1. */
    static int depth(JsonNode node) {
        if (node == null || !node.isContainerNode()) {
            return 0;
        }
        int deepest = 0;
        for (JsonNode child : node) {
            deepest = Math.max(deepest, depth(child));
        }
        return 1 + deepest;
    }
}
