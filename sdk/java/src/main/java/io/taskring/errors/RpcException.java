package io.taskring.errors;

import io.grpc.Status;

/**
 * A call to a dispatcher failed with a gRPC status (Python: {@code RpcError}).
 *
 * <p>The subclasses name the codes a caller is expected to handle; any other code
 * arrives as a plain {@code RpcException} with {@link #code()} set.
 */
public class RpcException extends TaskringException {
    private final Status.Code code;
    private final String details;

    public RpcException(Status.Code code, String details, Throwable cause) {
        super(details == null || details.isEmpty() ? code.name() : code.name() + ": " + details, cause);
        this.code = code;
        this.details = details == null ? "" : details;
    }

    /** The gRPC status code the server answered with. */
    public Status.Code code() {
        return code;
    }

    /** The server's message, {@code ""} when it sent none. */
    public String details() {
        return details;
    }
}
