package io.taskring.errors;

import io.grpc.Status;

/** The dispatcher (or a store under it) could not take the request now. Safe to retry; retry a submit with the same task id so the server can report it as a duplicate. (UNAVAILABLE) */
public class UnavailableException extends RpcException {
    public UnavailableException(String details, Throwable cause) {
        super(Status.Code.UNAVAILABLE, details, cause);
    }
}
