package dev.madeira;

import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** One real server per test class, and a queue of its own for each test that asks. */
abstract class LiveServerTest {
    protected static MadeiraServer server;
    protected static MadeiraClient client;

    @BeforeAll
    static void startServer() throws Exception {
        server = MadeiraServer.start();
        client = MadeiraClient.create(server.baseUrl());
    }

    @AfterAll
    static void stopServer() throws Exception {
        if (server != null) {
            server.close();
            server = null;
        }
    }

    /** A fresh queue name, so tests sharing the server never take each other's tasks. */
    protected static String queue(String prefix) {
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }
}
