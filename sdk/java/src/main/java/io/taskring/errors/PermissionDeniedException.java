package io.taskring.errors;

import io.grpc.Status;

/** The caller is not allowed to do this (PERMISSION_DENIED or UNAUTHENTICATED). */
public class PermissionDeniedException extends RpcException {
    public PermissionDeniedException(Status.Code code, String details, Throwable cause) {
        super(code, details, cause);
    }
}
