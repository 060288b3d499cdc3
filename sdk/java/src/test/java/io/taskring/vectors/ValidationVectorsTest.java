package io.taskring.vectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.taskring.client.Envelope;
import io.taskring.errors.InvalidArgumentException;
import io.taskring.errors.InvalidTaskSpecException;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * sdk/vectors/validation.json. Client cases are refused (or built) here; server cases
 * need a dispatcher (ServerValidationIT), but the parsing of their error details into
 * {@link InvalidArgumentException#field()} is checked here.
 */
class ValidationVectorsTest {
    private static final JsonNode FILE = Vectors.load("validation.json");

    @TestFactory
    Stream<DynamicTest> clientCases() {
        return Vectors.list(FILE.get("cases")).stream()
                .filter(c -> "client".equals(c.path("checked_by").asText()))
                .map(c -> DynamicTest.dynamicTest(c.get("name").asText(), () -> {
                    if (c.path("ok").asBoolean(false)) {
                        Envelope.toWire(Vectors.spec(c.get("input")));
                        return;
                    }
                    InvalidTaskSpecException e = assertThrows(InvalidTaskSpecException.class,
                            () -> Envelope.toWire(Vectors.spec(c.get("input"))));
                    String want = c.get("error_field").asText();
                    assertTrue(e.field().equals(want) || e.field().equals(want.replaceFirst("_ms$", "")),
                            "field " + e.field() + " for " + want + " (" + e.getMessage() + ")");
                }));
    }

    @TestFactory
    Stream<DynamicTest> serverErrorFieldsParse() {
        return Vectors.list(FILE.get("cases")).stream()
                .filter(c -> "server".equals(c.path("checked_by").asText()) && c.has("error_field"))
                .map(c -> DynamicTest.dynamicTest(c.get("name").asText(), () -> {
                    String field = c.get("error_field").asText();
                    InvalidArgumentException e = new InvalidArgumentException(field + ": is wrong in some way", null);
                    assertEquals(field, e.field());
                    assertEquals("is wrong in some way", e.problem());
                }));
    }
}
