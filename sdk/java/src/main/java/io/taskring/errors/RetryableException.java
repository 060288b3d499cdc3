package io.taskring.errors;

/**
 * Ask for another attempt after the task's retry backoff. Any other unexpected
 * exception means the same (an unexpected bug is more often transient than
 * permanent, and a dead letter is the more expensive mistake); throw this one to
 * say so on purpose.
 */
public class RetryableException extends HandlerException {
    public RetryableException(String message) {
        super(message);
    }

    public RetryableException(String message, Throwable cause) {
        super(message, cause);
    }
}
