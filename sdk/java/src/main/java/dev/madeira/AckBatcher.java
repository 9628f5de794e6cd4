package dev.madeira;

import com.fasterxml.jackson.databind.JsonNode;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Coalesces acks: while one {@code POST /v1/leases/ack} is on the wire, the results that finish
 * meanwhile queue up and leave together in the next one (up to {@link #MAX_BATCH}).
 */
final class AckBatcher {
    static final int MAX_BATCH = 1000;
    private static final int SEND_TRIES = 3;
    private static final long LINGER_NANOS = TimeUnit.MILLISECONDS.toNanos(2);
    private static final long QUIET_NANOS = TimeUnit.MICROSECONDS.toNanos(300);
    private static final System.Logger LOG = System.getLogger("dev.madeira.Worker");

    private final WorkerProtocol protocol;
    private final Counters counters;
    private final LinkedBlockingQueue<PendingAck> queue = new LinkedBlockingQueue<>();
    private final Thread thread;
    private volatile boolean closing;

    AckBatcher(WorkerProtocol protocol, Counters counters, String workerId) {
        this.protocol = protocol;
        this.counters = counters;
        this.thread = new Thread(this::loop, "madeira-acks-" + workerId);
        this.thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    void add(Execution execution, JsonNode result) {
        queue.add(new PendingAck(execution, result));
    }

    /** Sends what is queued, then stops; waits at most {@code timeoutMs}. */
    void close(long timeoutMs) throws InterruptedException {
        closing = true;
        thread.join(timeoutMs);
    }

    private void loop() {
        List<PendingAck> batch = new ArrayList<>();
        while (!(closing && queue.isEmpty())) {
            PendingAck first;
            try {
                first = queue.poll(50, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                return;
            }
            if (first == null) {
                continue;
            }
            batch.add(first);
            try {
                collect(batch);
            } catch (InterruptedException e) {
                send(batch);
                return;
            }
            send(batch);
            batch.clear();
        }
    }

    /**
     * Takes what is queued, then keeps taking while results keep arriving (each within
     * {@link #QUIET_NANOS}, for at most {@link #LINGER_NANOS}): the tasks of one lease call tend
     * to finish together, and one ack call for all of them is far cheaper than several.
     */
    private void collect(List<PendingAck> batch) throws InterruptedException {
        queue.drainTo(batch, MAX_BATCH - batch.size());
        long until = System.nanoTime() + LINGER_NANOS;
        while (batch.size() < MAX_BATCH && !closing) {
            long left = until - System.nanoTime();
            if (left <= 0) {
                return;
            }
            PendingAck next = queue.poll(Math.min(left, QUIET_NANOS), TimeUnit.NANOSECONDS);
            if (next == null) {
                return;
            }
            batch.add(next);
            queue.drainTo(batch, MAX_BATCH - batch.size());
        }
    }

    private void send(List<PendingAck> batch) {
        for (int attempt = 1; attempt <= SEND_TRIES; attempt++) {
            try {
                JsonNode results = protocol.ackBatch(batch);
                counters.ackRequests.incrementAndGet();
                int refused = 0;
                for (int i = 0; i < results.size() && i < batch.size(); i++) {
                    JsonNode err = results.get(i).get("error");
                    if (err != null && !err.isNull()) {
                        Execution ex = batch.get(i).execution;
                        if ("lease_lost".equals(Json.text(err, "code"))) {
                            ex.markLost();
                        }
                        LOG.log(Level.WARNING, "ack of {0} refused: {1}", ex.task, err);
                        refused++;
                    }
                }
                counters.acked.addAndGet(batch.size() - refused);
                return;
            } catch (ApiError e) {
                LOG.log(Level.ERROR, "ack batch of " + batch.size() + " refused: " + e.getMessage());
                return;
            } catch (TransportError e) {
                LOG.log(Level.WARNING, "ack batch of " + batch.size() + " failed (try " + attempt + "): " + e.getMessage());
                if (attempt < SEND_TRIES) {
                    try {
                        Thread.sleep(100L * attempt);
                    } catch (InterruptedException ie) {
                        return;
                    }
                }
            }
        }
        LOG.log(Level.ERROR, "gave up acking " + batch.size() + " tasks; their leases will expire and they will run again");
    }
}
