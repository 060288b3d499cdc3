package io.taskring.client;

import com.fasterxml.jackson.databind.JsonNode;
import io.taskring.Payloads;
import io.taskring.TaskState;
import java.util.List;

/**
 * One task of a graph as stored ({@link GraphInfo#nodes()}).
 *
 * @param attempts attempts made so far
 * @param dependsOn its parents, in the order they were given
 * @param reason why it was skipped or cancelled, or its last error; {@code ""} otherwise
 * @param waiting what a waiting task waits for, in words; {@code ""} otherwise
 * @param resultJson its handler's kept result as JSON, read with {@code withResults};
 *     {@code ""} when none was kept (no task depends on it, it has not succeeded) or asked for
 */
public record GraphNode(String key, String taskId, TaskState state, long attempts, Join join,
        List<GraphEdge> dependsOn, String reason, String waiting, String resultJson) {

    /** The handler's kept result, decoded; null when there is none. */
    public JsonNode result() {
        return Payloads.decodeValue(resultJson, "result_json");
    }

    /** {@link #result()} bound to a bean (or a Map) with Jackson; null when there is none. */
    public <T> T resultAs(Class<T> type) {
        return Payloads.decodeValue(resultJson, type, "result_json");
    }
}
