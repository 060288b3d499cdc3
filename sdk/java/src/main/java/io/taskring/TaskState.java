package io.taskring;

import io.taskring.errors.ProtocolException;
import taskring.v1.Taskring;

/**
 * Where a task is in its lifecycle: accepted -> queued -> dispatched -> running ->
 * succeeded, with running -> retry_wait -> queued for retries and running -> failed ->
 * dead_lettered when they run out, plus cancelled. A task of a graph starts accepted ->
 * waiting, and is then queued when the tasks it depends on allow it, or skipped.
 */
public enum TaskState {
    ACCEPTED(Taskring.TaskState.TASK_STATE_ACCEPTED),
    QUEUED(Taskring.TaskState.TASK_STATE_QUEUED),
    DISPATCHED(Taskring.TaskState.TASK_STATE_DISPATCHED),
    RUNNING(Taskring.TaskState.TASK_STATE_RUNNING),
    RETRY_WAIT(Taskring.TaskState.TASK_STATE_RETRY_WAIT),
    SUCCEEDED(Taskring.TaskState.TASK_STATE_SUCCEEDED),
    FAILED(Taskring.TaskState.TASK_STATE_FAILED),
    DEAD_LETTERED(Taskring.TaskState.TASK_STATE_DEAD_LETTERED),
    CANCELLED(Taskring.TaskState.TASK_STATE_CANCELLED),
    /** A task of a graph waiting for the tasks it depends on. */
    WAITING(Taskring.TaskState.TASK_STATE_WAITING),
    /** A task of a graph that will not run: its join rule can no longer be met. */
    SKIPPED(Taskring.TaskState.TASK_STATE_SKIPPED);

    private final Taskring.TaskState wire;

    TaskState(Taskring.TaskState wire) {
        this.wire = wire;
    }

    /** True when the task will not run again (short of a manual replay). */
    public boolean isTerminal() {
        return this == SUCCEEDED || this == DEAD_LETTERED || this == CANCELLED || this == SKIPPED;
    }

    /** The name the Python SDK uses ({@code "retry_wait"}), also what the CLI prints. */
    public String wireName() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }

    public Taskring.TaskState toWire() {
        return wire;
    }

    /** The state for a wire value; an unknown (or unset) value means this SDK is older than the server. */
    public static TaskState fromWire(int value) {
        for (TaskState s : values()) {
            if (s.wire.getNumber() == value) {
                return s;
            }
        }
        throw new ProtocolException("server sent unknown task state " + value + "; upgrade the taskring SDK");
    }
}
