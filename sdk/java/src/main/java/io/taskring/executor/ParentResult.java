package io.taskring.executor;

import com.fasterxml.jackson.databind.JsonNode;
import io.taskring.Payloads;

/**
 * How a task that this one depends on ended, and what its handler kept as its result
 * ({@link TaskContext#parentResults()}; Python: {@code ParentResult}).
 *
 * @param outcome {@code "succeeded"}, {@code "failed"}, {@code "ignored"} (failed under
 *     on_failure ignore), {@code "continued"} (failed an attempt under on_failure continue),
 *     {@code "skipped"} or {@code "cancelled"}
 * @param error its last error, for one that failed; {@code ""} otherwise
 * @param resultJson its handler's result as JSON; {@code ""} when it kept none or failed
 * @param truncated the parents' results came to more than 1 MiB and this one's was left out of
 *     the delivery: read it with {@code TaskringClient.getGraph(namespace, graphId, true)}
 */
public record ParentResult(String key, String taskId, String outcome, String error, String resultJson,
        boolean truncated) {

    /**
     * The value its handler kept, decoded; null when none.
     *
     * @throws IllegalStateException when it was left out of the delivery ({@link #truncated()}):
     *     a null here would read as "no result"
     */
    public JsonNode result() {
        requireDelivered();
        return Payloads.decodeValue(resultJson, "parent_results.result_json");
    }

    /** {@link #result()} bound to a bean (or a Map) with Jackson; null when none. */
    public <T> T resultAs(Class<T> type) {
        requireDelivered();
        return Payloads.decodeValue(resultJson, type, "parent_results.result_json");
    }

    private void requireDelivered() {
        if (truncated) {
            throw new IllegalStateException("the result of '" + key + "' was not delivered: the parents' results are"
                    + " over 1 MiB; read it with TaskringClient.getGraph(namespace, graphId, true)");
        }
    }
}
