package io.taskring.errors;

/**
 * The task can never succeed as submitted: dead-letter it now, without retries
 * (OUTCOME_KIND_NON_RETRYABLE_FAILURE). It can still be replayed from the
 * dead-letter queue once the cause is fixed.
 */
public class NonRetryableException extends HandlerException {
    public NonRetryableException(String message) {
        super(message);
    }

    public NonRetryableException(String message, Throwable cause) {
        super(message, cause);
    }
}
