package io.taskring.errors;

import io.grpc.Status;

/** The task is not in a state that allows the request (e.g. cancel after it finished). (FAILED_PRECONDITION) */
public class FailedPreconditionException extends RpcException {
    public FailedPreconditionException(String details, Throwable cause) {
        super(Status.Code.FAILED_PRECONDITION, details, cause);
    }
}
