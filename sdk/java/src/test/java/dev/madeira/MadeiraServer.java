package dev.madeira;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/** A real {@code madeira serve} on a loopback port with a fresh data dir, for one test class. */
final class MadeiraServer implements AutoCloseable {
    private static final Pattern LISTENING = Pattern.compile("listening on (\\S+):(\\d+)");

    private final Process process;
    private final Path dataDir;
    private final String baseUrl;

    private MadeiraServer(Process process, Path dataDir, String baseUrl) {
        this.process = process;
        this.dataDir = dataDir;
        this.baseUrl = baseUrl;
    }

    static Path binary() {
        String env = System.getenv("MADEIRA_BIN");
        if (env != null && !env.isEmpty()) {
            return Path.of(env);
        }
        String repo = System.getProperty("madeira.repo", "../..");
        return Path.of(repo, "build", "madeira");
    }

    static MadeiraServer start() throws Exception {
        return start(null);
    }

    /** Starts the server; {@code configToml}, when given, is passed with {@code --config}. */
    static MadeiraServer start(String configToml) throws Exception {
        Path bin = binary();
        if (!Files.isExecutable(bin)) {
            throw new IllegalStateException("madeira binary not found at " + bin + " (set MADEIRA_BIN)");
        }
        Path dir = Files.createTempDirectory("madeira-java-");
        List<String> cmd = new ArrayList<>(List.of(bin.toString(), "serve", "--listen", "127.0.0.1:0",
                "--data-dir", dir.resolve("data").toString()));
        if (configToml != null) {
            Path config = dir.resolve("madeira.toml");
            Files.writeString(config, configToml);
            cmd.add("--config");
            cmd.add(config.toString());
        }
        Process p = new ProcessBuilder(cmd)
                .redirectError(dir.resolve("stderr.log").toFile())
                .start();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        CompletableFuture<String> first = CompletableFuture.supplyAsync(() -> {
            try {
                return out.readLine();
            } catch (IOException e) {
                return null;
            }
        });
        String line;
        try {
            line = first.get(15, TimeUnit.SECONDS);
        } catch (Exception e) {
            p.destroyForcibly();
            throw new IllegalStateException("madeira did not say where it listens", e);
        }
        Matcher m = line == null ? null : LISTENING.matcher(line);
        if (m == null || !m.find()) {
            p.destroyForcibly();
            throw new IllegalStateException("unexpected first line from madeira: " + line
                    + "\n" + Files.readString(dir.resolve("stderr.log")));
        }
        Thread drain = new Thread(() -> {
            try {
                while (out.readLine() != null) {
                    // keep the pipe empty
                }
            } catch (IOException ignored) {
                // server gone
            }
        }, "madeira-stdout");
        drain.setDaemon(true);
        drain.start();
        MadeiraServer server = new MadeiraServer(p, dir, "http://" + m.group(1) + ":" + m.group(2));
        server.awaitHealthy();
        return server;
    }

    private void awaitHealthy() throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        HttpRequest req = HttpRequest.newBuilder(URI.create(baseUrl + "/healthz")).timeout(Duration.ofSeconds(2)).build();
        for (int i = 0; i < 100; i++) {
            try {
                if (http.send(req, HttpResponse.BodyHandlers.discarding()).statusCode() == 200) {
                    return;
                }
            } catch (IOException e) {
                // not yet
            }
            Thread.sleep(50);
        }
        close();
        throw new IllegalStateException("madeira never became healthy at " + baseUrl);
    }

    String baseUrl() {
        return baseUrl;
    }

    @Override
    public void close() throws Exception {
        process.destroy();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor(5, TimeUnit.SECONDS);
        }
        try (Stream<Path> files = Files.walk(dataDir)) {
            files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        }
    }
}
