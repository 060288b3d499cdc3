package io.taskring.client;

import io.taskring.TaskState;

/**
 * One task of a submitted graph ({@link SubmittedGraph#tasks()}).
 *
 * @param taskId derived by the server from the namespace, the graph id and the key
 * @param slot the slot (Kafka partition) the task lives in
 */
public record GraphTaskRef(String key, String taskId, TaskState state, int slot) {}
