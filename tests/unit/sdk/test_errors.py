"""gRPC status codes come back to callers as the SDK's error classes."""
import grpc
import pytest

from taskring import errors


class _FakeRpcError(grpc.RpcError):
    def __init__(self, code, details):
        self._code, self._details = code, details

    def code(self):
        return self._code

    def details(self):
        return self._details


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        (grpc.StatusCode.INVALID_ARGUMENT, errors.InvalidArgument),
        (grpc.StatusCode.NOT_FOUND, errors.NotFound),
        (grpc.StatusCode.ALREADY_EXISTS, errors.AlreadyExists),
        (grpc.StatusCode.FAILED_PRECONDITION, errors.FailedPrecondition),
        (grpc.StatusCode.UNAVAILABLE, errors.Unavailable),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, errors.ResourceExhausted),
        (grpc.StatusCode.DEADLINE_EXCEEDED, errors.DeadlineExceeded),
        (grpc.StatusCode.PERMISSION_DENIED, errors.PermissionDenied),
        (grpc.StatusCode.UNAUTHENTICATED, errors.PermissionDenied),
    ],
)
def test_each_code_maps_to_its_class(code, cls):
    err = errors.from_rpc_error(_FakeRpcError(code, "something"))
    assert type(err) is cls
    assert err.code == code
    assert err.details == "something"
    assert isinstance(err, errors.TaskringError)


def test_other_codes_are_a_plain_rpc_error():
    err = errors.from_rpc_error(_FakeRpcError(grpc.StatusCode.INTERNAL, "boom"))
    assert type(err) is errors.RpcError
    assert err.code == grpc.StatusCode.INTERNAL
    assert "boom" in str(err)


@pytest.mark.parametrize(
    ("details", "field", "problem"),
    [
        ("tasks[2].payload_json: must be a JSON object", "tasks[2].payload_json", "must be a JSON object"),
        ("task.schedule_time: needs an offset: got 2026-01-01T00:00", "task.schedule_time",
         "needs an offset: got 2026-01-01T00:00"),
        ("the request is bad", "", "the request is bad"),
        ("", "", ""),
    ],
)
def test_invalid_argument_names_the_field(details, field, problem):
    err = errors.InvalidArgument(details)
    assert (err.field, err.problem) == (field, problem)


def test_handler_errors_are_taskring_errors_but_not_rpc_errors():
    for cls in (errors.RetryableError, errors.NonRetryableError):
        assert issubclass(cls, errors.HandlerError)
        assert issubclass(cls, errors.TaskringError)
        assert not issubclass(cls, errors.RpcError)
