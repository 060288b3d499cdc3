"""The generated wire contract under short names: `pb` (messages) and `pb_grpc` (stubs),
and the one mapping between the SDK's TaskState and the wire's."""
from typing import cast

from taskring._pb.taskring.v1 import taskring_pb2 as pb
from taskring._pb.taskring.v1 import taskring_pb2_grpc as pb_grpc
from taskring.task import TaskState

# Typed as the generated enum (an int at run time), which the messages' fields accept.
STATE_TO_PB: dict[TaskState, pb.TaskState] = {
    state: cast("pb.TaskState", pb.TaskState.Value(f"TASK_STATE_{state.name}")) for state in TaskState}
STATE_FROM_PB: dict[int, TaskState] = {value: state for state, value in STATE_TO_PB.items()}

__all__ = ["STATE_FROM_PB", "STATE_TO_PB", "pb", "pb_grpc"]
