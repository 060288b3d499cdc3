package io.taskring.errors;

import io.grpc.Status;

/** No task has that id (or it was purged). (NOT_FOUND) */
public class NotFoundException extends RpcException {
    public NotFoundException(String details, Throwable cause) {
        super(Status.Code.NOT_FOUND, details, cause);
    }
}
