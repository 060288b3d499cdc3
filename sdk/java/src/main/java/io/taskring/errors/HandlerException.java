package io.taskring.errors;

/** Base of the exceptions a handler throws to say how its failure is retried. */
public class HandlerException extends TaskringException {
    public HandlerException(String message) {
        super(message);
    }

    public HandlerException(String message, Throwable cause) {
        super(message, cause);
    }
}
