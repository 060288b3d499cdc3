package io.taskring.vectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.util.JsonFormat;
import io.taskring.Instants;
import io.taskring.client.Envelope;
import io.taskring.client.TaskEvent;
import io.taskring.client.TaskInfo;
import java.time.OffsetDateTime;
import java.util.Iterator;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import taskring.v1.Taskring;

/** sdk/vectors/envelope.json: encoding to the wire Task, instants, and decoding GetTaskResponse. */
class EnvelopeVectorsTest {
    private static final JsonNode FILE = Vectors.load("envelope.json");

    @TestFactory
    Stream<DynamicTest> encodeCases() {
        return Vectors.list(FILE.get("cases")).stream().map(c -> DynamicTest.dynamicTest(c.get("name").asText(), () -> {
            Taskring.Task task = Envelope.toWire(Vectors.spec(c.get("input")));
            ObjectNode got = (ObjectNode) Vectors.JSON.readTree(JsonFormat.printer().print(task));
            ObjectNode want = ((ObjectNode) c.get("wire")).deepCopy();
            JsonNode wantPayload = want.remove("payload_json_parsed");

            String payloadText = got.remove("payloadJson").asText();
            assertTrue(Vectors.sameJson(wantPayload, Vectors.JSON.readTree(payloadText)),
                    "payload: got " + payloadText + ", want " + wantPayload);
            assertFalse(hasWhitespaceOutsideStrings(payloadText), "payload is not compact: " + payloadText);

            if (want.has("scheduleTime")) {
                String text = got.get("scheduleTime").asText();
                // Java keeps the caller's offset and microseconds, so the exact Python text is required.
                assertEquals(want.get("scheduleTime").asText(), text);
                assertEquals(c.get("schedule_time_epoch_ms").asLong(), Instants.parse(text).toInstant().toEpochMilli());
            }
            assertEquals(fieldNames(want), fieldNames(got), "keys of the Task");
            assertTrue(Vectors.sameJson(want, got), "wire: got " + got + ", want " + want);
        }));
    }

    @TestFactory
    Stream<DynamicTest> instants() {
        return Vectors.list(FILE.get("instants")).stream().map(c -> DynamicTest.dynamicTest(c.get("name").asText(), () ->
                assertEquals(c.get("epoch_ms").asLong(), Instants.parse(c.get("text").asText()).toInstant().toEpochMilli())));
    }

    @TestFactory
    Stream<DynamicTest> decodeCases() {
        return Vectors.list(FILE.get("decode")).stream().map(c -> DynamicTest.dynamicTest(c.get("name").asText(), () -> {
            Taskring.GetTaskResponse.Builder msg = Taskring.GetTaskResponse.newBuilder();
            JsonFormat.parser().merge(Vectors.JSON.writeValueAsString(c.get("response")), msg);
            TaskInfo info = Envelope.fromWire(msg.build());
            ObjectNode got = neutral(info);
            JsonNode want = c.get("expect");
            for (Iterator<String> it = want.fieldNames(); it.hasNext(); ) {
                String key = it.next();
                assertTrue(got.has(key), "the SDK exposes no " + key);
                assertTrue(Vectors.sameJson(want.get(key), got.get(key)), key + ": got " + got.get(key) + ", want " + want.get(key));
            }
        }));
    }

    /** What the SDK exposes, in the vectors' neutral names. */
    private static ObjectNode neutral(TaskInfo t) {
        ObjectNode o = Vectors.JSON.createObjectNode();
        o.put("task_id", t.taskId());
        o.put("namespace", t.namespace());
        o.put("task_type", t.taskType());
        o.put("state", t.state().wireName());
        o.put("attempts", t.attempts());
        o.set("due_at_epoch_ms", epochMs(t.dueAt()));
        o.put("slot", t.slot());
        o.set("payload", t.payload());
        o.put("payload_version", t.payloadVersion());
        o.put("priority", t.priority().name().toLowerCase());
        o.put("last_error", t.lastError());
        o.put("last_stack_trace", t.lastStackTrace());
        o.set("created_at_epoch_ms", epochMs(t.createdAt()));
        o.set("schedule_time_epoch_ms", epochMs(t.scheduleTime()));
        o.set("timeout_ms", t.timeout() == null ? NullNode.getInstance() : o.numberNode(t.timeout().toMillis()));
        o.set("max_retries", t.maxRetries() == null ? NullNode.getInstance() : o.numberNode(t.maxRetries()));
        o.put("unique_key", t.uniqueKey());
        o.put("trace_id", t.traceId());
        ArrayNode history = o.putArray("history");
        for (TaskEvent ev : t.history()) {
            ObjectNode e = history.addObject();
            e.put("state", ev.state().wireName());
            e.set("at_epoch_ms", epochMs(ev.at()));
            e.put("node", ev.node());
            e.put("attempt", ev.attempt());
            e.put("detail", ev.detail());
        }
        return o;
    }

    private static JsonNode epochMs(OffsetDateTime t) {
        return t == null ? NullNode.getInstance() : Vectors.JSON.getNodeFactory().numberNode(t.toInstant().toEpochMilli());
    }

    private static List<String> fieldNames(JsonNode n) {
        List<String> out = new java.util.ArrayList<>();
        n.fieldNames().forEachRemaining(out::add);
        out.sort(null);
        return out;
    }

    private static boolean hasWhitespaceOutsideStrings(String json) {
        boolean inString = false;
        for (int i = 0; i < json.length(); i++) {
            char ch = json.charAt(i);
            if (inString) {
                if (ch == '\\') {
                    i++;
                } else if (ch == '"') {
                    inString = false;
                }
            } else if (ch == '"') {
                inString = true;
            } else if (Character.isWhitespace(ch)) {
                return true;
            }
        }
        return false;
    }
}
