"""The public names of the SDK are a contract: adding one is a decision, removing one breaks users."""
import taskring
from taskring import errors

PUBLIC = {
    "AsyncClient",
    "Client",
    "Executor",
    "NonRetryableError",
    "Priority",
    "RetryPolicy",
    "RetryableError",
    "SubmitResult",
    "TaskContext",
    "TaskEvent",
    "TaskInfo",
    "TaskSpec",
    "TaskState",
    "TaskringError",
    "errors",
    "executor_tls_credentials",
    "executor_tls_from_env",
    "tls_credentials",
}

ERRORS = {
    "AlreadyExists",
    "DeadlineExceeded",
    "FailedPrecondition",
    "HandlerError",
    "InvalidArgument",
    "NonRetryableError",
    "NotFound",
    "PermissionDenied",
    "ProtocolError",
    "ResourceExhausted",
    "RetryableError",
    "RpcError",
    "TaskringError",
    "Unavailable",
    "from_rpc_error",
}


def test_top_level_names_are_pinned():
    assert set(taskring.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(taskring, name) is not None


def test_error_names_are_pinned_and_share_one_root():
    assert set(errors.__all__) == ERRORS
    for name in ERRORS - {"from_rpc_error", "TaskringError"}:
        assert issubclass(getattr(errors, name), errors.TaskringError), name


def test_no_error_shadows_a_builtin():
    import builtins

    assert not {n for n in ERRORS if hasattr(builtins, n)}


def test_task_states_are_the_lifecycle():
    assert [s.value for s in taskring.TaskState] == [
        "accepted", "queued", "dispatched", "running", "retry_wait",
        "succeeded", "failed", "dead_lettered", "cancelled", "waiting", "skipped",
    ]
