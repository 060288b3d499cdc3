package io.taskring.client;

import java.util.Map;

/**
 * A graph as stored ({@link TaskringClient#getGraph}).
 *
 * @param state {@code "running"} while any task has not ended, {@code "finished"} once all have
 * @param counts its tasks by state name ({@code "succeeded"}, {@code "dead_lettered"}, ...)
 * @param nodes by key, in the order they were submitted
 */
public record GraphInfo(String graphId, String namespace, String state, Map<String, Long> counts,
        Map<String, GraphNode> nodes) {

    /** Every task has ended: succeeded, dead-lettered, skipped or cancelled. */
    public boolean isFinished() {
        return "finished".equals(state);
    }
}
