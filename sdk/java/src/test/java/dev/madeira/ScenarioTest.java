package dev.madeira;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The conformance scenario of sdk/testdata/scenario.md, parameters from scenario.json. */
class ScenarioTest {
    private static final JsonNode SCENARIO = TestData.load("scenario.json");

    private final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
    private final Map<String, Instant> started = new ConcurrentHashMap<>();
    private final AtomicBoolean sleeperSawDeadline = new AtomicBoolean();
    private final AtomicBoolean sleeperFinishedSleeping = new AtomicBoolean();

    private int ran(Task task) {
        started.putIfAbsent(task.taskId(), Instant.now());
        return runs.computeIfAbsent(task.taskId(), k -> new AtomicInteger()).incrementAndGet();
    }

    @Test
    void conformanceScenario() throws Exception {
        JsonNode t = SCENARIO.get("tasks");
        String queue = SCENARIO.get("queue_prefix").asText() + "-" + UUID.randomUUID().toString().substring(0, 8);
        try (MadeiraServer server = MadeiraServer.start()) {
            MadeiraClient client = MadeiraClient.create(server.baseUrl());

            // 1. Produce
            JsonNode ok = t.get("ok");
            List<TaskRequest> oks = new ArrayList<>();
            JsonNode priorities = ok.get("priorities");
            for (int i = 0; i < ok.get("count").asInt(); i++) {
                oks.add(TaskRequest.builder(ok.get("task_type").asText()).queue(queue).payloadVersion(1)
                        .payload(Map.of("i", i)).priority(priorities.get(i % priorities.size()).asInt()).build());
            }
            List<String> okIds = new ArrayList<>();
            for (BatchItem item : client.submitBatch(oks)) {
                okIds.add(item.orThrow().taskId());
            }

            JsonNode delayedSpec = t.get("delayed");
            OffsetDateTime delayedAt = OffsetDateTime.now(ZoneOffset.ofHoursMinutes(5, 30))
                    .plus(Duration.ofMillis(delayedSpec.get("delay_ms").asLong()));
            String delayed = client.submit(TaskRequest.builder(delayedSpec.get("task_type").asText()).queue(queue)
                    .payloadVersion(1).payload(Map.of()).scheduleTime(delayedAt).build()).taskId();
            assertEquals("scheduled", client.get(delayed).status());

            String transient1 = submit(client, queue, t.get("transient_once"));
            String permanent = submit(client, queue, t.get("permanent"));
            JsonNode sleeperSpec = t.get("sleeper");
            String sleeper = client.submit(TaskRequest.builder(sleeperSpec.get("task_type").asText()).queue(queue)
                    .payloadVersion(1).payload(Map.of()).timeoutMs(sleeperSpec.get("timeout_ms").asLong())
                    .maxRetries(sleeperSpec.get("max_retries").asInt()).build()).taskId();
            long sleepMs = sleeperSpec.get("sleeps_ms").asLong();

            // 2. Work
            Map<String, Boolean> okResult = Map.of("ok", true);
            Worker worker = client.worker().queues(queue).slots(SCENARIO.get("slots").asInt())
                    .handle(ok.get("task_type").asText(), (task, ctx) -> {
                        ran(task);
                        return okResult;
                    })
                    .handle(delayedSpec.get("task_type").asText(), (task, ctx) -> {
                        ran(task);
                        return okResult;
                    })
                    .handle(t.get("transient_once").get("task_type").asText(), (task, ctx) -> {
                        if (ran(task) <= t.get("transient_once").get("times").asInt()) {
                            throw new TransientError("blip");
                        }
                        return okResult;
                    })
                    .handle(t.get("permanent").get("task_type").asText(), (task, ctx) -> {
                        ran(task);
                        throw new PermanentError("cannot ever work");
                    })
                    .handle(sleeperSpec.get("task_type").asText(), (task, ctx) -> {
                        ran(task);
                        try {
                            Thread.sleep(sleepMs);
                        } catch (InterruptedException e) {
                            sleeperSawDeadline.set(ctx.isExpired() && ctx.isCancelled());
                            throw e;
                        }
                        sleeperFinishedSleeping.set(true);
                        return okResult;
                    })
                    .build()
                    .start();

            // 3. Wait (bounded) until every task is terminal, then close gracefully
            Set<String> waiting = new HashSet<>(okIds);
            waiting.addAll(List.of(delayed, transient1, permanent, sleeper));
            long giveUp = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (!waiting.isEmpty() && System.nanoTime() < giveUp) {
                waiting.removeIf(id -> client.get(id).isTerminal());
                if (!waiting.isEmpty()) {
                    Thread.sleep(100);
                }
            }
            worker.close(Duration.ofSeconds(5));
            assertTrue(waiting.isEmpty(), "not terminal within 30 s: " + waiting);

            // 4. Assert
            for (String id : okIds) {
                expect(client, id, "succeeded", List.of("succeeded"));
                assertEquals(1, runs.get(id).get(), "ok handler runs for " + id);
                assertEquals(true, client.get(id).result().get("ok").asBoolean());
            }

            expect(client, delayed, "succeeded", List.of("succeeded"));
            Instant scheduleTime = client.get(delayed).scheduleTime();
            assertEquals(delayedAt.toInstant().toEpochMilli(), scheduleTime.toEpochMilli());
            assertFalse(started.get(delayed).isBefore(delayedAt.toInstant()),
                    "delayed started " + started.get(delayed) + " before " + delayedAt);
            assertFalse(client.attempts(delayed).get(0).startedAt().isBefore(scheduleTime.truncatedTo(java.time.temporal.ChronoUnit.MILLIS)));

            List<Attempt> tr = expect(client, transient1, "succeeded", List.of("failed", "succeeded"));
            assertEquals("TransientError", tr.get(0).error().get("type").asText());
            // fast tier: re-queued at once, not after the 30 s back-off
            assertTrue(Duration.between(tr.get(0).finishedAt(), tr.get(1).startedAt()).toMillis() < 5000,
                    "transient retry was not fast: " + tr);

            expect(client, permanent, "dead", List.of("failed"));
            JsonNode lastError = client.get(permanent).lastError();
            assertNotNull(lastError);
            assertEquals("PermanentError", lastError.get("type").asText());
            assertEquals("cannot ever work", lastError.get("message").asText());

            expect(client, sleeper, "dead", List.of("lease_expired"));
            assertTrue(sleeperSawDeadline.get(), "sleeper was not interrupted at its deadline");
            assertFalse(sleeperFinishedSleeping.get(), "sleeper slept through its deadline");
            assertNull(client.get(sleeper).result());

            Map<String, Integer> twice = runs.entrySet().stream().filter(e -> e.getValue().get() > 1)
                    .collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().get()));
            assertEquals(Map.of(transient1, 2), twice, "handlers that ran more than once");
        }
    }

    private static void assertNull(Object o) {
        org.junit.jupiter.api.Assertions.assertNull(o);
    }

    private static String submit(MadeiraClient client, String queue, JsonNode spec) {
        return client.submit(TaskRequest.builder(spec.get("task_type").asText()).queue(queue).payloadVersion(1)
                .payload(Map.of()).build()).taskId();
    }

    private static List<Attempt> expect(MadeiraClient client, String id, String status, List<String> outcomes) {
        TaskInfo info = client.get(id);
        assertEquals(status, info.status(), id + " " + info);
        assertEquals(outcomes.size(), info.attempts(), id + " attempts");
        List<Attempt> attempts = client.attempts(id);
        assertEquals(outcomes, attempts.stream().map(Attempt::outcome).collect(Collectors.toList()), id + " outcomes");
        return attempts;
    }
}
