"""gRPC health and reflection on a real node: a real grpcurl (built from the Go module proxy)
lists and describes the services and calls Submit and GetTask with no proto file; health says
SERVING for the server and each service once the node is ready, and NOT_SERVING to a Watch
as soon as the node begins a graceful stop, before its gRPC server goes away."""
from __future__ import annotations

import json
import queue
import threading
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from harness.processes import NodeProcess
from tests.integration.polyglot import build_grpcurl, run_cli

pytestmark = pytest.mark.integration

SERVICES = ("taskring.v1.TaskService", "taskring.v1.CronService", "taskring.v1.PolicyService")


@pytest.fixture(scope="module")
def grpcurl(tmp_path_factory):
    return build_grpcurl(tmp_path_factory.mktemp("grpcurl-build") / "build.log")


def test_grpcurl_lists_describes_and_calls_the_api_without_the_proto_file(taskring_env, grpcurl):
    node = NodeProcess(taskring_env, "health-1", single=True).start()
    log = taskring_env.logs / "grpcurl.log"
    try:
        node.wait_ready()

        def call(*args: str):
            return run_cli([str(grpcurl), "-plaintext", *args], log)

        listed = call(node.target, "list").stdout.split()
        assert set(SERVICES) | {"grpc.health.v1.Health"} <= set(listed), listed
        described = call(node.target, "describe", "taskring.v1.TaskService").stdout
        assert "rpc Submit ( .taskring.v1.SubmitRequest ) returns ( .taskring.v1.SubmitResponse )" in described

        submitted = json.loads(call("-d", json.dumps({"task": {"namespace": "grpcurl", "taskType": "ping",
                                                              "payloadJson": '{"n": 1}', "delayMs": "600000"}}),
                                    node.target, "taskring.v1.TaskService/Submit").stdout)
        # grpcurl prints the proto's field names.
        assert submitted["task_id"] and submitted["state"] == "TASK_STATE_QUEUED", submitted
        got = json.loads(call("-d", json.dumps({"taskId": submitted["task_id"]}), node.target,
                              "taskring.v1.TaskService/GetTask").stdout)
        assert got["task"]["namespace"] == "grpcurl" and json.loads(got["task"]["payload_json"]) == {"n": 1}, got

        refused = run_cli([str(grpcurl), "-plaintext", "-d", json.dumps({"task": {"namespace": "Bad NS"}}),
                           node.target, "taskring.v1.TaskService/Submit"], log)
        assert refused.returncode != 0 and "task.namespace" in refused.stdout + refused.stderr, refused.describe()

        for service in ("", *SERVICES):
            health = json.loads(call("-d", json.dumps({"service": service}), node.target,
                                     "grpc.health.v1.Health/Check").stdout)
            assert health == {"status": "SERVING"}, (service, health)
    finally:
        node.terminate()


def test_health_turns_not_serving_first_when_the_node_stops(taskring_env):
    node = NodeProcess(taskring_env, "health-2", single=True).start()
    seen: queue.Queue = queue.Queue()
    try:
        node.wait_ready()
        channel = grpc.insecure_channel(node.target)
        stub: Any = health_pb2_grpc.HealthStub(channel)   # the stubs' types lack the methods
        with pytest.raises(grpc.RpcError) as unknown:
            stub.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=10)
        assert unknown.value.code() == grpc.StatusCode.NOT_FOUND
        watch = stub.Watch(health_pb2.HealthCheckRequest(service="taskring.v1.TaskService"), timeout=120)

        def follow() -> None:
            try:
                for answer in watch:
                    seen.put(answer.status)
            except grpc.RpcError as exc:
                seen.put(exc.code())
        threading.Thread(target=follow, daemon=True).start()
        assert seen.get(timeout=30) == health_pb2.HealthCheckResponse.SERVING
        node.terminate()
        after = seen.get(timeout=30)
        # The drain comes before the server stops: the Watch hears NOT_SERVING, not just the end.
        assert after == health_pb2.HealthCheckResponse.NOT_SERVING, after
        channel.close()
    finally:
        node.stop()
