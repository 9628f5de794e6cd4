package dev.madeira;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The bearer token option against a server with tokens configured. */
class AuthTest {
    @Test
    void bearerTokenIsSentAndRefusalsAreTyped() throws Exception {
        String config = "[[auth.tokens]]\nname = \"producer\"\ntoken = \"s3cret-java\"\nscopes = [\"producer\"]\n";
        try (MadeiraServer server = MadeiraServer.start(config)) {
            TaskRequest task = TaskRequest.builder("auth.test").payloadVersion(1).payload(Map.of()).build();
            MadeiraClient authorised = MadeiraClient.builder(server.baseUrl()).token("s3cret-java").build();
            assertEquals("pending", authorised.submit(task).status());

            ApiError anonymous = assertThrows(ApiError.class, () -> MadeiraClient.create(server.baseUrl()).submit(task));
            assertEquals(401, anonymous.status());
            assertEquals("unauthorized", anonymous.code());

            ApiError wrong = assertThrows(ApiError.class,
                    () -> MadeiraClient.builder(server.baseUrl()).token("nope").build().submit(task));
            assertEquals(401, wrong.status());
        }
    }
}
