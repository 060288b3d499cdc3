"""The client a business service uses to submit, cancel and look up tasks.

`Client` (blocking, over `grpc`) and `AsyncClient` (asyncio, over `grpc.aio`)
have the same methods and arguments; both build requests and read responses
through `_envelope.py`, so they cannot drift apart. Every gRPC failure comes out
as a `taskring.errors.RpcError` subclass.

For throughput, prefer `submit_batch`: one RPC carries the whole batch, and a
Python process tops out at a few thousand unary calls per second (FIELD-NOTES.md).
The target may name several dispatcher nodes (any node accepts any task), e.g.
``"ipv4:10.0.0.1:7070,10.0.0.2:7070"`` with
``options=[("grpc.lb_policy_name", "round_robin")]``.

Nothing is retried automatically, because a resubmission without a `task_id`
could create a second task. Pass your own `task_id` and a retried submit is
reported back as `duplicate=True` instead.
"""
from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any

import grpc

from taskring import _envelope
from taskring._auth import AsyncBearerToken, BearerToken
from taskring.cron import CronRules
from taskring.errors import ProtocolError, ResourceExhausted, from_rpc_error
from taskring.graph import (
    AddedTasks,
    Additions,
    CancelledGraph,
    CancelMode,
    Graph,
    GraphInfo,
    SubmittedGraph,
    added_from_pb,
    cancel_graph_request,
    graph_from_pb,
    submitted_from_pb,
)
from taskring.policies import Policies
from taskring.task import (
    Priority,
    RetryPolicy,
    Seconds,
    SubmitResult,
    TaskInfo,
    TaskSpec,
    TaskState,
)
from taskring.wire import pb, pb_grpc

_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""Batches of thousands of tasks exceed gRPC's 4 MiB default."""

