package io.taskring.vectors;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import io.taskring.RetryDelays;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import taskring.v1.Taskring;

/** sdk/vectors/retry.json: RetryDelays reproduces the server's backoff exactly. */
class RetryVectorsTest {
    private static final JsonNode FILE = Vectors.load("retry.json");

    @TestFactory
    Stream<DynamicTest> cases() {
        return Vectors.list(FILE.get("cases")).stream().map(c -> DynamicTest.dynamicTest(c.get("name").asText(), () -> {
            JsonNode p = c.get("policy");
            Taskring.RetryPolicy.Builder policy = Taskring.RetryPolicy.newBuilder();
            if (p.has("schedule_ms")) {
                p.get("schedule_ms").forEach(w -> policy.addScheduleMs(w.asLong()));
            } else {
                policy.setInitialBackoffMs(p.get("initial_backoff_ms").asLong())
                        .setMaxBackoffMs(p.get("max_backoff_ms").asLong())
                        .setMultiplier(p.get("multiplier").asDouble());
            }
            int n = c.get("retry").asInt();
            double u = c.get("jitter").asDouble();
            if (!c.get("ceiling_ms").isNull()) {
                assertEquals(c.get("ceiling_ms").asLong(), RetryDelays.ceilingMs(policy.build(), n), "ceiling");
            }
            assertEquals(c.get("delay_ms").asLong(), RetryDelays.delayMs(policy.build(), n, u), "delay");
        }));
    }
}
