package io.taskring.client;

import io.taskring.TaskState;
import java.time.OffsetDateTime;

/**
 * One recorded transition of a task.
 *
 * @param at when it happened (UTC, millisecond precision)
 * @param node the dispatcher node that recorded it
 * @param detail error text for failures, reason for cancels; often empty
 */
public record TaskEvent(TaskState state, OffsetDateTime at, String node, long attempt, String detail) {}
