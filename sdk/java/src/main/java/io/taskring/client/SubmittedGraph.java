package io.taskring.client;

import java.util.Map;

/**
 * The server's receipt for a graph ({@link TaskringClient#submitGraph}).
 *
 * @param duplicate the graph existed with the same tasks: nothing was written
 * @param tasks by key, in the order they were added
 */
public record SubmittedGraph(String graphId, boolean duplicate, Map<String, GraphTaskRef> tasks) {}
