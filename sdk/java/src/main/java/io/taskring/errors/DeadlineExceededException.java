package io.taskring.errors;

import io.grpc.Status;

/** No answer within the client's RPC timeout. The request may or may not have been applied: retry a submit with the same task id, check a cancel with get. (DEADLINE_EXCEEDED) */
public class DeadlineExceededException extends RpcException {
    public DeadlineExceededException(String details, Throwable cause) {
        super(Status.Code.DEADLINE_EXCEEDED, details, cause);
    }
}
