package dev.madeira;

import java.time.Duration;
import java.time.Instant;

/** What a running handler can know about its lease. */
public interface TaskContext {
    Task task();

    String leaseId();

    /** The latest moment the attempt may run: its start plus the task's {@code timeout_ms}. */
    Instant deadline();

    /** Time left until {@link #deadline()}; zero or negative once passed. */
    Duration remaining();

    /** The deadline passed: the handler was interrupted and its result will not be acked. */
    boolean isExpired();

    /** The server answered {@code 409 lease_lost}: another lease now holds the task. */
    boolean isLost();

    /** The worker is closing and the grace period ran out: the task was handed back. */
    boolean isAbandoned();

    /** Any reason to stop: expired, lost or abandoned. */
    default boolean isCancelled() {
        return isExpired() || isLost() || isAbandoned();
    }
}
