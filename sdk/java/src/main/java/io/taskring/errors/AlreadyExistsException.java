package io.taskring.errors;

import io.grpc.Status;

/** The request conflicts with something already stored (e.g. a unique key). (ALREADY_EXISTS) */
public class AlreadyExistsException extends RpcException {
    public AlreadyExistsException(String details, Throwable cause) {
        super(Status.Code.ALREADY_EXISTS, details, cause);
    }
}
