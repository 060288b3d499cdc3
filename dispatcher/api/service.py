"""The task service: validate, route, write durably, answer.

Routing: a task due within the route threshold is written to MySQL as
`enqueued` and produced to its priority's topic (partition = slot) with
acks=all; a later one is written as `pending` for the slot owner's poller. The
row is written first so that every accepted task has a state; if Kafka then
refuses, the task is moved to the MySQL path and still accepted. A crash between
the two is caught by the owner's sweeper (see engine.py).
"""
from __future__ import annotations

import asyncio
import collections
import dataclasses
import datetime as dt
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import grpc

from cluster.slots import slot_of
from dispatcher.api.admission import Admission
from dispatcher.api.request_decoding import decode_request
from dispatcher.api.validation import Limits, ValidTask, validate_batch, validate_task
from dispatcher.auth import tokens as calls
from dispatcher.auth.grpc_auth import Authorizer
from dispatcher.base.clock import Clock, datetime_to_ms, ms_to_aware, ms_to_datetime, rfc3339
from dispatcher.base.config import positive
from dispatcher.base.errors import (
    RETRY_AFTER_KEY,
    InvalidArgument,
    Overloaded,
    TaskIdTaken,
    TaskringError,
    bounded,
)
from dispatcher.base.metrics import NodeMetrics
from dispatcher.base.tracing import NodeTracing, is_traceparent
from dispatcher.engine.ready import NORMAL, priority_class
from dispatcher.engine.task_stats import TaskStats
from dispatcher.log.codec import queued_message, queued_message_of_envelope
from dispatcher.log.interface import LogProducer
from dispatcher.store import errors as store_errors
from dispatcher.store import records as r
from dispatcher.store.interface import TaskStoreProtocol
from taskring.wire import STATE_TO_PB, pb, pb_grpc

log = logging.getLogger(__name__)

def api_state(status: str, attempts: int, trigger_at: dt.datetime | None, now: dt.datetime) -> pb.TaskState:
    """The wire's lifecycle state of a stored row (records.api_state, as pb.TaskState)."""
    return STATE_TO_PB[r.api_state(status, attempts, trigger_at, now)]


STORE_ERROR_CODES: tuple[tuple[type[TaskringError], grpc.StatusCode], ...] = (
    (store_errors.RuleNotFound, grpc.StatusCode.NOT_FOUND),
    (store_errors.RuleExists, grpc.StatusCode.ALREADY_EXISTS),
    (store_errors.NotDeadLettered, grpc.StatusCode.FAILED_PRECONDITION),
    (store_errors.UniqueKeyHeld, grpc.StatusCode.FAILED_PRECONDITION),
    (store_errors.ChangedSinceRead, grpc.StatusCode.ABORTED),
    (store_errors.JobNotFound, grpc.StatusCode.NOT_FOUND),
    (store_errors.JobStateConflict, grpc.StatusCode.FAILED_PRECONDITION),
    (store_errors.PolicyNotFound, grpc.StatusCode.NOT_FOUND),
    (store_errors.PolicyRevisionMismatch, grpc.StatusCode.FAILED_PRECONDITION),
    (store_errors.GraphExists, grpc.StatusCode.ALREADY_EXISTS),
    (store_errors.GraphNotFound, grpc.StatusCode.NOT_FOUND),
    (store_errors.NotSkippable, grpc.StatusCode.FAILED_PRECONDITION),
    (store_errors.AdderNotRunning, grpc.StatusCode.FAILED_PRECONDITION),
    (store_errors.NotWaiting, grpc.StatusCode.FAILED_PRECONDITION),
    (store_errors.GraphCancelled, grpc.StatusCode.FAILED_PRECONDITION),
)
"""The gRPC status of each refusal of the stores beside the task store (store/errors.py),
which carry none themselves."""


def status_code(exc: TaskringError) -> grpc.StatusCode:
    """The gRPC status an error is answered with, at either edge (the admin endpoint turns
    it into an HTTP status)."""
    for kind, code in STORE_ERROR_CODES:
        if isinstance(exc, kind):
            return code
    return exc.code


