package io.taskring;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.taskring.errors.InvalidTaskSpecException;
import io.taskring.errors.ProtocolException;

/**
 * The payload is a JSON object that travels as compact JSON text. One mapper,
 * configured here once and never handed out (so it stays effectively immutable); Jackson's compact output is what Python's
 * {@code json.dumps(separators=(",", ":"), ensure_ascii=False)} writes for the same object.
 */
public final class Payloads {
    private static final ObjectMapper MAPPER = JsonMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
            .build();

    private Payloads() {}

    /** Compact JSON text of a payload: a Map, a JsonNode object, or a bean; null is {}. */
    public static String encode(Object payload) {
        if (payload == null) {
            return "{}";
        }
        JsonNode node;
        try {
            node = payload instanceof JsonNode n ? n : MAPPER.valueToTree(payload);
        } catch (IllegalArgumentException e) {
            throw new InvalidTaskSpecException("payload", "not encodable as JSON: " + e.getMessage());
        }
        if (!node.isObject()) {
            throw new InvalidTaskSpecException("payload", "must be a JSON object, got " + node.getNodeType().name().toLowerCase());
        }
        requireFinite(node);
        return write(node);
    }

    /** NaN and infinities are not JSON (Python's allow_nan=False refuses them too); Jackson would write NaN. */
    private static void requireFinite(JsonNode node) {
        if (node.isFloatingPointNumber() && !Double.isFinite(node.doubleValue())) {
            throw new InvalidTaskSpecException("payload", "not encodable as JSON: out of range float values are not JSON compliant");
        }
        if (node.isContainerNode()) {
            node.forEach(Payloads::requireFinite);
        }
    }

    /** Compacts JSON text that must hold one JSON object. */
    public static String encodeJsonText(String json) {
        JsonNode node;
        try {
            node = MAPPER.readTree(json);
        } catch (JsonProcessingException e) {
            throw new InvalidTaskSpecException("payload", "not valid JSON: " + e.getOriginalMessage());
        }
        if (node == null || !node.isObject()) {
            throw new InvalidTaskSpecException("payload", "must be a JSON object");
        }
        return write(node);
    }

    /** The payload object of payload_json; empty text is the empty object. */
    public static ObjectNode decode(String text) {
        if (text == null || text.isEmpty()) {
            return MAPPER.createObjectNode();
        }
        JsonNode node;
        try {
            node = MAPPER.readTree(text);
        } catch (JsonProcessingException e) {
            throw new ProtocolException("payload_json is not valid JSON: " + e.getOriginalMessage(), e);
        }
        if (!(node instanceof ObjectNode obj)) {
            throw new ProtocolException("payload_json is not a JSON object");
        }
        return obj;
    }

    /** The payload as a bean or a Map. */
    public static <T> T decode(String text, Class<T> type) {
        try {
            return MAPPER.treeToValue(decode(text), type);
        } catch (JsonProcessingException e) {
            throw new ProtocolException("payload_json does not fit " + type.getSimpleName() + ": " + e.getOriginalMessage(), e);
        }
    }

    private static String write(JsonNode node) {
        try {
            return MAPPER.writeValueAsString(node);
        } catch (JsonProcessingException e) {
            throw new InvalidTaskSpecException("payload", "not encodable as JSON: " + e.getOriginalMessage());
        }
    }
}
