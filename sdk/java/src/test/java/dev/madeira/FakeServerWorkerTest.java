package dev.madeira;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/** Worker reactions the real server does not produce on demand: a lease lost while running. */
class FakeServerWorkerTest {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    @Test
    void leaseLostOnExtendTellsTheHandlerAndItsResultIsNotAcked() throws Exception {
        List<String> calls = new CopyOnWriteArrayList<>();
        List<JsonNode> heartbeats = new CopyOnWriteArrayList<>();
        AtomicBoolean leased = new AtomicBoolean();
        HttpServer fake = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        fake.createContext("/", ex -> {
            String path = ex.getRequestURI().getPath();
            JsonNode body = MAPPER.readTree(ex.getRequestBody().readAllBytes());
            calls.add(path);
            if (path.equals("/v1/leases")) {
                if (leased.compareAndSet(false, true)) {
                    reply(ex, 200, "{\"leases\":[{\"lease_id\":\"L1\",\"deadline\":\"2030-01-01T00:00:00.000Z\","
                            + "\"fencing_token\":1,\"task\":{\"task_id\":\"T1\",\"task_type\":\"fake.task\",\"queue\":\"q\","
                            + "\"payload_version\":1,\"payload\":{},\"timeout_ms\":600,\"max_retries\":0,"
                            + "\"retry_count\":0,\"priority\":100,\"trace_id\":\"x\",\"attempt\":1}}]}");
                } else {
                    reply(ex, 200, "{\"leases\":[]}");
                }
            } else if (path.endsWith("/extend")) {
                reply(ex, 409, "{\"error\":{\"code\":\"lease_lost\",\"message\":\"lease expired or superseded\"}}");
            } else if (path.equals("/v1/workers/heartbeat")) {
                heartbeats.add(body);
                reply(ex, 200, "{}");
            } else {
                reply(ex, 200, "{\"results\":[]}");
            }
        });
        fake.start();
        try {
            MadeiraClient client = MadeiraClient.create("http://127.0.0.1:" + fake.getAddress().getPort());
            CountDownLatch sawLost = new CountDownLatch(1);
            Worker worker = client.worker().workerId("fake-worker").queues("q").slots(1).waitMs(50)
                    .handle("fake.task", (task, ctx) -> {
                        for (int i = 0; i < 100 && !ctx.isLost(); i++) {
                            Thread.sleep(10);
                        }
                        if (ctx.isLost() && ctx.isCancelled() && !ctx.isExpired()) {
                            sawLost.countDown();
                        }
                        return "late";
                    }).build().start();
            assertTrue(sawLost.await(5, TimeUnit.SECONDS), "handler never learnt the lease was lost: " + calls);
            worker.close(Duration.ofSeconds(2));
            assertTrue(calls.stream().noneMatch(p -> p.contains("/ack") || p.contains("/fail")), calls.toString());
            assertTrue(calls.contains("/v1/leases/L1/extend"), calls.toString());
            JsonNode hb = heartbeats.get(0);
            assertEquals("fake-worker", hb.get("worker_id").asText());
            assertEquals("java", hb.get("language").asText());
            assertEquals(Version.SDK_VERSION, hb.get("sdk_version").asText());
            assertEquals("q", hb.get("queues").get(0).asText());
        } finally {
            fake.stop(0);
        }
    }

    @Test
    void leaseLostAnsweredPastTheDeadlineIsTheDeadlineNotALostLease() throws Exception {
        CountDownLatch answered = new CountDownLatch(1);
        AtomicBoolean leased = new AtomicBoolean();
        HttpServer fake = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        fake.setExecutor(Executors.newCachedThreadPool()); // the slow extend must not hold up leases
        fake.createContext("/", ex -> {
            String path = ex.getRequestURI().getPath();
            ex.getRequestBody().readAllBytes();
            if (path.equals("/v1/leases") && leased.compareAndSet(false, true)) {
                reply(ex, 200, "{\"leases\":[{\"lease_id\":\"L1\",\"deadline\":\"2030-01-01T00:00:00.000Z\","
                        + "\"fencing_token\":1,\"task\":{\"task_id\":\"T1\",\"task_type\":\"fake.task\",\"queue\":\"q\","
                        + "\"payload_version\":1,\"payload\":{},\"timeout_ms\":300,\"max_retries\":0,"
                        + "\"retry_count\":0,\"priority\":100,\"trace_id\":\"x\",\"attempt\":1}}]}");
            } else if (path.equals("/v1/leases")) {
                reply(ex, 200, "{\"leases\":[]}");
            } else if (path.endsWith("/extend")) {
                // Slow to answer: lease_lost comes back after the 300 ms deadline, as when the
                // server expired the lease while the extend was on its way.
                try {
                    Thread.sleep(450);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                reply(ex, 409, "{\"error\":{\"code\":\"lease_lost\",\"message\":\"lease expired\"}}");
                answered.countDown();
            } else {
                reply(ex, 200, path.equals("/v1/leases/ack") ? "{\"results\":[]}" : "{}");
            }
        });
        fake.start();
        try {
            MadeiraClient client = MadeiraClient.create("http://127.0.0.1:" + fake.getAddress().getPort());
            AtomicBoolean expired = new AtomicBoolean();
            AtomicBoolean lost = new AtomicBoolean(true);
            CountDownLatch judged = new CountDownLatch(1);
            Worker worker = client.worker().workerId("fake-worker").queues("q").slots(1).waitMs(50)
                    .handle("fake.task", (task, ctx) -> {
                        try {
                            Thread.sleep(5000);
                        } catch (InterruptedException e) {
                            // the deadline's interrupt (once): go on to the verdict
                        }
                        answered.await(5, TimeUnit.SECONDS);
                        // The answer is handled on the HTTP client's thread: give it its turn.
                        for (int i = 0; i < 30 && !ctx.isLost(); i++) {
                            Thread.sleep(10);
                        }
                        expired.set(ctx.isExpired());
                        lost.set(ctx.isLost());
                        judged.countDown();
                        return "late";
                    }).build().start();
            assertTrue(judged.await(5, TimeUnit.SECONDS), "the handler never finished");
            worker.close(Duration.ofSeconds(2));
            assertTrue(expired.get(), "the deadline should have ended the attempt");
            assertEquals(false, lost.get(), "a lease_lost answered past the deadline is the deadline's doing");
        } finally {
            fake.stop(0);
        }
    }

    private static void reply(HttpExchange ex, int status, String json) throws IOException {
        byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().add("Content-Type", "application/json");
        ex.sendResponseHeaders(status, bytes.length);
        ex.getResponseBody().write(bytes);
        ex.close();
    }
}
