package dev.madeira;

import java.lang.System.Logger.Level;
import java.util.Collection;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntSupplier;

/**
 * The worker's clock: every {@link #TICK_MS} it extends the leases that are due (every
 * {@code lease_ms / 3}), expires the ones past their deadline (interrupting the handler), and
 * sends the heartbeat. One thread for all leases, so a task costs no timer of its own.
 */
final class LeaseKeeper {
    static final long TICK_MS = 20;
    private static final System.Logger LOG = System.getLogger("dev.madeira.Worker");

    private final WorkerProtocol protocol;
    private final Counters counters;
    private final Collection<Execution> inFlight;
    private final long heartbeatEveryNanos;
    private final int slots;
    private final IntSupplier busy;
    private final Thread thread;
    private volatile boolean stopped;

    LeaseKeeper(WorkerProtocol protocol, Counters counters, Collection<Execution> inFlight, long heartbeatEveryMs, int slots,
                IntSupplier busy, String workerId) {
        this.protocol = protocol;
        this.counters = counters;
        this.inFlight = inFlight;
        this.heartbeatEveryNanos = heartbeatEveryMs * 1_000_000L;
        this.slots = slots;
        this.busy = busy;
        this.thread = new Thread(this::loop, "madeira-lease-keeper-" + workerId);
        this.thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    void stop() throws InterruptedException {
        stopped = true;
        LockSupport.unpark(thread);
        thread.join(1000);
    }

    private void loop() {
        long nextHeartbeat = System.nanoTime();
        while (!stopped) {
            long now = System.nanoTime();
            if (now - nextHeartbeat >= 0) {
                heartbeat();
                nextHeartbeat = now + heartbeatEveryNanos;
            }
            for (Execution ex : inFlight) {
                tend(ex, now);
            }
            LockSupport.parkNanos(TICK_MS * 1_000_000L);
        }
    }

    private void tend(Execution ex, long now) {
        if (now - ex.deadlineNanos >= 0) {
            if (ex.expire()) {
                counters.expired.incrementAndGet();
                LOG.log(Level.WARNING, ex.task + " passed its deadline (" + ex.task.timeoutMs()
                        + " ms): handler interrupted, result will not be acked");
            }
            return;
        }
        if (now - ex.nextExtendNanos >= 0 && !ex.isLost() && ex.active()) {
            ex.nextExtendNanos = now + ex.extendEveryNanos;
            protocol.extend(ex.leaseId, ex.leaseMs).whenComplete((ok, err) -> {
                Throwable cause = err != null && err.getCause() != null ? err.getCause() : err;
                boolean leaseLost = cause instanceof ApiError && "lease_lost".equals(((ApiError) cause).code());
                if (leaseLost && System.nanoTime() - ex.deadlineNanos >= 0) {
                    // The server expired the lease at the deadline while this extend was on its
                    // way: the deadline is the reason (the tick expires it), not a lost lease.
                    LOG.log(Level.DEBUG, "{0}: lease_lost answered past the deadline", ex.task);
                } else if (leaseLost) {
                    ex.markLost();
                    LOG.log(Level.WARNING, "{0}: lease lost", ex.task);
                } else if (cause != null) {
                    LOG.log(Level.WARNING, "extending {0} failed: {1}", ex.task, cause.getMessage());
                }
            });
        }
    }

    private void heartbeat() {
        protocol.heartbeat(slots, busy.getAsInt()).whenComplete((ok, err) -> {
            if (err != null) {
                LOG.log(Level.DEBUG, "heartbeat failed: {0}", err.getMessage());
            }
        });
    }
}
