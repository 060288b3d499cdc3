"""The generated wire contract under short names: `pb` (messages) and `pb_grpc` (stubs)."""
from taskring._pb.taskring.v1 import taskring_pb2 as pb
from taskring._pb.taskring.v1 import taskring_pb2_grpc as pb_grpc

__all__ = ["pb", "pb_grpc"]
