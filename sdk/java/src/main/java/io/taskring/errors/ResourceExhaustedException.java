package io.taskring.errors;

import io.grpc.Status;

/** The server is shedding load or the message was too large: back off, then retry. (RESOURCE_EXHAUSTED) */
public class ResourceExhaustedException extends RpcException {
    public ResourceExhaustedException(String details, Throwable cause) {
        super(Status.Code.RESOURCE_EXHAUSTED, details, cause);
    }
}
