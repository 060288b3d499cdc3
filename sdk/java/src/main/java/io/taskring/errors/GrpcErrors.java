package io.taskring.errors;

import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;

/** Turns a gRPC failure into the matching {@link RpcException} (Python: {@code from_rpc_error}). */
public final class GrpcErrors {
    private GrpcErrors() {}

    /** The typed exception for {@code error}; anything that is not a gRPC status is UNKNOWN. */
    public static RpcException fromThrowable(Throwable error) {
        Status status;
        if (error instanceof StatusRuntimeException sre) {
            status = sre.getStatus();
        } else if (error instanceof StatusException se) {
            status = se.getStatus();
        } else {
            status = Status.fromThrowable(error);
        }
        return fromStatus(status, error);
    }

    public static RpcException fromStatus(Status status, Throwable cause) {
        String details = status.getDescription() == null ? "" : status.getDescription();
        return switch (status.getCode()) {
            case INVALID_ARGUMENT -> new InvalidArgumentException(details, cause);
            case NOT_FOUND -> new NotFoundException(details, cause);
            case ALREADY_EXISTS -> new AlreadyExistsException(details, cause);
            case FAILED_PRECONDITION -> new FailedPreconditionException(details, cause);
            case UNAVAILABLE -> new UnavailableException(details, cause);
            case RESOURCE_EXHAUSTED -> new ResourceExhaustedException(details, cause);
            case DEADLINE_EXCEEDED -> new DeadlineExceededException(details, cause);
            case PERMISSION_DENIED, UNAUTHENTICATED -> new PermissionDeniedException(status.getCode(), details, cause);
            default -> new RpcException(status.getCode(), details, cause);
        };
    }
}
