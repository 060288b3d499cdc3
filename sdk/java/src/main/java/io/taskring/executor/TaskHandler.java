package io.taskring.executor;

/**
 * Runs one attempt of a task on a handler thread. Return to succeed; throw a
 * {@link io.taskring.errors.NonRetryableException} to dead-letter the task now; any other
 * exception asks for a retry. At the deadline the attempt is reported TIMED_OUT and the
 * thread is interrupted: honour interrupts, or pass {@link TaskContext#remaining()} on. The
 * same interrupt comes when a heartbeat's answer stops the attempt ({@link TaskContext#heartbeat(Object)}).
 * A task of a graph hands a result to the tasks that depend on it with
 * {@link TaskContext#setResult(Object)}: the return value Java's {@code void} leaves no room for.
 */
@FunctionalInterface
public interface TaskHandler {
    void handle(TaskContext ctx) throws Exception;
}
