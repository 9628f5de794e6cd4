package example;

import dev.madeira.MadeiraClient;
import dev.madeira.PermanentError;
import dev.madeira.Worker;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Java worker for order.close_timeout (payload version 1).
 *
 * <p>Closing an order = appending "&lt;order_id&gt; java &lt;task_id&gt; &lt;unix_ms&gt;" to the
 * shared ledger (the stand-in for the orders database). Environment: MADEIRA_URL, LEDGER,
 * MADEIRA_TOKEN (optional), WORK_MS (simulated work, default 100).
 */
public final class OrderCloseWorker {
    public static void main(String[] args) throws Exception {
        String url = System.getenv().getOrDefault("MADEIRA_URL", "http://127.0.0.1:8080");
        Path ledger = Path.of(System.getenv().getOrDefault("LEDGER", "ledger.txt"));
        long workMs = Long.parseLong(System.getenv().getOrDefault("WORK_MS", "100"));
        String token = System.getenv("MADEIRA_TOKEN");
        AtomicInteger closed = new AtomicInteger();

        MadeiraClient.Builder cb = MadeiraClient.builder(url);
        if (token != null && !token.isEmpty()) {
            cb.token(token);
        }
        MadeiraClient client = cb.build();
        String workerId = "java-" + ProcessHandle.current().pid();

        Worker worker = client.worker().workerId(workerId).queues("orders").slots(4)
                .handle("order.close_timeout", List.of(1), (task, ctx) -> {
                    if (!task.payload().path("order_id").canConvertToLong()) {
                        throw new PermanentError("bad order_id " + task.payload().path("order_id"));
                    }
                    long orderId = task.payload().get("order_id").asLong();
                    // the "is it still unpaid? then close it" round trip to the order database
                    Thread.sleep((long) (workMs * ThreadLocalRandom.current().nextDouble(0.5, 1.5)));
                    String line = orderId + " java " + task.taskId() + " " + System.currentTimeMillis() + "\n";
                    // APPEND = O_APPEND: one short write per line
                    Files.write(ledger, line.getBytes(StandardCharsets.UTF_8),
                            StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND);
                    closed.incrementAndGet();
                    return Map.of("closed", true, "order_id", orderId, "by", "java");
                })
                .build().start();
        // SIGTERM/SIGINT: stop leasing, let running handlers finish (20 s grace), hand back the rest
        // (what worker.closeOnShutdown(grace) does, plus a last line for the demo)
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            worker.close(Duration.ofSeconds(20));
            System.out.println("worker-java: stopped after closing " + closed.get() + " orders");
        }, "shutdown"));
        System.out.println("worker-java: ready (" + workerId + ")");
        worker.awaitClosed();
    }
}
