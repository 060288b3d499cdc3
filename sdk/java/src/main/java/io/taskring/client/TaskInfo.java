package io.taskring.client;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.taskring.Priority;
import io.taskring.TaskState;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.List;

/**
 * A task as stored, with its state and history oldest first ({@link TaskringClient#get}).
 * Nullable: dueAt, createdAt, scheduleTime, timeout, maxRetries (unset on the wire).
 *
 * @param waiting why a due task has not started when its owner holds it at a limit of its type,
 *     e.g. {@code "concurrency limit per_type (at most 20 running)"}; {@code ""} otherwise
 */
public record TaskInfo(
        String taskId,
        String namespace,
        String taskType,
        TaskState state,
        long attempts,
        OffsetDateTime dueAt,
        int slot,
        ObjectNode payload,
        long payloadVersion,
        Priority priority,
        String lastError,
        String lastStackTrace,
        List<TaskEvent> history,
        String waiting,
        OffsetDateTime createdAt,
        OffsetDateTime scheduleTime,
        Duration timeout,
        Integer maxRetries,
        String uniqueKey,
        String traceId) {}