def _guarded(method):
    """Map the error tree to gRPC status codes at the edge."""
    async def wrapper(self, request, context):
        try:
            return await method(self, request, context)
        except TaskringError as exc:
            await self._abort(exc, context)
        except Exception as exc:
            # What grpc itself would answer (UNKNOWN "Unexpected ..."), but cut short: the
            # text of an unexpected error may carry the request's values in full.
            log.exception("%s failed", method.__name__)
            await context.abort(grpc.StatusCode.UNKNOWN, bounded(f"Unexpected {type(exc)}: {exc}"))
    wrapper.__name__ = method.__name__
    return wrapper


@dataclasses.dataclass(frozen=True, slots=True)
class ApiParams:
    node_id: str
    """Who wrote a row or cancelled a task, in its history."""
    slot_count: int
    """The slot of a task is a hash of its namespace and type over this many slots."""
    route_threshold_ms: int
    """A task due within this goes through Kafka into the owner's heap; a later one waits in MySQL."""
    topic_for: Callable[[int], str]
    """The Kafka topic of a priority."""

    def __post_init__(self) -> None:
        positive(self, "slot_count", "route_threshold_ms")
        if not self.node_id:
            raise ValueError("ApiParams.node_id must not be empty")


class TaskApi(pb_grpc.TaskServiceServicer):
    def __init__(self, *, params: ApiParams, store: TaskStoreProtocol, producer: LogProducer,
                 metrics: NodeMetrics, limits: Limits, clock: Clock | None = None,
                 admission: Admission | None = None, auth: Authorizer | None = None,
                 stats: TaskStats | None = None, tracing: NodeTracing | None = None,
                 graph_waiting: Callable[[str], str] | None = None):
        self._params = params
        # What a waiting task of a graph waits for (GraphStore.waiting_for); None: no graphs.
        self._graph_waiting = graph_waiting
        self._tracing = tracing   # spans of traced tasks (base/tracing.py); None: off
        self._auth = auth or Authorizer(None)
        self._stats = stats
        self._admission = admission
        self._store = store
        self._producer = producer
        self._metrics = metrics
        # Children resolved once, not a labels() lookup per call.
        self._submit_latency = {m: metrics.submit_latency.labels(m) for m in ("Submit", "SubmitBatch")}
        self._limits = limits
        self._clock = clock or Clock()

    async def _abort(self, exc: TaskringError, context) -> None:
        if isinstance(exc, InvalidArgument):
            self._metrics.rejected.labels(exc.field.split(".")[-1]).inc()
        if isinstance(exc, Overloaded):
            self._metrics.overloaded.inc()
            context.set_trailing_metadata(((RETRY_AFTER_KEY, str(exc.retry_after_ms)),))
        # The messages quote input cut short already (errors.quote); the cut here guards
        # the trailer's size limit against any text that did not go through it.
        await context.abort(status_code(exc), bounded(str(exc)))

    @_guarded
    async def Submit(self, request: pb.SubmitRequest, context) -> pb.SubmitResponse:
        with self._submit_latency["Submit"].time():  # refusals too: what the caller waited
            token = self._auth.token(context, calls.SUBMIT)
            self._admit((request.task.priority,))
            now_ms = self._clock.now_ms()
            valid = validate_task(request.task, now=ms_to_aware(now_ms), limits=self._limits)
            self._auth.check_namespaces(token, calls.SUBMIT, (valid.namespace,))
            try:
                return (await self._accept([valid], now_ms))[0]
            except TaskIdTaken as exc:
                raise exc.at("task.task_id") from None

    @_guarded
    async def SubmitBatch(self, request: pb.SubmitBatchRequest, context) -> pb.SubmitBatchResponse:
        with self._submit_latency["SubmitBatch"].time():
            token = self._auth.token(context, calls.SUBMIT)
            self._admit(t.priority for t in request.tasks)
            now_ms = self._clock.now_ms()
            valid = validate_batch(request.tasks, now=ms_to_aware(now_ms), limits=self._limits)
            # Every task's namespace, before any is written: a batch is all or nothing.
            self._auth.check_namespaces(token, calls.SUBMIT, (v.namespace for v in valid))
            try:
                return pb.SubmitBatchResponse(results=await self._accept(valid, now_ms))
            except TaskIdTaken as exc:
                index = next(i for i, v in enumerate(valid) if v.task_id == exc.task_id)
                raise exc.at(f"tasks[{index}].task_id") from None

    def _trace_accept(self, fresh: Sequence[r.NewTask], start_ms: int) -> None:
        """`taskring.accept` for each new traced task: from the call's start to now (written and produced)."""
        assert self._tracing is not None
        end_ms = self._clock.now_ms()
        for row in fresh:
            if row.trace_id and is_traceparent(row.trace_id):
                self._tracing.span("taskring.accept", row.trace_id, start_ms, end_ms,
                                   {"taskring.task_id": row.task_id, "taskring.namespace": row.namespace,
                                    "taskring.task_type": row.task_type, "taskring.node": self._params.node_id,
                                    "taskring.path": "kafka" if row.status == r.ENQUEUED else "mysql"})

    def _admit(self, priorities: Iterable[int]) -> None:
        """Refuse (Overloaded) before anything is written when this node is behind for the
        lowest priority class submitted (a batch is all or nothing)."""
        if self._admission is not None:
            self._admission.check(min((priority_class(p) for p in priorities), default=NORMAL))

    async def _accept(self, valid: Sequence[ValidTask], now_ms: int) -> list[pb.SubmitResponse]:
        created = ms_to_datetime(now_ms)
        rows: list[r.NewTask] = []
        due_ms_of: list[int] = []
        # A batch is mostly tasks of a few types due at a few instants: work out each
        # slot and each stored time once per batch, not once per task.
        slots: dict[tuple[str, str], int] = {}
        times: dict[int, dt.datetime] = {}
        for v in valid:
            slot = slots.get((v.namespace, v.task_type))
            if slot is None:
                slot = slots[(v.namespace, v.task_type)] = slot_of(v.namespace, v.task_type, self._params.slot_count)
            due_ms = v.due_at_ms
            trigger_at = times.get(due_ms)
            if trigger_at is None:
                trigger_at = times[due_ms] = ms_to_datetime(due_ms)
            short = due_ms - now_ms <= self._params.route_threshold_ms
            rows.append(r.NewTask(task_id=v.task_id, slot=slot, namespace=v.namespace, task_type=v.task_type,
                                  priority=v.priority, status=r.ENQUEUED if short else r.PENDING,
                                  trigger_at=trigger_at, envelope=v.to_pb().SerializeToString(),
                                  created_at=created, unique_key=v.unique_key, trace_id=v.trace_id,
                                  unique_until=(created + dt.timedelta(milliseconds=v.unique_ttl_ms)
                                                if v.unique_ttl_ms else None)))
            due_ms_of.append(due_ms)
        existing = await asyncio.to_thread(self._store.insert_tasks, rows, self._params.node_id)
        fresh_kafka = [(row, due_ms) for row, due_ms in zip(rows, due_ms_of)
                       if row.task_id not in existing and row.status == r.ENQUEUED]
        topic_for = self._params.topic_for
        messages = [queued_message_of_envelope(topic_for(row.priority), row.task_id, row.envelope, row.slot, 1, due_ms)
                    for row, due_ms in fresh_kafka]
        # A retried Submit of a task still `enqueued` may be retrying because the first
        # call died between the MySQL write and the produce: produce its message again
        # from the stored row. A second copy is harmless (dispatch is conditional).
        messages += await self._reproduce([tid for tid, status in existing.items() if status is r.ENQUEUED])
        if messages:
            errors = await self._producer.send(messages)
            failed = [m.key.decode() for m, e in zip(messages, errors) if e is not None]
            if failed:
                log.warning("kafka refused %d tasks (%s); they take the MySQL path", len(failed),
                            next(e for e in errors if e))
                await asyncio.to_thread(self._store.reroute_to_mysql, failed, created)
        fresh = [row for row in rows if row.task_id not in existing]
        by_kafka = sum(1 for row in fresh if row.status == r.ENQUEUED)
        self._metrics.submitted.labels("kafka").inc(by_kafka)
        self._metrics.submitted.labels("mysql").inc(len(fresh) - by_kafka)
        if self._stats is not None and fresh:
            self._stats.submitted(collections.Counter((row.namespace, row.task_type) for row in fresh).items())
        if self._tracing is not None:
            self._trace_accept(fresh, now_ms)
        results = []
        due_texts: dict[dt.datetime, str] = {}
        for row in rows:
            standing = existing.get(row.task_id)
            if isinstance(standing, r.Held):  # its unique key is held: the holder answers
                self._metrics.unique_key_held.inc()
                results.append(pb.SubmitResponse(task_id=standing.holder, duplicate=True,
                                                  state=api_state(standing.status, 0, None, created),
                                                  slot=standing.slot))
            elif standing is not None:
                self._metrics.duplicates.inc()
                results.append(pb.SubmitResponse(task_id=row.task_id, duplicate=True,
                                                  state=api_state(standing, 0, None, created),
                                                  slot=row.slot))
            else:
                due_text = due_texts.get(row.trigger_at)
                if due_text is None:
                    due_text = due_texts[row.trigger_at] = rfc3339(row.trigger_at)
                results.append(pb.SubmitResponse(task_id=row.task_id, state=pb.TASK_STATE_QUEUED,
                                                  due_at=due_text, slot=row.slot))
        return results

    async def _reproduce(self, task_ids: list[str]) -> list:
        messages = []
        for task_id in task_ids:
            row, _events = await asyncio.to_thread(self._store.get_task, task_id)
            if row.status == r.ENQUEUED:
                messages.append(queued_message(self._params.topic_for(row.priority),
                                               pb.Task.FromString(row.envelope), row.slot, row.attempts + 1,
                                               datetime_to_ms(row.trigger_at)))
        return messages

    def set_limits(self, limits: Limits) -> None:
        """New limits (the policies file changed): the next request reads them."""
        self._limits = limits

    @_guarded
    async def Cancel(self, request: pb.CancelRequest, context) -> pb.CancelResponse:
        token = self._auth.token(context, calls.CANCEL)
        if not request.task_id:
            raise InvalidArgument("task_id", "is required")
        if token is not None and token.namespaces is not None:
            # A task's namespace never changes: read it, and refuse before the cancel
            # (NotFound for an unknown id, as the cancel itself would answer).
            row, _events = await asyncio.to_thread(self._store.get_task, request.task_id)
            self._auth.check_namespaces(token, calls.CANCEL, (row.namespace,))
        # A running task is cancelled too when its type heartbeats: the answer to its next
        # heartbeat tells its handler to stop.
        await asyncio.to_thread(self._store.cancel, request.task_id, self._params.node_id, self._clock.now(),
                                self._limits.retry_policies.heartbeat_by_type)
        return pb.CancelResponse(task_id=request.task_id, state=pb.TASK_STATE_CANCELLED)

    @_guarded
    async def GetTask(self, request: pb.GetTaskRequest, context) -> pb.GetTaskResponse:
        token = self._auth.token(context, calls.READ)
        if not request.task_id:
            raise InvalidArgument("task_id", "is required")
        row, events = await asyncio.to_thread(self._store.get_task, request.task_id)
        # Refused on the stored namespace, before any other field of the task is answered.
        self._auth.check_namespaces(token, calls.READ, (row.namespace,))
        task = pb.Task.FromString(row.envelope)
        task.retry_count = row.attempts
        waiting = ""
        if row.status in r.NOT_HANDED_OUT:   # held at a limit? its owner noted why, for its next attempt
            note = await asyncio.to_thread(self._store.wait_note, request.task_id)
            if note is not None and note[0] == row.attempts + 1:
                waiting = note[1]
        elif row.status == r.WAITING and self._graph_waiting is not None:   # a task of a graph: its parents
            waiting = await asyncio.to_thread(self._graph_waiting, request.task_id)
        return pb.GetTaskResponse(waiting=waiting,
            task=task, state=api_state(row.status, row.attempts, row.trigger_at, self._clock.now()),
            attempts=row.attempts, due_at=rfc3339(row.trigger_at), slot=row.slot,
            last_error=row.last_error or "", last_stack_trace=row.last_stack_trace or "",
            history=[pb.TaskEvent(state=STATE_TO_PB[e.state], at=rfc3339(e.at), node=e.node, attempt=e.attempt,
                                  detail=e.detail or "") for e in events])


