package io.taskring.errors;

import io.grpc.Status;

/**
 * The request was rejected as bad input and nothing was written (INVALID_ARGUMENT).
 *
 * <p>The server words these as {@code "<field>: <problem>"} (dispatcher/errors.py), so
 * {@link #field()} names the offending field ({@code "tasks[2].payload_json"} in a batch),
 * or is {@code ""} when the server did not name one. Resubmitting fails the same way.
 */
public class InvalidArgumentException extends RpcException {
    private final String field;
    private final String problem;

    public InvalidArgumentException(String details, Throwable cause) {
        super(Status.Code.INVALID_ARGUMENT, details, cause);
        String text = details == null ? "" : details;
        int sep = text.indexOf(": ");
        // Same rule as Python's str.partition: a field is a non-empty word without spaces.
        if (sep > 0 && text.substring(0, sep).indexOf(' ') < 0) {
            this.field = text.substring(0, sep);
            this.problem = text.substring(sep + 2);
        } else {
            this.field = "";
            this.problem = text;
        }
    }

    public String field() {
        return field;
    }

    public String problem() {
        return problem;
    }
}
