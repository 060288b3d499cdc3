package io.taskring.client;

import io.taskring.TaskState;
import java.time.OffsetDateTime;

/**
 * The server's receipt for one submitted task.
 *
 * @param duplicate true when this task id was already accepted: nothing new was written
 * @param dueAt when the first attempt is due (UTC); null if the server sent none
 * @param slot the slot (Kafka partition, unit of ownership) the task lives in
 */
public record SubmitResult(String taskId, boolean duplicate, TaskState state, OffsetDateTime dueAt, int slot) {}