async def serve_api(api: TaskApi, host: str, port: int, *more: tuple[Any, str],
                    credentials: grpc.ServerCredentials | None = None,
                    configure: Callable[[grpc.aio.Server], None] | None = None) -> tuple[grpc.aio.Server, int]:
    """The TaskService, and `more` (servicer, service name) pairs, e.g. the CronService;
    over TLS when `credentials` are given (dispatcher/auth/tls.py), else in the clear.
    `configure` adds what else the server carries before it starts (health, reflection)."""
    server = grpc.aio.server(options=[("grpc.max_receive_message_length", 64 * 1024 * 1024)])
    server.add_generic_rpc_handlers(tuple(_service_handler(servicer, name)
                                          for servicer, name in ((api, "TaskService"), *more)))
    if configure is not None:
        configure(server)
    address = f"{host}:{port}"
    bound = (server.add_insecure_port(address) if credentials is None
             else server.add_secure_port(address, credentials))
    await server.start()
    return server, bound


def _service_handler(servicer: Any, service_name: str) -> grpc.GenericRpcHandler:
    """A service's methods, as the generated add_*Servicer_to_server registers them, except
    that each takes its request as raw bytes (no request_deserializer) and parses it itself:
    grpc would answer a request that does not parse with UNKNOWN "Unexpected DecodeError",
    where we answer INVALID_ARGUMENT naming the field (validation.decode_request), before
    anything is written. `servicer` has the methods, an `_abort(exc, context)` and an `_auth`
    (grpc_auth.Authorizer)."""
    service = pb.DESCRIPTOR.services_by_name[service_name]
    handlers: dict[str, grpc.RpcMethodHandler] = {}
    for method in service.methods:
        request_type = getattr(pb, method.input_type.name)
        response_type = getattr(pb, method.output_type.name)
        handlers[method.name] = grpc.unary_unary_rpc_method_handler(
            _decoding(servicer, getattr(servicer, method.name), request_type),
            response_serializer=response_type.SerializeToString)
    return grpc.method_handlers_generic_handler(service.full_name, handlers)


def _decoding(servicer: Any, call, request_type):
    async def handle(raw: bytes, context):
        try:
            request = decode_request(request_type, raw)
        except InvalidArgument as exc:
            # The access check comes first, as in every method: a caller without a known
            # token, or not allowed the call, learns nothing of what is wrong with its request.
            try:
                servicer._auth.token(context, calls.CALL_OF_RPC[call.__name__])
            except TaskringError as denied:
                return await servicer._abort(denied, context)
            return await servicer._abort(exc, context)  # abort raises: the method is not called
        return await call(request, context)
    handle.__name__ = call.__name__
    return handle


def peer_address(peer: str) -> str:
    """A gRPC peer (`ipv4:127.0.0.1:5431`, `ipv6:[::1]:5431`) as the caller's address, for the
    audit trail."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv4":
        return rest.rpartition(":")[0]
    if kind == "ipv6":
        return rest.rpartition(":")[0].strip("[]")
    return peer
