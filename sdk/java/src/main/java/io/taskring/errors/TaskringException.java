package io.taskring.errors;

/**
 * Root of every exception the SDK throws on purpose (Python: {@code TaskringError}).
 *
 * <p>Unchecked, so it travels through {@code CompletableFuture} chains without
 * wrapping in every lambda; the blocking methods unwrap it again.
 */
public class TaskringException extends RuntimeException {
    public TaskringException(String message) {
        super(message);
    }

    public TaskringException(String message, Throwable cause) {
        super(message, cause);
    }
}
