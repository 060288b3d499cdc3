package io.taskring.vectors;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import io.taskring.client.TaskSpec;
import io.taskring.RetryPolicy;
import java.io.IOException;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * The shared cross-SDK vectors (sdk/vectors), read in place. The pom sets
 * {@code taskring.vectors} to {@code ${basedir}/../vectors}; numbers are read exactly
 * (BigDecimal), so uint64 and 2^53-1 survive.
 */
public final class Vectors {
    public static final ObjectMapper JSON = JsonMapper.builder()
            .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
            .enable(DeserializationFeature.USE_BIG_INTEGER_FOR_INTS)
            .build();

    private Vectors() {}

    public static Path dir() {
        return Path.of(System.getProperty("taskring.vectors", "../vectors"));
    }

    public static JsonNode load(String file) {
        Path p = dir().resolve(file);
        try {
            return JSON.readTree(Files.readString(p));
        } catch (IOException e) {
            throw new IllegalStateException("cannot read vector file " + p.toAbsolutePath() + ": " + e, e);
        }
    }

    public static List<JsonNode> list(JsonNode node) {
        List<JsonNode> out = new ArrayList<>();
        node.forEach(out::add);
        return out;
    }

    /** A TaskSpec from the SDK-neutral "input" object, through the public builder. */
    public static TaskSpec spec(JsonNode in) {
        TaskSpec.Builder b = TaskSpec.builder(in.path("namespace").asText(), in.path("task_type").asText());
        if (in.has("payload")) {
            b.payload(in.get("payload"));
        }
        if (in.has("payload_version")) {
            b.payloadVersion(in.get("payload_version").asLong());
        }
        if (in.has("delay_ms")) {
            b.delay(Duration.ofMillis(in.get("delay_ms").asLong()));
        }
        if (in.has("schedule_time")) {
            b.scheduleTime(in.get("schedule_time").asText());
        }
        if (in.has("timeout_ms")) {
            b.timeout(Duration.ofMillis(in.get("timeout_ms").asLong()));
        }
        if (in.has("max_retries")) {
            b.maxRetries(in.get("max_retries").asInt());
        }
        if (in.has("priority")) {
            b.priority(in.get("priority").asText());
        }
        if (in.has("retry_policy")) {
            JsonNode rp = in.get("retry_policy");
            if (rp.has("schedule_ms")) {
                List<Duration> waits = new ArrayList<>();
                rp.get("schedule_ms").forEach(w -> waits.add(Duration.ofMillis(w.asLong())));
                b.retryPolicy(RetryPolicy.tiered(waits));
            } else {
                b.retryPolicy(RetryPolicy.exponential(Duration.ofMillis(rp.get("initial_backoff_ms").asLong()),
                        Duration.ofMillis(rp.get("max_backoff_ms").asLong()), rp.get("multiplier").asDouble()));
            }
        }
        if (in.has("task_id")) {
            b.taskId(in.get("task_id").asText());
        }
        if (in.has("trace_id")) {
            b.traceId(in.get("trace_id").asText());
        }
        if (in.has("unique_key")) {
            b.uniqueKey(in.get("unique_key").asText());
        }
        return b.build();
    }

    /** Deep equality where numbers compare by value (2 == 2.0), as the vector README asks. */
    public static boolean sameJson(JsonNode a, JsonNode b) {
        if (a == null || b == null) {
            return a == b;
        }
        if (a.isNumber() && b.isNumber()) {
            return new BigDecimal(a.asText()).compareTo(new BigDecimal(b.asText())) == 0;
        }
        if (a.isObject() && b.isObject()) {
            if (a.size() != b.size()) {
                return false;
            }
            for (Iterator<Map.Entry<String, JsonNode>> it = a.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                if (!sameJson(e.getValue(), b.get(e.getKey()))) {
                    return false;
                }
            }
            return true;
        }
        if (a.isArray() && b.isArray()) {
            if (a.size() != b.size()) {
                return false;
            }
            for (int i = 0; i < a.size(); i++) {
                if (!sameJson(a.get(i), b.get(i))) {
                    return false;
                }
            }
            return true;
        }
        return a.equals(b);
    }
}
