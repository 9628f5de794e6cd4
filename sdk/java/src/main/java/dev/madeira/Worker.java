package dev.madeira;

import com.fasterxml.jackson.databind.JsonNode;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Runs handlers for leased tasks on N slots (threads). One thread long-polls
 * {@code POST /v1/leases} for as many tasks as there are free slots; each task runs with its
 * deadline (start + {@code timeout_ms}), its lease extended every {@code lease_ms / 3}; results
 * are acked in batches; failures are reported with the retry tier their error class asks for.
 * At the deadline the handler's thread is interrupted and its late result is not acked.
 *
 * <pre>{@code
 * Worker worker = client.worker().queues("orders").slots(8)
 *     .handle("order.close_timeout", (task, ctx) -> Map.of("closed", true))
 *     .build();
 * worker.start();
 * worker.closeOnShutdown(Duration.ofSeconds(20)); // SIGTERM: graceful close
 * }</pre>
 */
public final class Worker implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("dev.madeira.Worker");
    private static final int MAX_LEASE = 100;
    private static final Duration DEFAULT_GRACE = Duration.ofSeconds(30);
    private static final long LEASE_LINGER_NANOS = TimeUnit.MILLISECONDS.toNanos(2);

    private final String workerId;
    private final int slots;
    private final Map<String, Registration> handlers;
    private final WorkerProtocol protocol;
    private final Long leaseMs;
    private final Semaphore free;
    private final SlotPool slotPool;
    private final Map<String, Execution> inFlight = new ConcurrentHashMap<>();
    private final AtomicInteger busy = new AtomicInteger();
    private final Counters counters = new Counters();
    private final AckBatcher acks;
    private final LeaseKeeper keeper;
    private final Thread poller;
    private final AtomicBoolean started = new AtomicBoolean();
    private final AtomicBoolean closing = new AtomicBoolean();
    private final CountDownLatch closed = new CountDownLatch(1);
    private volatile boolean leasing = true;

    private Worker(Builder b) {
        if (b.handlers.isEmpty()) {
            throw new IllegalArgumentException("register at least one handler");
        }
        this.workerId = b.workerId != null ? b.workerId : defaultWorkerId();
        this.slots = b.slots;
        this.handlers = new LinkedHashMap<>(b.handlers);
        Map<String, List<Integer>> taskTypes = new LinkedHashMap<>();
        handlers.forEach((type, reg) -> taskTypes.put(type, reg.versions));
        this.leaseMs = b.leaseMs;
        this.protocol = new WorkerProtocol(b.client.transport(), workerId, List.copyOf(b.queues), taskTypes,
                b.waitMs, b.leaseMs);
        this.free = new Semaphore(slots);
        this.slotPool = new SlotPool(slots, "madeira-slot-" + workerId);
        this.acks = new AckBatcher(protocol, counters, workerId);
        this.keeper = new LeaseKeeper(protocol, counters, inFlight.values(), b.heartbeatEvery.toMillis(), slots, busy::get, workerId);
        this.poller = new Thread(this::pollLoop, "madeira-poller-" + workerId);
    }

    public static Builder builder(MadeiraClient client) {
        return new Builder(client);
    }

    public String workerId() {
        return workerId;
    }

    /** Handlers running right now. */
    public int busySlots() {
        return busy.get();
    }

    /** Counters since start: lease and ack calls, tasks leased, acked, failed, expired. */
    public WorkerStats stats() {
        return counters.snapshot();
    }

    /** Starts leasing in the background; returns at once. */
    public Worker start() {
        if (!started.compareAndSet(false, true)) {
            throw new IllegalStateException("worker already started");
        }
        slotPool.start();
        acks.start();
        keeper.start();
        poller.start();
        return this;
    }

    /** Closes the worker gracefully ({@link #close(Duration)}) when the JVM gets SIGTERM/SIGINT. */
    public Worker closeOnShutdown(Duration grace) {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> close(grace), "madeira-shutdown-" + workerId));
        return this;
    }

    /** Blocks until the worker is closed (by another thread or the shutdown hook). */
    public void awaitClosed() throws InterruptedException {
        closed.await();
    }

    @Override
    public void close() {
        close(DEFAULT_GRACE);
    }

    /**
     * Graceful close: stop leasing, let running handlers finish within {@code grace}, then hand
     * the rest back with {@code "retry": "fast"} (their handlers are interrupted), send the last
     * acks and stop. Calling it again waits for the first call.
     */
    public void close(Duration grace) {
        if (!closing.compareAndSet(false, true)) {
            awaitQuietly();
            return;
        }
        try {
            leasing = false;
            if (started.get()) {
                poller.interrupt();
                poller.join(5000);
            }
            slotPool.shutdown();
            if (!slotPool.awaitTermination(grace.toMillis(), TimeUnit.MILLISECONDS)) {
                handBack();
                slotPool.shutdownNow();
                slotPool.awaitTermination(2, TimeUnit.SECONDS);
            }
            if (started.get()) {
                acks.close(10_000);
                keeper.stop();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            closed.countDown();
        }
    }

    private void awaitQuietly() {
        try {
            closed.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void handBack() {
        for (Execution ex : inFlight.values()) {
            if (ex.abandon()) {
                failQuietly(ex, new WorkerClosing("worker " + workerId + " closed before the task finished"), "fast");
            }
        }
    }

    private void pollLoop() {
        long backoffMs = 0;
        while (leasing) {
            int n;
            try {
                free.acquire();
            } catch (InterruptedException e) {
                break;
            }
            n = 1 + free.drainPermits();
            n += lingerForSlots(n);
            if (n > MAX_LEASE) {
                free.release(n - MAX_LEASE);
                n = MAX_LEASE;
            }
            Instant asked = Instant.now();
            JsonNode leases;
            try {
                leases = protocol.lease(n);
                backoffMs = 0;
                counters.leaseRequests.incrementAndGet();
                counters.leased.addAndGet(leases.size());
            } catch (MadeiraException e) {
                free.release(n);
                if (!leasing) {
                    break;
                }
                backoffMs = Math.min(5000, Math.max(100, backoffMs * 2));
                LOG.log(Level.WARNING, "leasing failed, retrying in " + backoffMs + " ms: " + e.getMessage());
                try {
                    Thread.sleep(backoffMs);
                } catch (InterruptedException ie) {
                    break;
                }
                continue;
            }
            free.release(Math.max(0, n - leases.size()));
            long receivedNanos = System.nanoTime();
            Instant received = Instant.now();
            for (JsonNode lease : leases) {
                if (leasing) {
                    dispatch(lease, asked, received, receivedNanos);
                } else {
                    refuse(lease);
                }
            }
        }
    }

    /**
     * With handlers still running, waits up to {@link #LEASE_LINGER_NANOS} for more slots to
     * free up, so that one lease call fetches many tasks rather than many calls one each
     * (quick handlers finish together). Returns the extra slots taken.
     */
    private int lingerForSlots(int have) {
        int want = Math.min(slots, MAX_LEASE);
        int extra = 0;
        long until = System.nanoTime() + LEASE_LINGER_NANOS;
        try {
            while (have + extra < want && !inFlight.isEmpty()) {
                long left = until - System.nanoTime();
                if (left <= 0 || !free.tryAcquire(left, TimeUnit.NANOSECONDS)) {
                    break;
                }
                extra += 1 + free.drainPermits();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // close(): the lease call below fails and the loop ends
        }
        return extra;
    }

    private void dispatch(JsonNode lease, Instant asked, Instant received, long receivedNanos) {
        Task task = new Task(lease.path("task"));
        long leaseFor = leaseMs != null ? Math.min(leaseMs, task.timeoutMs()) : task.timeoutMs();
        Instant start = attemptStart(lease, leaseFor, asked, received);
        long startNanos = receivedNanos - Duration.between(start, received).toNanos();
        Execution ex = new Execution(Json.text(lease, "lease_id"), task, startNanos, start, leaseFor);
        inFlight.put(ex.leaseId, ex);
        slotPool.execute(() -> run(ex));
    }

    /**
     * When the server began the attempt: its lease {@code deadline} minus the lease length, if
     * that falls within the lease call (the clocks agree); else when the answer arrived. A long
     * poll may wait seconds before a task is ready, so the call's start would be too early.
     */
    static Instant attemptStart(JsonNode lease, long leaseFor, Instant asked, Instant received) {
        String deadline = Json.text(lease, "deadline");
        if (deadline != null) {
            try {
                Instant began = Rfc3339.parse("deadline", deadline).minusMillis(leaseFor);
                if (!began.isBefore(asked.minusSeconds(1)) && !began.isAfter(received)) {
                    return began;
                }
            } catch (ValidationError e) {
                // not a time: fall back to the local clock
            }
        }
        return received;
    }

    /** A lease that arrived after close began: hand it straight back. */
    private void refuse(JsonNode lease) {
        Task task = new Task(lease.path("task"));
        Execution ex = new Execution(Json.text(lease, "lease_id"), task, System.nanoTime(), Instant.now(), task.timeoutMs());
        ex.abandon();
        failQuietly(ex, new WorkerClosing("worker " + workerId + " is closing"), "fast");
        free.release();
    }

    private void run(Execution ex) {
        busy.incrementAndGet();
        try {
            if (!ex.begin()) {
                return;
            }
            Object result = null;
            Throwable error = null;
            try {
                result = handle(ex);
            } catch (Throwable t) {
                error = t;
            }
            JsonNode encoded = null;
            if (error == null && result != null) {
                try {
                    encoded = Json.tree(result);
                } catch (IllegalArgumentException e) {
                    error = e;
                }
            }
            if (!ex.finish()) {
                return; // expired or handed back: the server owns the outcome now
            }
            if (error == null) {
                if (!ex.isLost()) {
                    acks.add(ex, encoded);
                }
            } else {
                failQuietly(ex, error, retryFor(error));
            }
        } finally {
            inFlight.remove(ex.leaseId);
            busy.decrementAndGet();
            free.release();
        }
    }

    private Object handle(Execution ex) throws Exception {
        Registration reg = handlers.get(ex.task.taskType());
        if (reg == null || !reg.versions.contains(ex.task.payloadVersion())) {
            throw new IllegalStateException("no handler for " + ex.task.taskType() + " v" + ex.task.payloadVersion());
        }
        return reg.handler.handle(ex.task, ex);
    }

    /** PermanentError: never; TransientError: fast; anything else: the task type's back-off. */
    static String retryFor(Throwable error) {
        if (error instanceof PermanentError) {
            return "never";
        }
        if (error instanceof TransientError || error instanceof WorkerClosing) {
            return "fast";
        }
        return "auto";
    }

    private void failQuietly(Execution ex, Throwable error, String retry) {
        try {
            protocol.fail(ex.leaseId, error, retry);
            counters.failed.incrementAndGet();
        } catch (ApiError e) {
            if ("lease_lost".equals(e.code())) {
                ex.markLost();
            }
            LOG.log(Level.WARNING, "failing {0} refused: {1}", ex.task, e.getMessage());
        } catch (TransportError e) {
            LOG.log(Level.WARNING, "failing {0} not sent; its lease will expire: {1}", ex.task, e.getMessage());
        }
    }

    private static String defaultWorkerId() {
        String host;
        try {
            host = java.net.InetAddress.getLocalHost().getHostName();
        } catch (java.io.IOException e) {
            host = "host";
        }
        return "java-" + host + "-" + ProcessHandle.current().pid() + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    /** Reported as the error of tasks a closing worker hands back. */
    static final class WorkerClosing extends RuntimeException {
        WorkerClosing(String message) {
            super(message);
        }
    }

    private static final class Registration {
        final List<Integer> versions;
        final Handler handler;

        Registration(List<Integer> versions, Handler handler) {
            this.versions = versions;
            this.handler = handler;
        }
    }

    public static final class Builder {
        private final MadeiraClient client;
        private final Map<String, Registration> handlers = new LinkedHashMap<>();
        private List<String> queues = List.of("default");
        private int slots = 10;
        private int waitMs = 5000;
        private Long leaseMs;
        private Duration heartbeatEvery = Duration.ofSeconds(5);
        private String workerId;

        private Builder(MadeiraClient client) {
            this.client = client;
        }

        public Builder workerId(String workerId) {
            this.workerId = workerId;
            return this;
        }

        public Builder queues(String... queues) {
            if (queues.length == 0) {
                throw new IllegalArgumentException("at least one queue");
            }
            this.queues = Arrays.asList(queues.clone());
            return this;
        }

        /** Handlers that may run at once (threads); at most 100 tasks are leased per request. */
        public Builder slots(int slots) {
            if (slots < 1) {
                throw new IllegalArgumentException("slots must be >= 1");
            }
            this.slots = slots;
            return this;
        }

        /** How long one lease request waits for work (0..30000, default 5000). */
        public Builder waitMs(int waitMs) {
            if (waitMs < 0 || waitMs > 30_000) {
                throw new IllegalArgumentException("wait_ms must be 0..30000");
            }
            this.waitMs = waitMs;
            return this;
        }

        /** Lease length to ask for; default (unset) is each task's {@code timeout_ms}. */
        public Builder leaseMs(long leaseMs) {
            this.leaseMs = leaseMs;
            return this;
        }

        /** How often to heartbeat (at most 10 s, default 5 s). */
        public Builder heartbeatEvery(Duration every) {
            if (every.compareTo(Duration.ofSeconds(10)) > 0) {
                throw new IllegalArgumentException("heartbeat at least every 10 s");
            }
            this.heartbeatEvery = every;
            return this;
        }

        /** Handles payload version 1 of {@code taskType}. */
        public Builder handle(String taskType, Handler handler) {
            return handle(taskType, List.of(1), handler);
        }

        /** Handles the given payload versions of {@code taskType}; only those are leased to this worker. */
        public Builder handle(String taskType, List<Integer> versions, Handler handler) {
            EnvelopeRules.taskType(taskType);
            if (versions.isEmpty()) {
                throw new IllegalArgumentException("at least one payload version");
            }
            for (Integer v : versions) {
                EnvelopeRules.payloadVersion(v);
            }
            handlers.put(taskType, new Registration(List.copyOf(new ArrayList<>(versions)), handler));
            return this;
        }

        public Worker build() {
            return new Worker(this);
        }
    }
}
