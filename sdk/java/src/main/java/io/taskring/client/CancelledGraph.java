package io.taskring.client;

import java.util.List;

/**
 * What {@link TaskringClient#cancelGraph} did.
 *
 * @param cancelled the tasks cancelled now
 * @param running the keys of the running tasks left to finish (graceful, or types without heartbeats)
 */
public record CancelledGraph(long cancelled, List<String> running) {}
