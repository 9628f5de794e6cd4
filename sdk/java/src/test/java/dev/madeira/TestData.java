package dev.madeira;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** The shared vectors in sdk/testdata, read in place (never copied). */
final class TestData {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private TestData() {
    }

    static Path dir() {
        String p = System.getProperty("madeira.testdata");
        return p != null ? Path.of(p) : Path.of("..", "testdata");
    }

    static JsonNode load(String name) {
        try {
            return MAPPER.readTree(Files.readAllBytes(dir().resolve(name)));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + dir().resolve(name), e);
        }
    }
}
