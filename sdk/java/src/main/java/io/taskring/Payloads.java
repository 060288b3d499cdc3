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
        return payload == null ? "{}" : encode(payload, "payload");
    }

    /**
     * Compact JSON text of a JSON object given as a Map, a JsonNode object or a bean (not null);
     * anything else is an {@link InvalidTaskSpecException} naming {@code field}.
     */
    public static String encode(Object value, String field) {
        if (value == null) {
            throw new InvalidTaskSpecException(field, "must be a JSON object, got null");
        }
        JsonNode node;
        try {
            node = value instanceof JsonNode n ? n : MAPPER.valueToTree(value);
        } catch (IllegalArgumentException e) {
            throw new InvalidTaskSpecException(field, "not encodable as JSON: " + e.getMessage());
        }
        if (!node.isObject()) {
            throw new InvalidTaskSpecException(field, "must be a JSON object, got " + node.getNodeType().name().toLowerCase());
        }
        requireFinite(node, field);
        return write(node, field);
    }

    /** NaN and infinities are not JSON (Python's allow_nan=False refuses them too); Jackson would write NaN. */
    private static void requireFinite(JsonNode node, String field) {
        if (node.isFloatingPointNumber() && !Double.isFinite(node.doubleValue())) {
            throw new InvalidTaskSpecException(field, "not encodable as JSON: out of range float values are not JSON compliant");
        }
        if (node.isContainerNode()) {
            node.forEach(child -> requireFinite(child, field));
        }
    }

    /** Compacts JSON text that must hold one JSON object. */
    public static String encodeJsonText(String json) {
        return encodeJsonText(json, "payload");
    }

    /** Compacts JSON text that must hold one JSON object; anything else is refused naming {@code field}. */
    public static String encodeJsonText(String json, String field) {
        if (json == null) {
            throw new InvalidTaskSpecException(field, "must be a JSON object, got null");
        }
        JsonNode node;
        try {
            node = MAPPER.readTree(json);
        } catch (JsonProcessingException e) {
            throw new InvalidTaskSpecException(field, "not valid JSON: " + e.getOriginalMessage());
        }
        if (node == null || !node.isObject()) {
            throw new InvalidTaskSpecException(field, "must be a JSON object");
        }
        return write(node, field);
    }

    /** The payload object of payload_json; empty text is the empty object. */
    public static ObjectNode decode(String text) {
        return decodeObject(text, "payload_json");
    }

    /**
     * The JSON object the server sent in {@code wireField}; empty text is the empty object. Not an
     * object: a {@link ProtocolException} (the server's fault, not the caller's).
     */
    public static ObjectNode decodeObject(String text, String wireField) {
        if (text == null || text.isEmpty()) {
            return MAPPER.createObjectNode();
        }
        JsonNode node;
        try {
            node = MAPPER.readTree(text);
        } catch (JsonProcessingException e) {
            throw new ProtocolException(wireField + " is not valid JSON: " + e.getOriginalMessage(), e);
        }
        if (!(node instanceof ObjectNode obj)) {
            throw new ProtocolException(wireField + " is not a JSON object");
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

    /**
     * Any JSON value the server sent in {@code wireField} (a handler's result), decoded; null for
     * "" (none). Not JSON: a {@link ProtocolException}.
     */
    public static JsonNode decodeValue(String text, String wireField) {
        if (text == null || text.isEmpty()) {
            return null;
        }
        try {
            return MAPPER.readTree(text);
        } catch (JsonProcessingException e) {
            throw new ProtocolException(wireField + " is not valid JSON: " + e.getOriginalMessage(), e);
        }
    }

    /** {@link #decodeValue(String, String)} bound to {@code type} with Jackson; null for "". */
    public static <T> T decodeValue(String text, Class<T> type, String wireField) {
        JsonNode node = decodeValue(text, wireField);
        if (node == null) {
            return null;
        }
        try {
            return MAPPER.treeToValue(node, type);
        } catch (JsonProcessingException e) {
            throw new ProtocolException(wireField + " does not fit " + type.getSimpleName() + ": " + e.getOriginalMessage(), e);
        }
    }

    private static String write(JsonNode node, String field) {
        try {
            return MAPPER.writeValueAsString(node);
        } catch (JsonProcessingException e) {
            throw new InvalidTaskSpecException(field, "not encodable as JSON: " + e.getOriginalMessage());
        }
    }
}
