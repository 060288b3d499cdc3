package io.taskring.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.taskring.Instants;
import io.taskring.RetryPolicy;
import io.taskring.errors.InvalidTaskSpecException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Client-side checks beyond the shared vectors, and instant formatting. */
class TaskSpecTest {
    private static String field(Runnable r) {
        return assertThrows(InvalidTaskSpecException.class, r::run).field();
    }

    @Test
    void refusesWhatTheWireCannotCarry() {
        assertEquals("timeout", field(() -> TaskSpec.builder("a", "b").timeout(Duration.ZERO).build()));
        assertEquals("timeout", field(() -> TaskSpec.builder("a", "b").timeout(Duration.ofMillis(1L << 32)).build()));
        assertEquals("payload_version", field(() -> TaskSpec.builder("a", "b").payloadVersion(-1).build()));
        assertEquals("payload", field(() -> TaskSpec.builder("a", "b").payload(List.of(1, 2))));
        assertEquals("payload", field(() -> TaskSpec.builder("a", "b").payloadJson("[1]")));
        assertEquals("payload", field(() -> TaskSpec.builder("a", "b").payload(java.util.Map.of("x", List.of(Double.NaN)))));
        assertEquals("retry_policy.multiplier", field(() -> RetryPolicy.exponential(Duration.ofSeconds(1), Duration.ofSeconds(2), 0.5)));
        assertEquals("retry_policy.max_backoff", field(() -> RetryPolicy.exponential(Duration.ofSeconds(2), Duration.ofSeconds(1), 2)));
        assertEquals("retry_policy.schedule", field(RetryPolicy::tiered));
        assertEquals("retry_policy.schedule[1]", field(() -> RetryPolicy.tiered(Duration.ofSeconds(1), Duration.ofSeconds(-1))));
    }

    @Test
    void payloadJsonIsCompacted() {
        assertEquals("{\"a\":[1,2],\"b\":\"x y\"}", TaskSpec.builder("a", "b").payloadJson("{ \"a\": [1, 2], \"b\": \"x y\" }").build().payloadJson());
    }

    @Test
    void instantsAreFormattedAsPythonIsoformat() {
        assertEquals("2030-01-02T03:04:05+00:00", Instants.format(Instant.parse("2030-01-02T03:04:05Z")));
        assertEquals("2030-01-02T03:04:05.000001+05:45",
                Instants.format(OffsetDateTime.of(2030, 1, 2, 3, 4, 5, 1000, ZoneOffset.ofHoursMinutes(5, 45))));
        // sub-microsecond is rounded up, never early
        assertEquals("2030-01-02T03:04:05.000001+00:00",
                Instants.format(OffsetDateTime.of(2030, 1, 2, 3, 4, 5, 1, ZoneOffset.UTC)));
        assertEquals("2030-01-02T03:04:06+00:00",
                Instants.format(OffsetDateTime.of(2030, 1, 2, 3, 4, 5, 999_999_001, ZoneOffset.UTC)));
    }
}
