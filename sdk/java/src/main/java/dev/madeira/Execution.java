package dev.madeira;

import java.time.Duration;
import java.time.Instant;

/**
 * One lease being worked on: the handler's {@link TaskContext}, and the state that decides who
 * reports the attempt. Exactly one of "the handler finished" and "the deadline passed" (or
 * "the worker gave up at close") wins; only the first reports anything to the server.
 */
final class Execution implements TaskContext {
    private enum State { QUEUED, RUNNING, DONE, EXPIRED, ABANDONED }

    final String leaseId;
    final Task task;
    final long deadlineNanos;
    final long extendEveryNanos;
    final long leaseMs;
    private final Instant deadline;

    long nextExtendNanos; // touched only by the lease keeper thread
    private State state = State.QUEUED;
    private Thread runner;
    private volatile boolean lost;
    private volatile boolean expired;
    private volatile boolean abandoned;

    Execution(String leaseId, Task task, long startNanos, Instant start, long leaseMs) {
        this.leaseId = leaseId;
        this.task = task;
        long timeoutMs = task.timeoutMs();
        this.deadlineNanos = startNanos + timeoutMs * 1_000_000L;
        this.deadline = start.plusMillis(timeoutMs);
        this.leaseMs = leaseMs;
        this.extendEveryNanos = Math.max(1, leaseMs / 3) * 1_000_000L;
        this.nextExtendNanos = startNanos + extendEveryNanos;
    }

    /** The handler is about to run on this thread; false when the attempt already ended. */
    synchronized boolean begin() {
        if (state != State.QUEUED) {
            return false;
        }
        state = State.RUNNING;
        runner = Thread.currentThread();
        return true;
    }

    /** The handler returned; true when its outcome is to be reported. Clears a stray interrupt. */
    synchronized boolean finish() {
        runner = null;
        Thread.interrupted();
        if (state != State.RUNNING) {
            return false;
        }
        state = State.DONE;
        return true;
    }

    /** The deadline passed: interrupt the handler; its result will be dropped. */
    synchronized boolean expire() {
        if (state != State.RUNNING && state != State.QUEUED) {
            return false;
        }
        state = State.EXPIRED;
        expired = true;
        if (runner != null) {
            runner.interrupt();
        }
        return true;
    }

    /** The worker gave up at close: interrupt the handler; the caller hands the task back. */
    synchronized boolean abandon() {
        if (state != State.RUNNING && state != State.QUEUED) {
            return false;
        }
        state = State.ABANDONED;
        abandoned = true;
        if (runner != null) {
            runner.interrupt();
        }
        return true;
    }

    synchronized boolean active() {
        return state == State.RUNNING || state == State.QUEUED;
    }

    void markLost() {
        lost = true;
    }

    @Override
    public Task task() {
        return task;
    }

    @Override
    public String leaseId() {
        return leaseId;
    }

    @Override
    public Instant deadline() {
        return deadline;
    }

    @Override
    public Duration remaining() {
        return Duration.ofNanos(deadlineNanos - System.nanoTime());
    }

    @Override
    public boolean isExpired() {
        return expired || System.nanoTime() - deadlineNanos >= 0;
    }

    @Override
    public boolean isLost() {
        return lost;
    }

    @Override
    public boolean isAbandoned() {
        return abandoned;
    }
}
