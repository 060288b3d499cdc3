package io.taskring.client;

/**
 * One dependency of a task of a graph, as stored ({@link GraphNode#dependsOn()}).
 *
 * @param outcome how the parent ended for this edge: {@code succeeded}, {@code failed},
 *     {@code ignored} (failed under {@link OnFailure#IGNORE}), {@code continued} (failed an attempt
 *     under {@link OnFailure#CONTINUE}), {@code skipped} or {@code cancelled}; {@code ""} while it
 *     has not
 */
public record GraphEdge(String parentKey, OnFailure onFailure, String outcome) {}
