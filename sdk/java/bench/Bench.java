import dev.madeira.BatchItem;
import dev.madeira.MadeiraClient;
import dev.madeira.TaskRequest;
import dev.madeira.Worker;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * No-op throughput: start madeira, preload N tasks with batched submits, drain them with one
 * worker of 64 slots, print "drained N tasks in S s = R tasks/s". Completion is read from the
 * server's own madeira_queue_depth{state="succeeded"} gauge, not from the worker.
 *
 * The drain is timed after a warm-up drain of BENCH_WARMUP tasks (default 20000) so that the
 * JIT compiler is not counted; also printed: CPU per task of this JVM and of the server.
 *
 * Usage: bench/run.sh [N] [slots]   (or java -cp CLASSPATH Bench [N] [slots])
 */
public class Bench {
    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
        int slots = args.length > 1 ? Integer.parseInt(args[1]) : 64;
        String bin = System.getenv().getOrDefault("MADEIRA_BIN", "../../build/madeira");
        Path dir = Files.createTempDirectory("madeira-bench-");
        Process server = new ProcessBuilder(bin, "serve", "--listen", "127.0.0.1:0", "--data-dir", dir.resolve("data").toString())
                .redirectError(ProcessBuilder.Redirect.DISCARD).start();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(server.getInputStream()));
            Matcher m = Pattern.compile("listening on (\\S+):(\\d+)").matcher(String.valueOf(out.readLine()));
            if (!m.find()) {
                throw new IllegalStateException("madeira did not start");
            }
            String base = "http://" + m.group(1) + ":" + m.group(2);
            awaitHealthy(base);
            MadeiraClient client = MadeiraClient.create(base);
            int warm = Integer.parseInt(System.getenv().getOrDefault("BENCH_WARMUP", "20000"));
            if (warm > 0) {
                Result w = drain(client, base, warm, slots, server.pid());
                System.out.printf("warm-up: drained %d tasks in %.2f s = %.0f tasks/s%n", warm, w.secs, warm / w.secs);
            }
            Result r = drain(client, base, n, slots, server.pid());
            System.out.println(r.stats);
            System.out.printf("drained %d tasks in %.2f s = %.0f tasks/s%n", n, r.secs, n / r.secs);
            System.out.printf("cpu per task: worker %.1f us, server %.1f us (load average %s)%n", r.clientUs, r.serverUs,
                    Files.readString(Path.of("/proc/loadavg")).split(" ")[0]);
        } finally {
            server.destroy();
            if (!server.waitFor(10, TimeUnit.SECONDS)) {
                server.destroyForcibly();
                server.waitFor(5, TimeUnit.SECONDS);
            }
            try (var files = Files.walk(dir)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
    }

    private static final class Result {
        double secs;
        double clientUs;
        double serverUs;
        Object stats;
    }

    /** Preloads n tasks into a fresh queue, then drains them with one worker; times the drain only. */
    private static Result drain(MadeiraClient client, String base, int n, int slots, long serverPid) throws Exception {
        String queue = "bench-" + UUID.randomUUID().toString().substring(0, 8);
        List<TaskRequest> batch = new ArrayList<>(1000);
        for (int i = 0; i < n; i++) {
            batch.add(TaskRequest.builder("bench.noop").queue(queue).payloadVersion(1).payload(Map.of("i", i)).build());
            if (batch.size() == 1000 || i == n - 1) {
                for (BatchItem item : client.submitBatch(batch)) {
                    item.orThrow();
                }
                batch.clear();
            }
        }
        Worker worker = client.worker().queues(queue).slots(slots).handle("bench.noop", (task, ctx) -> null).build();
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        Pattern done = Pattern.compile("madeira_queue_depth\\{queue=\"" + queue + "\",state=\"succeeded\"\\} (\\d+)");
        long cpu0 = ownCpuNanos();
        long srv0 = processCpuNanos(serverPid);
        System.out.println("draining " + n + " tasks");
        long start = System.nanoTime();
        worker.start();
        long deadline = start + TimeUnit.SECONDS.toNanos(300);
        long succeeded = 0;
        while (succeeded < n && System.nanoTime() < deadline) {
            Thread.sleep(20);
            String metrics = http.send(HttpRequest.newBuilder(URI.create(base + "/metrics")).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
            Matcher dm = done.matcher(metrics);
            succeeded = dm.find() ? Long.parseLong(dm.group(1)) : 0;
        }
        Result r = new Result();
        r.secs = (System.nanoTime() - start) / 1e9;
        r.clientUs = (ownCpuNanos() - cpu0) / 1e3 / n;
        r.serverUs = (processCpuNanos(serverPid) - srv0) / 1e3 / n;
        worker.close(Duration.ofSeconds(5));
        r.stats = worker.stats();
        if (succeeded < n) {
            throw new IllegalStateException("only " + succeeded + " of " + n + " tasks succeeded within 300 s");
        }
        return r;
    }

    private static long ownCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory
                .getOperatingSystemMXBean()).getProcessCpuTime();
    }

    /** utime + stime of a process from /proc, in ns (Linux). */
    private static long processCpuNanos(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * 10_000_000L; // clock ticks of 10 ms
        } catch (Exception e) {
            return 0;
        }
    }

    private static void awaitHealthy(String base) throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        for (int i = 0; i < 100; i++) {
            try {
                if (http.send(HttpRequest.newBuilder(URI.create(base + "/healthz")).build(),
                        HttpResponse.BodyHandlers.discarding()).statusCode() == 200) {
                    return;
                }
            } catch (java.io.IOException e) {
                // not yet
            }
            Thread.sleep(50);
        }
        throw new IllegalStateException("madeira never became healthy");
    }
}
