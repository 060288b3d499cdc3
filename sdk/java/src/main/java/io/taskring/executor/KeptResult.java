package io.taskring.executor;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.nio.charset.StandardCharsets;

/**
 * A handler's result as Outcome.result_json, for a delivery whose result is kept (Python:
 * {@code result_json_of}): any JSON value, at most {@value #MAX_BYTES} bytes of UTF-8, which is
 * what the server accepts. One that cannot be kept fails the attempt non-retryably with
 * {@link #error()} starting {@code "result: "}: a retry would return the same again.
 *
 * @param json the compact JSON; {@code ""} for no result (null) or when it cannot be kept
 * @param error why it cannot be kept; {@code ""} when it can
 */
record KeptResult(String json, String error) {
    static final int MAX_BYTES = 65_536;

    private static final ObjectMapper MAPPER = JsonMapper.builder().build();
    private static final KeptResult NONE = new KeptResult("", "");

    /** The result given to {@link TaskContext#setResult}; null is none. */
    static KeptResult of(Object value) {
        if (value == null) {
            return NONE;
        }
        String json;
        try {
            JsonNode node = value instanceof JsonNode n ? n : MAPPER.valueToTree(value);
            requireFinite(node);
            json = MAPPER.writeValueAsString(node);
        } catch (IllegalArgumentException | JsonProcessingException e) {
            return new KeptResult("", "result: the value given to setResult is not JSON (" + e.getMessage() + ")");
        }
        // A char is at most 3 bytes of UTF-8: only long text can be over, and only it is counted.
        if (json.length() > MAX_BYTES / 3) {
            int bytes = json.getBytes(StandardCharsets.UTF_8).length;
            if (bytes > MAX_BYTES) {
                return new KeptResult("", "result: " + bytes + " bytes as JSON, more than " + MAX_BYTES);
            }
        }
        return new KeptResult(json, "");
    }

    /** NaN and infinities are not JSON; Jackson would write them as bare words. */
    private static void requireFinite(JsonNode node) {
        if (node.isFloatingPointNumber() && !Double.isFinite(node.doubleValue())) {
            throw new IllegalArgumentException("out of range float values are not JSON compliant");
        }
        if (node.isContainerNode()) {
            node.forEach(KeptResult::requireFinite);
        }
    }
}
