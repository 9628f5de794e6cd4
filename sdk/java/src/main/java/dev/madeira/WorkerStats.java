package dev.madeira;

/**
 * Counters of one worker since it started.
 *
 * @param leaseRequests {@code POST /v1/leases} calls answered
 * @param leased tasks received
 * @param ackRequests {@code POST /v1/leases/ack} calls sent
 * @param acked tasks the server confirmed as succeeded
 * @param failed failures reported
 * @param expired tasks whose deadline passed while their handler ran
 */
public record WorkerStats(long leaseRequests, long leased, long ackRequests, long acked, long failed, long expired) {
}