_DEFAULT_OPTIONS: tuple[tuple[str, Any], ...] = (
    ("grpc.max_send_message_length", _MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", _MAX_MESSAGE_BYTES),
)


_FIRST_BACKOFF_S, _MAX_BACKOFF_S = 0.1, 5.0


class _OverloadRetry:
    """When to retry a submit the server refused as overloaded (RESOURCE_EXHAUSTED).

    Only when every task has a task_id: the server wrote nothing, and a retried
    submit with the same id is recognised as a duplicate if an earlier try did get
    through. The wait is the server's hint (or an exponential backoff without one),
    with jitter, for as long as `budget_s` allows; then the refusal is raised."""

    def __init__(self, budget_s: float, specs: Sequence[TaskSpec]):
        self._deadline = time.monotonic() + budget_s
        self._backoff_s = _FIRST_BACKOFF_S
        self._allowed = budget_s > 0 and all(s.task_id for s in specs)

    def wait_s(self, refusal: ResourceExhausted) -> float | None:
        """How long to wait before the next try, or None: raise the refusal."""
        if not self._allowed:
            return None
        wait = (refusal.retry_after_s or self._backoff_s) * random.uniform(1.0, 1.25)
        self._backoff_s = min(self._backoff_s * 2, _MAX_BACKOFF_S)
        if time.monotonic() + wait > self._deadline:
            return None
        return wait


def _channel_options(options: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
    given = {name for name, _ in options}
    return [*options, *(o for o in _DEFAULT_OPTIONS if o[0] not in given)]


def _submit_request(spec: TaskSpec) -> pb.SubmitRequest:
    return pb.SubmitRequest(task=_envelope.spec_to_pb(spec))


def _batch_request(specs: Sequence[TaskSpec]) -> pb.SubmitBatchRequest:
    return pb.SubmitBatchRequest(tasks=[_envelope.spec_to_pb(s) for s in specs])


def _batch_results(specs: Sequence[TaskSpec], resp: pb.SubmitBatchResponse) -> list[SubmitResult]:
    if len(resp.results) != len(specs):
        raise ProtocolError(f"SubmitBatch returned {len(resp.results)} results for {len(specs)} tasks")
    return [_envelope.submit_result_from_pb(r) for r in resp.results]


def _spec(
    namespace: str,
    task_type: str,
    payload: Mapping[str, Any] | None,
    task_id: str | None,
    delay: timedelta | Seconds | None,
    schedule_time: datetime | None,
    timeout: timedelta | Seconds | None,
    max_retries: int | None,
    retry_policy: RetryPolicy | None,
    priority: Priority | str,
    unique_key: str | None,
    trace_id: str | None,
    payload_version: int,
    unique_ttl: timedelta | Seconds | None = None,
) -> TaskSpec:
    return TaskSpec(
        namespace=namespace,
        task_type=task_type,
        payload=payload,
        task_id=task_id,
        delay=delay,
        schedule_time=schedule_time,
        timeout=timeout,
        max_retries=max_retries,
        retry_policy=retry_policy,
        priority=priority,
        unique_key=unique_key,
        trace_id=trace_id,
        payload_version=payload_version,
        unique_ttl=unique_ttl,
    )


class Client:
    """Blocking client of the TaskService. Thread-safe; share one per process."""

    def __init__(
        self,
        target: str,
        *,
        rpc_timeout_s: float | None = 10.0,
        credentials: grpc.ChannelCredentials | None = None,
        options: Sequence[tuple[str, Any]] = (),
        overload_retry_s: float = 30.0,
        token: str | None = None,
    ) -> None:
        """Connect (lazily) to `target`, a gRPC target such as ``"127.0.0.1:7070"``.

        `rpc_timeout_s` bounds every call (None: no bound); `credentials` selects
        TLS (`taskring.tls_credentials`); `token` is sent on every call as
        ``authorization: Bearer <token>`` (docs/security.md; read it from a file or the
        environment, never from code); `options` are extra gRPC channel options. A submit whose tasks all have
        a task_id is retried for up to `overload_retry_s` while the server refuses it
        as overloaded (`ResourceExhausted`, waiting as the server says); 0: never.
        """
        self._overload_retry_s = overload_retry_s
        opts = _channel_options(options)
        channel = (grpc.insecure_channel(target, options=opts) if credentials is None
                   else grpc.secure_channel(target, credentials, options=opts))
        self._channel = channel if token is None else grpc.intercept_channel(channel, BearerToken(token))
        self._stub = pb_grpc.TaskServiceStub(self._channel)
        self._timeout = rpc_timeout_s
        self.cron = CronRules(self._channel, rpc_timeout_s)
        """The cron rules of the cluster (taskring.cron): create, update, get, list, pause,
        resume, delete."""
        self.policies = Policies(self._channel, rpc_timeout_s)
        """The task types' policies set through the API (taskring.policies): get, list, put, delete."""
        self._graphs = pb_grpc.GraphServiceStub(self._channel)

    def submit(
        self,
        namespace: str,
        task_type: str,
        payload: Mapping[str, Any] | None = None,
        *,
        task_id: str | None = None,
        delay: timedelta | Seconds | None = None,
        schedule_time: datetime | None = None,
        timeout: timedelta | Seconds | None = None,
        max_retries: int | None = None,
        retry_policy: RetryPolicy | None = None,
        priority: Priority | str = "normal",
        unique_key: str | None = None,
        trace_id: str | None = None,
        payload_version: int = 0,
        unique_ttl: timedelta | Seconds | None = None,
    ) -> SubmitResult:
        """Submit one task. The arguments are those of `TaskSpec`."""
        spec = _spec(namespace, task_type, payload, task_id, delay, schedule_time, timeout,
                     max_retries, retry_policy, priority, unique_key, trace_id, payload_version, unique_ttl)
        resp = self._call_retrying_overload(self._stub.Submit, _submit_request(spec), [spec])
        return _envelope.submit_result_from_pb(resp)

    def submit_batch(self, specs: Sequence[TaskSpec]) -> list[SubmitResult]:
        """Submit many tasks in one RPC; results are in the order of `specs`.

        The server validates the whole batch before writing any of it, so an
        `InvalidArgument` (field ``"tasks[i]...."``) means nothing was written.
        """
        if not specs:
            return []
        resp = self._call_retrying_overload(self._stub.SubmitBatch, _batch_request(specs), specs)
        return _batch_results(specs, resp)

    def _call_retrying_overload(self, method, request, specs: Sequence[TaskSpec]):
        retry = _OverloadRetry(self._overload_retry_s, specs)
        while True:
            try:
                return method(request, timeout=self._timeout)
            except grpc.RpcError as e:
                error = from_rpc_error(e)
                wait = retry.wait_s(error) if isinstance(error, ResourceExhausted) else None
                if wait is None:
                    raise error from e
            time.sleep(wait)

    def submit_graph(self, graph: Graph) -> SubmittedGraph:
        """Submit a graph of tasks (taskring.graph) in one call. Validated whole before anything
        is written (`InvalidArgument` naming the field, ``"tasks[2].depends_on[0]"``); a retry
        with the same graph id and tasks answers the graph as it stands (``duplicate``)."""
        try:
            resp = self._graphs.SubmitGraph(graph.to_pb(), timeout=self._timeout)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from e
        return submitted_from_pb(resp)

    def add_graph_tasks(self, namespace: str, graph_id: str, adder_task_id: str, adder_attempt: int,
                        additions: Additions, *, also_before: Sequence[str] = ()) -> AddedTasks:
        """Add tasks to a graph from its running task `adder_task_id` (what ``ctx.add_tasks``
        calls; docs/graphs.md, "Adding tasks while it runs")."""
        try:
            resp = self._graphs.AddGraphTasks(additions.to_pb(namespace, graph_id, adder_task_id, adder_attempt,
                                                              also_before), timeout=self._timeout)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from e
        return added_from_pb(resp)

    def get_graph(self, namespace: str, graph_id: str, *, with_results: bool = False) -> GraphInfo:
        """The graph: each task's state, its edges and what a waiting one waits for; with
        `with_results`, each task's kept result (``nodes[key].result``)."""
        try:
            resp = self._graphs.GetGraph(pb.GetGraphRequest(namespace=namespace, graph_id=graph_id,
                                                            with_results=with_results), timeout=self._timeout)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from e
        return graph_from_pb(resp)

    def cancel_graph(self, namespace: str, graph_id: str, *, mode: CancelMode | str = "graceful",
                     reason: str = "") -> CancelledGraph:
        """Cancel every task of the graph that has not ended. ``"graceful"``: running tasks finish
        (a failed one is not retried) and nothing new starts; ``"immediate"``: running tasks of
        types that heartbeat are told to stop too. Returns how many were cancelled and the keys
        of those left running."""
        try:
            resp = self._graphs.CancelGraph(cancel_graph_request(namespace, graph_id, mode, reason),
                                            timeout=self._timeout)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from e
        return CancelledGraph(resp.cancelled, tuple(resp.running))

    def cancel(self, task_id: str) -> TaskState:
        """Cancel a task that has not finished; returns its state (CANCELLED).

        Raises `NotFound` for an unknown id and `FailedPrecondition` when the task
        is already past the point where it can be stopped.
        """
        try:
            resp = self._stub.Cancel(pb.CancelRequest(task_id=task_id), timeout=self._timeout)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from e
        return _envelope.state_from_pb(resp.state)

    def get(self, task_id: str) -> TaskInfo:
        """The task as stored: state, attempts, last error and its history."""
        try:
            resp = self._stub.GetTask(pb.GetTaskRequest(task_id=task_id), timeout=self._timeout)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from e
        return _envelope.task_info_from_pb(resp)

    def close(self) -> None:
        """Close the channel. Safe to call twice."""
        self._channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncClient:
    """asyncio client of the TaskService, with the same methods as `Client`.

    Create it inside the event loop that will use it (grpc.aio binds a channel to
    its loop).
    """

    def __init__(
        self,
        target: str,
        *,
        rpc_timeout_s: float | None = 10.0,
        credentials: grpc.ChannelCredentials | None = None,
        options: Sequence[tuple[str, Any]] = (),
        overload_retry_s: float = 30.0,
        token: str | None = None,
    ) -> None:
        self._overload_retry_s = overload_retry_s
        opts = _channel_options(options)
        interceptors = [AsyncBearerToken(token)] if token is not None else None
        if credentials is None:
            self._channel = grpc.aio.insecure_channel(target, options=opts, interceptors=interceptors)
        else:
            self._channel = grpc.aio.secure_channel(target, credentials, options=opts, interceptors=interceptors)
        self._stub = pb_grpc.TaskServiceStub(self._channel)
        self._graphs = pb_grpc.GraphServiceStub(self._channel)
        self._timeout = rpc_timeout_s

    async def submit_graph(self, graph: Graph) -> SubmittedGraph:
        """As `Client.submit_graph`."""
        try:
            resp = await self._graphs.SubmitGraph(graph.to_pb(), timeout=self._timeout)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from e
        return submitted_from_pb(resp)

    async def add_graph_tasks(self, namespace: str, graph_id: str, adder_task_id: str, adder_attempt: int,
                              additions: Additions, *, also_before: Sequence[str] = ()) -> AddedTasks:
        """As `Client.add_graph_tasks`."""
        try:
            resp = await self._graphs.AddGraphTasks(additions.to_pb(namespace, graph_id, adder_task_id,
                                                                    adder_attempt, also_before), timeout=self._timeout)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from e
        return added_from_pb(resp)

    async def get_graph(self, namespace: str, graph_id: str, *, with_results: bool = False) -> GraphInfo:
        """As `Client.get_graph`."""
        try:
            resp = await self._graphs.GetGraph(pb.GetGraphRequest(namespace=namespace, graph_id=graph_id,
                                                                  with_results=with_results), timeout=self._timeout)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from e
        return graph_from_pb(resp)

    async def cancel_graph(self, namespace: str, graph_id: str, *, mode: CancelMode | str = "graceful",
                           reason: str = "") -> CancelledGraph:
        """As `Client.cancel_graph`."""
        try:
            resp = await self._graphs.CancelGraph(cancel_graph_request(namespace, graph_id, mode, reason),
                                                  timeout=self._timeout)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from e
        return CancelledGraph(resp.cancelled, tuple(resp.running))

    async def submit(
        self,
        namespace: str,
        task_type: str,
        payload: Mapping[str, Any] | None = None,
        *,
        task_id: str | None = None,
        delay: timedelta | Seconds | None = None,
        schedule_time: datetime | None = None,
        timeout: timedelta | Seconds | None = None,
        max_retries: int | None = None,
        retry_policy: RetryPolicy | None = None,
        priority: Priority | str = "normal",
        unique_key: str | None = None,
        trace_id: str | None = None,
        payload_version: int = 0,
        unique_ttl: timedelta | Seconds | None = None,
    ) -> SubmitResult:
        """Submit one task. The arguments are those of `TaskSpec`."""
        spec = _spec(namespace, task_type, payload, task_id, delay, schedule_time, timeout,
                     max_retries, retry_policy, priority, unique_key, trace_id, payload_version, unique_ttl)
        resp = await self._call_retrying_overload(self._stub.Submit, _submit_request(spec), [spec])
        return _envelope.submit_result_from_pb(resp)

    async def submit_batch(self, specs: Sequence[TaskSpec]) -> list[SubmitResult]:
        """Submit many tasks in one RPC; see `Client.submit_batch`."""
        if not specs:
            return []
        resp = await self._call_retrying_overload(self._stub.SubmitBatch, _batch_request(specs), specs)
        return _batch_results(specs, resp)

    async def _call_retrying_overload(self, method, request, specs: Sequence[TaskSpec]):
        retry = _OverloadRetry(self._overload_retry_s, specs)
        while True:
            try:
                return await method(request, timeout=self._timeout)
            except grpc.RpcError as e:
                error = from_rpc_error(e)
                wait = retry.wait_s(error) if isinstance(error, ResourceExhausted) else None
                if wait is None:
                    raise error from e
            await asyncio.sleep(wait)

    async def cancel(self, task_id: str) -> TaskState:
        """Cancel a task; see `Client.cancel`."""
        try:
            resp = await self._stub.Cancel(pb.CancelRequest(task_id=task_id), timeout=self._timeout)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from e
        return _envelope.state_from_pb(resp.state)

    async def get(self, task_id: str) -> TaskInfo:
        """The task as stored; see `Client.get`."""
        try:
            resp = await self._stub.GetTask(pb.GetTaskRequest(task_id=task_id), timeout=self._timeout)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from e
        return _envelope.task_info_from_pb(resp)

    async def close(self) -> None:
        """Close the channel. Safe to call twice."""
        await self._channel.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
