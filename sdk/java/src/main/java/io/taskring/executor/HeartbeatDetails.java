package io.taskring.executor;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import io.taskring.errors.ProtocolException;
import java.nio.charset.StandardCharsets;

/**
 * A heartbeat's details: any JSON value (not only an object, unlike a payload), at most
 * {@value #MAX_BYTES} bytes of UTF-8, which is what the dispatcher stores. Checked before
 * anything is sent, so a bad one fails the handler's call instead of coming back INVALID.
 * "" on the wire means "no details": keep the last ones.
 */
final class HeartbeatDetails {
    static final int MAX_BYTES = 65_536;

    // Configured as Payloads' mapper, so details read back as payloads do (exact decimals).
    private static final ObjectMapper MAPPER = JsonMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
            .build();

    private HeartbeatDetails() {}

    /** Compact JSON text of {@code details} (a Map, a Jackson node, a bean, a String...); null is "". */
    static String encode(Object details) {
        if (details == null) {
            return "";
        }
        String json;
        try {
            JsonNode node = details instanceof JsonNode n ? n : MAPPER.valueToTree(details);
            requireFinite(node);
            json = MAPPER.writeValueAsString(node);
        } catch (IllegalArgumentException | JsonProcessingException e) {
            throw new IllegalArgumentException("details: not encodable as JSON: " + e.getMessage(), e);
        }
        return checkSize(json);
    }

    /** {@code json} itself when it is one JSON value within the size limit; null or "" is "". */
    static String check(String json) {
        if (json == null || json.isEmpty()) {
            return "";
        }
        try {
            if (MAPPER.readTree(json) == null) { // only whitespace
                throw new IllegalArgumentException("details: not valid JSON: no value");
            }
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("details: not valid JSON: " + e.getOriginalMessage(), e);
        }
        return checkSize(json);
    }

    /** The decoded value; null for "" (no details). */
    static JsonNode decode(String json) {
        if (json.isEmpty()) {
            return null;
        }
        try {
            return MAPPER.readTree(json);
        } catch (JsonProcessingException e) { // the dispatcher checked them when they were sent
            throw new ProtocolException("heartbeat_details_json is not valid JSON: " + e.getOriginalMessage(), e);
        }
    }

    /** The decoded value bound to {@code type}; null for "". */
    static <T> T decode(String json, Class<T> type) {
        JsonNode node = decode(json);
        if (node == null) {
            return null;
        }
        try {
            return MAPPER.treeToValue(node, type);
        } catch (JsonProcessingException e) {
            throw new ProtocolException("heartbeat_details_json does not fit " + type.getSimpleName() + ": "
                    + e.getOriginalMessage(), e);
        }
    }

    private static String checkSize(String json) {
        // A char is at most 3 bytes of UTF-8: only long text can be over, and only it is counted.
        if (json.length() > MAX_BYTES / 3) {
            int bytes = json.getBytes(StandardCharsets.UTF_8).length;
            if (bytes > MAX_BYTES) {
                throw new IllegalArgumentException("details: too large: " + bytes + " bytes of JSON, at most " + MAX_BYTES);
            }
        }
        return json;
    }

    /** NaN and infinities are not JSON; Jackson would write them as strings and change the value. */
    private static void requireFinite(JsonNode node) {
        if (node.isFloatingPointNumber() && !Double.isFinite(node.doubleValue())) {
            throw new IllegalArgumentException("out of range float values are not JSON compliant");
        }
        if (node.isContainerNode()) {
            node.forEach(HeartbeatDetails::requireFinite);
        }
    }
}
