package dev.madeira;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Worker behaviour against a real server: close, version routing, lease extension. */
class WorkerTest extends LiveServerTest {
    private static String submit(String queue, String type, int version, long timeoutMs) {
        return client.submit(TaskRequest.builder(type).queue(queue).payloadVersion(version).payload(Map.of())
                .timeoutMs(timeoutMs).build()).taskId();
    }

    private static TaskInfo awaitStatus(String id, String status) throws InterruptedException {
        TaskInfo info = client.get(id);
        for (int i = 0; i < 100 && !status.equals(info.status()); i++) {
            Thread.sleep(50);
            info = client.get(id);
        }
        assertEquals(status, info.status(), info.toString());
        return info;
    }

    @Test
    void readmeQuickStart() throws Exception {
        MadeiraClient client = MadeiraClient.builder(server.baseUrl()).build();
        String id = client.submit(TaskRequest.builder("order.close_timeout").queue("orders").payloadVersion(1)
                .payload(Map.of("order_id", 202509110001L)).scheduleTime(java.time.ZonedDateTime.now().plusNanos(1))
                .idempotencyKey("order.close:202509110001").build()).taskId();

        Worker worker = client.worker().queues("orders").slots(8)
                .handle("order.close_timeout", List.of(1, 2), (task, ctx) -> Map.of("closed", true))
                .build().start()
                .closeOnShutdown(Duration.ofSeconds(20));
        try {
            assertTrue(awaitStatus(id, "succeeded").result().get("closed").asBoolean());
        } finally {
            worker.close(Duration.ofSeconds(5));
        }
        assertEquals(1, worker.stats().acked());
    }

    @Test
    void deadlineCountsFromWhenTheTaskWasLeasedNotWhenThePollBegan() throws Exception {
        String q = queue("worker");
        java.util.concurrent.atomic.AtomicLong remainingMs = new java.util.concurrent.atomic.AtomicLong(-1);
        Worker worker = client.worker().queues(q).slots(1).waitMs(5000).handle("worker.latecomer", (task, ctx) -> {
            remainingMs.set(ctx.remaining().toMillis());
            return null;
        }).build().start();
        try {
            Thread.sleep(1200); // the worker's long poll is waiting on an empty queue
            String id = submit(q, "worker.latecomer", 1, 1000);
            awaitStatus(id, "succeeded");
        } finally {
            worker.close(Duration.ofSeconds(5));
        }
        assertTrue(remainingMs.get() > 500, "remaining at start: " + remainingMs.get() + " ms");
    }

    @Test
    void closeWaitsForRunningHandlersWithinGrace() throws Exception {
        String q = queue("worker");
        String id = submit(q, "worker.slow", 1, 10_000);
        CountDownLatch running = new CountDownLatch(1);
        Worker worker = client.worker().queues(q).slots(2).handle("worker.slow", (task, ctx) -> {
            running.countDown();
            Thread.sleep(300);
            return Map.of("done", true);
        }).build().start();
        assertTrue(running.await(10, TimeUnit.SECONDS));
        worker.close(Duration.ofSeconds(5));
        TaskInfo info = client.get(id);
        assertEquals("succeeded", info.status());
        assertTrue(info.result().get("done").asBoolean());
    }

    @Test
    void closeHandsBackWhatOutlivesTheGraceWithFastRetry() throws Exception {
        String q = queue("worker");
        String id = submit(q, "worker.stuck", 1, 60_000);
        CountDownLatch running = new CountDownLatch(1);
        AtomicBoolean interrupted = new AtomicBoolean();
        AtomicBoolean abandoned = new AtomicBoolean();
        Worker worker = client.worker().queues(q).slots(1).handle("worker.stuck", (task, ctx) -> {
            running.countDown();
            try {
                Thread.sleep(30_000);
            } catch (InterruptedException e) {
                interrupted.set(true);
                abandoned.set(ctx.isAbandoned() && ctx.isCancelled());
                throw e;
            }
            return null;
        }).build().start();
        assertTrue(running.await(10, TimeUnit.SECONDS));
        worker.close(Duration.ofMillis(200));
        assertTrue(interrupted.get());
        assertTrue(abandoned.get());
        TaskInfo info = awaitStatus(id, "pending");
        assertEquals(1, info.retryCount());
        List<Attempt> attempts = client.attempts(id);
        assertEquals("failed", attempts.get(0).outcome());
        assertEquals("WorkerClosing", attempts.get(0).error().get("type").asText());
        client.cancel(id);
    }

    @Test
    void onlyRegisteredPayloadVersionsAreLeased() throws Exception {
        String q = queue("worker");
        String v1 = submit(q, "worker.versioned", 1, 5000);
        String v2 = submit(q, "worker.versioned", 2, 5000);
        String v3 = submit(q, "worker.versioned", 3, 5000);
        AtomicInteger seenNewer = new AtomicInteger();
        Worker worker = client.worker().queues(q).slots(4).handle("worker.versioned", List.of(1, 3), (task, ctx) -> {
            if (task.payloadVersion() == 2) {
                seenNewer.incrementAndGet();
            }
            return null;
        }).build().start();
        try {
            awaitStatus(v1, "succeeded");
            awaitStatus(v3, "succeeded");
        } finally {
            worker.close(Duration.ofSeconds(5));
        }
        assertEquals(0, seenNewer.get());
        assertEquals("pending", client.get(v2).status());
        client.cancel(v2);
    }

    @Test
    void leaseIsExtendedWhileTheHandlerRuns() throws Exception {
        String q = queue("worker");
        String id = submit(q, "worker.long", 1, 10_000);
        AtomicBoolean lost = new AtomicBoolean();
        // a 300 ms lease would expire during a 1.2 s handler unless it is extended every 100 ms
        Worker worker = client.worker().queues(q).slots(1).leaseMs(300).handle("worker.long", (task, ctx) -> {
            Thread.sleep(1200);
            lost.set(ctx.isLost());
            return Map.of("long", true);
        }).build().start();
        try {
            awaitStatus(id, "succeeded");
        } finally {
            worker.close(Duration.ofSeconds(5));
        }
        assertEquals(false, lost.get());
        assertEquals(1, client.attempts(id).size());
    }

    @Test
    void ordinaryExceptionsTakeTheBackOffTier() throws Exception {
        String q = queue("worker");
        String id = submit(q, "worker.broken", 1, 5000);
        Worker worker = client.worker().queues(q).slots(1).handle("worker.broken", (task, ctx) -> {
            throw new IllegalStateException("boom");
        }).build().start();
        try {
            TaskInfo info = awaitStatus(id, "retrying");
            assertEquals("IllegalStateException", info.lastError().get("type").asText());
            assertEquals("boom", info.lastError().get("message").asText());
            assertTrue(info.lastError().get("stack").asText().contains("WorkerTest"));
        } finally {
            worker.close(Duration.ofSeconds(5));
        }
        client.cancel(id);
    }
}
