package dev.madeira;

import com.fasterxml.jackson.databind.JsonNode;

/** A finished handler's result waiting to be acked. */
final class PendingAck {
    final Execution execution;
    final JsonNode result;

    PendingAck(Execution execution, JsonNode result) {
        this.execution = execution;
        this.result = result;
    }
}
