package dev.madeira;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * JSON over HTTP/1.1 with keep-alive: one {@link HttpClient} whose connection pool is reused by
 * every call of a client and of the workers built from it.
 */
final class Transport {
    private final HttpClient http;
    private final URI base;
    private final String authorization;
    private final Duration requestTimeout;

    Transport(URI base, String token, Duration requestTimeout) {
        this.http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(5))
                .followRedirects(HttpClient.Redirect.NEVER)
                // run the client's internal stages on its own selector thread instead of handing
                // each one to a pool thread: fewer context switches per request (the SDK's own
                // completion callbacks are short and never block)
                .executor(Runnable::run)
                .build();
        String b = base.toString();
        this.base = URI.create(b.endsWith("/") ? b.substring(0, b.length() - 1) : b);
        this.authorization = token == null ? null : "Bearer " + token;
        this.requestTimeout = requestTimeout;
    }

    URI base() {
        return base;
    }

    /** Sends and waits; a non-2xx answer is an {@link ApiError}. */
    JsonNode send(String method, String path, JsonNode body) {
        return send(method, path, body, requestTimeout);
    }

    JsonNode send(String method, String path, JsonNode body, Duration timeout) {
        HttpRequest request = request(method, path, body, timeout);
        HttpResponse<byte[]> response;
        try {
            response = http.send(request, HttpResponse.BodyHandlers.ofByteArray());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransportError(method + " " + path + " interrupted", e);
        } catch (IOException e) {
            throw new TransportError(method + " " + path + ": " + e, e);
        }
        return decode(method, path, response);
    }

    /** Sends without blocking the caller; the future fails with {@link ApiError} or {@link TransportError}. */
    CompletableFuture<JsonNode> sendAsync(String method, String path, JsonNode body) {
        HttpRequest request = request(method, path, body, requestTimeout);
        return http.sendAsync(request, HttpResponse.BodyHandlers.ofByteArray())
                .handle((response, failure) -> {
                    if (failure != null) {
                        Throwable cause = failure instanceof CompletionException && failure.getCause() != null
                                ? failure.getCause() : failure;
                        throw new TransportError(method + " " + path + ": " + cause, cause);
                    }
                    return decode(method, path, response);
                });
    }

    private HttpRequest request(String method, String path, JsonNode body, Duration timeout) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(timeout);
        if (authorization != null) {
            b.header("Authorization", authorization);
        }
        if (body == null) {
            b.method(method, HttpRequest.BodyPublishers.noBody());
        } else {
            byte[] bytes;
            try {
                bytes = Json.MAPPER.writeValueAsBytes(body);
            } catch (IOException e) {
                throw new TransportError("cannot encode request body", e);
            }
            b.header("Content-Type", "application/json").method(method, HttpRequest.BodyPublishers.ofByteArray(bytes));
        }
        return b.build();
    }

    private static JsonNode decode(String method, String path, HttpResponse<byte[]> response) {
        int status = response.statusCode();
        byte[] raw = response.body();
        JsonNode json = null;
        if (raw != null && raw.length > 0) {
            try {
                json = Json.MAPPER.readTree(raw);
            } catch (IOException e) {
                if (status / 100 == 2) {
                    throw new TransportError(method + " " + path + ": answer is not JSON", e);
                }
            }
        }
        if (status / 100 == 2) {
            return json == null ? Json.object() : json;
        }
        throw toApiError(status, json, raw);
    }

    static ApiError toApiError(int status, JsonNode body, byte[] raw) {
        JsonNode err = body == null ? null : body.get("error");
        if (err != null && err.isObject()) {
            return new ApiError(status, Json.text(err, "code"), Json.text(err, "message"), Json.text(err, "field"));
        }
        String excerpt = raw == null ? "" : new String(raw, 0, Math.min(raw.length, 200), java.nio.charset.StandardCharsets.UTF_8);
        return new ApiError(status, "unexpected_response", excerpt, null);
    }
}
