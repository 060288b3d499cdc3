package io.taskring.executor;

import java.util.concurrent.CompletableFuture;

/**
 * A handler that returns at once and completes its future later. The future's outcome
 * counts as a sync handler's return or exception. At the deadline the attempt is
 * reported TIMED_OUT and the future is cancelled; likewise when a heartbeat's answer stops
 * the attempt ({@link TaskContext#heartbeat(Object)}). A result for the tasks of its graph is
 * given with {@link TaskContext#setResult(Object)} before the future completes.
 */
@FunctionalInterface
public interface AsyncTaskHandler {
    CompletableFuture<Void> handle(TaskContext ctx) throws Exception;
}
