package io.taskring.errors;

/** The server sent something this SDK version does not understand (e.g. a new task state). */
public class ProtocolException extends TaskringException {
    public ProtocolException(String message) {
        super(message);
    }

    public ProtocolException(String message, Throwable cause) {
        super(message, cause);
    }
}
