"""Calls executors: reserves capacity on instances before a task is marked
dispatched, spreads a batch over the instances of its namespace, and turns a
failed call into retryable outcomes for every task in it.

Capacity is reserved first (never more than an instance's max_in_flight), so a
node never marks more tasks `dispatched` than its executors can take at once:
what does not fit stays in the heap until capacity frees up.
"""
from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Protocol

import grpc

from dispatcher.engine.executor_stream import ExecutorStream, Heartbeats, StreamEnded
from taskring.wire import pb, pb_grpc


class _Instance(Protocol):
    # Read-only, as membership.ExecutorInstance (a frozen dataclass) is.
    @property
    def instance_id(self) -> str: ...
    @property
    def address(self) -> str: ...
    @property
    def task_types(self) -> Sequence[str]: ...
    @property
    def max_in_flight(self) -> int: ...


class Directory(Protocol):
    def instances(self, namespace: str) -> Sequence[_Instance]: ...


@dataclasses.dataclass
class Reservation:
    """Capacity held on executor instances for one batch of one task type: [(instance, tasks)]."""

    namespace: str
    task_type: str
    allocations: list[tuple[_Instance, int]]

    @property
    def key(self) -> tuple[str, str]:
        return self.namespace, self.task_type

    @property
    def total(self) -> int:
        return sum(n for _, n in self.allocations)


@dataclasses.dataclass
class RunResult:
    """What became of a batch: an outcome per delivery run, and the deliveries never
    run (not sent, or not started in time) because this node could not prove it
    still holds their slots."""

    outcomes: list[pb.Outcome]
    not_sent: list[pb.Delivery]


class ExecutorPool:
    def __init__(self, directory: Directory, node_id: str, *, now_ms: Callable[[], int], rpc_margin_s: float = 5.0,
                 lease_remaining_ms: Callable[[], int | None] = lambda: None, unreachable_cooldown_s: float = 5.0,
                 credentials: grpc.ChannelCredentials | None = None, server_name: str | None = None,
                 use_streams: bool = True, heartbeats: Heartbeats | None = None,
                 lease_now_s: Callable[[], float] | None = None):
        self._directory = directory
        self._lease_now_s = lease_now_s   # heartbeat leases' time (executor_stream.py); None: the loop's
        self._heartbeats = heartbeats   # answers the heartbeats that come up the Work streams
        # TLS to every executor when given (dispatcher/auth/tls.py); `server_name` is the
        # name checked in their certificates instead of the address each one registered.
        self._credentials = credentials
        self._channel_options: list[tuple[str, int | str]] = [
            ("grpc.max_receive_message_length", 64 * 1024 * 1024),
            ("grpc.max_send_message_length", 64 * 1024 * 1024),
        ]
        if server_name is not None:
            self._channel_options.append(("grpc.ssl_target_name_override", server_name))
        self._node_id = node_id
        self._rpc_margin_s = rpc_margin_s
        # What remains of the session lease (None: no lease, a single node). Read right
        # before each Execute call, the last moment at which a node frozen since it
        # marked the tasks dispatched can still keep them to itself; what remains is
        # sent along, so that the executor starts nothing after the lease ran out.
        self._lease_remaining_ms = lease_remaining_ms
        self._now_ms = now_ms
        # An instance that could not be reached is left out for a while: its znode lives on
        # for its session timeout after it dies, and every batch sent to it meanwhile would
        # spend an attempt of each task in it (fast retries could dead-letter them).
        self._unreachable_cooldown_s = unreachable_cooldown_s
        self._unreachable_until: dict[str, float] = {}
        self._channels: dict[str, tuple[grpc.aio.Channel, pb_grpc.ExecutorServiceStub]] = {}
        # One Work stream per executor (executor_stream.py); an address that answered
        # UNIMPLEMENTED (an SDK without Work) gets Execute calls from then on.
        self._streams: dict[str, ExecutorStream] = {}
        self._calls_only: set[str] = set()
        self._use_streams = use_streams
        self._in_flight: dict[str, int] = {}
        # Each namespace's instances as last looked up (address -> max_in_flight): what
        # free_room() adds up.
        self._capacity: dict[str, dict[str, int]] = {}
        self.on_release: Callable[[], None] = lambda: None

    def start(self) -> None:
        pass

    async def stop(self) -> None:
        streams, self._streams = self._streams, {}
        for stream in streams.values():
            await stream.close()
        channels, self._channels = self._channels, {}
        for channel, _ in channels.values():
            await channel.close(grace=None)

    def _handlers_of(self, namespace: str, task_type: str) -> list[_Instance]:
        """The instances of the namespace that announce a handler for the type (one that
        announces no types at all is taken to handle any). Choosing by namespace alone
        sent tasks to executors that answered NO_HANDLER, spending an attempt each."""
        now = time.monotonic()
        known = [inst for inst in self._directory.instances(namespace)
                 if self._unreachable_until.get(inst.address, 0.0) <= now]
        self._capacity[namespace] = {inst.address: inst.max_in_flight for inst in known}
        return [inst for inst in known if not inst.task_types or task_type in inst.task_types]

    def time_moved(self) -> None:
        """The node's clock was moved (`taskring dev`): every stream looks at its leases again."""
        for stream in self._streams.values():
            stream.time_moved()

    def has_executor(self, namespace: str, task_type: str) -> bool:
        return bool(self._handlers_of(namespace, task_type))

    def describe(self, namespace: str, task_type: str) -> str:
        """What this node knows of the namespace's executors, for a log line saying why a
        type has none: each instance, whether it announces the type, and any cooldown."""
        now = time.monotonic()
        known = self._directory.instances(namespace)
        if not known:
            return f"no executor of namespace {namespace!r} is registered"
        parts = []
        for inst in known:
            announces = not inst.task_types or task_type in inst.task_types
            cooldown = self._unreachable_until.get(inst.address, 0.0) - now
            parts.append(f"{inst.address} ({len(inst.task_types) or 'any'} types, "
                         f"{'announces it' if announces else 'not this one'}"
                         f"{f', unreachable for {cooldown:.1f} s more' if cooldown > 0 else ''})")
        return f"{len(known)} executor(s) of namespace {namespace!r}: " + "; ".join(parts)

    def in_flight(self) -> int:
        return sum(self._in_flight.values())

    def free_room(self) -> int:
        """The room left on the reachable instances of every namespace this pool has
        looked up: no reserve can hold more than this now. An instance not looked up yet
        is not counted (its namespace's next lookup adds it)."""
        capacity: dict[str, int] = {}
        for of_namespace in self._capacity.values():
            capacity.update(of_namespace)
        in_flight = self._in_flight
        return sum(max(0, most - in_flight.get(address, 0)) for address, most in capacity.items())

    def room_beyond(self, namespace: str, task_type: str, kept_share: float) -> int:
        """The room on the instances that handle the type, leaving free the last `kept_share`
        of each one's capacity (at least one place when the share is above 0)."""
        room = 0
        for inst in self._handlers_of(namespace, task_type):
            kept = max(1, round(inst.max_in_flight * kept_share)) if kept_share > 0 else 0
            room += max(0, inst.max_in_flight - kept - self._in_flight.get(inst.address, 0))
        return room

    def reserve(self, namespace: str, task_type: str, wanted: int) -> Reservation:
        """Hold capacity for up to `wanted` tasks of one type, spread evenly over the
        instances that handle it and have room; may hold less than wanted, or nothing."""
        instances: dict[str, _Instance] = {}
        free: dict[str, int] = {}
        taken: dict[str, int] = {}
        for inst in self._handlers_of(namespace, task_type):
            room = inst.max_in_flight - self._in_flight.get(inst.address, 0)
            if room > 0:
                instances[inst.address], free[inst.address], taken[inst.address] = inst, room, 0
        remaining = wanted
        while remaining > 0:
            open_ = [a for a in instances if free[a] > taken[a]]
            if not open_:
                break
            share = -(-remaining // len(open_))  # ceil: an even split of what is left
            for a in open_:
                take = min(share, free[a] - taken[a], remaining)
                taken[a] += take
                remaining -= take
        allocations = [(instances[a], n) for a, n in taken.items() if n > 0]
        for inst, n in allocations:
            self._in_flight[inst.address] = self._in_flight.get(inst.address, 0) + n
        return Reservation(namespace, task_type, allocations)

    def _release(self, address: str, n: int) -> None:
        self._in_flight[address] = self._in_flight.get(address, 0) - n
        self.on_release()

    async def run(self, reservation: Reservation, deliveries: Sequence[pb.Delivery],
                  on_outcomes: Callable[[list[pb.Outcome]], None] | None = None) -> RunResult:
        """Deliver (at most reservation.total) tasks; capacity not used is released.
        Every delivery gets exactly one outcome back, or comes back in `not_sent`. Over a
        Work stream, `on_outcomes` hears of the outcomes of each frame as it comes (an Execute
        call's come all at once, with the result)."""
        calls, i = [], 0
        for inst, n in reservation.allocations:
            chunk = list(deliveries[i:i + n])
            i += len(chunk)
            if n > len(chunk):
                self._release(inst.address, n - len(chunk))
            if chunk:
                calls.append(self._call(inst, chunk, on_outcomes))
        result = RunResult([], [])
        for part in await asyncio.gather(*calls):
            result.outcomes.extend(part.outcomes)
            result.not_sent.extend(part.not_sent)
        result.outcomes.extend(_failed(deliveries[i:], self._now_ms(),
                                       f"no capacity reserved for {reservation.namespace}/{reservation.task_type}"))
        return result

    def _stub(self, address: str) -> pb_grpc.ExecutorServiceStub:
        entry = self._channels.get(address)
        if entry is None:
            channel = (grpc.aio.insecure_channel(address, options=self._channel_options) if self._credentials is None
                       else grpc.aio.secure_channel(address, self._credentials, options=self._channel_options))
            entry = (channel, pb_grpc.ExecutorServiceStub(channel))
            self._channels[address] = entry
        return entry[1]

    async def _call(self, inst: _Instance, chunk: list[pb.Delivery],
                    on_outcomes: Callable[[list[pb.Outcome]], None] | None = None) -> RunResult:
        deadline_s = max(d.timeout_ms for d in chunk) / 1000 + self._rpc_margin_s
        streamed = None
        # Over a stream each outcome frees its place at once: a chunk's handlers end one by
        # one, and holding every place until the last ended kept a high task waiting half a
        # handler's time on average behind saturated executors (loadtest/isolation.py).
        freed = [0]
        address = inst.address

        def ended(outcomes: list[pb.Outcome]) -> None:
            n = min(len(outcomes), len(chunk) - freed[0])
            if n > 0:
                freed[0] += n
                self._release(address, n)
            if on_outcomes is not None:
                on_outcomes(outcomes)
        try:
            lease_ms = self._lease_remaining_ms()
            if lease_ms is not None:
                if lease_ms <= 0:
                    return RunResult([], chunk)
                start_by = self._now_ms() + lease_ms
                for d in chunk:
                    d.start_within_ms = lease_ms
                    d.start_by_unix_ms = start_by
            streamed = await self._over_stream(inst.address, chunk, deadline_s, ended)
            if streamed is not None:
                received, failure = streamed
            else:
                reply = await self._stub(inst.address).Execute(
                    pb.ExecuteRequest(deliveries=chunk, dispatcher_node=self._node_id), timeout=deadline_s)
                received, failure = list(reply.outcomes), None
        except grpc.aio.AioRpcError as exc:
            received, failure = [], exc
        finally:
            self._release(inst.address, len(chunk) - freed[0])
        if isinstance(failure, grpc.aio.AioRpcError) and failure.code() == grpc.StatusCode.UNAVAILABLE:
            self._unreachable_until[inst.address] = time.monotonic() + self._unreachable_cooldown_s
        if streamed is not None and len(received) == len(chunk) \
                and not any(o.kind == pb.OUTCOME_KIND_NOT_STARTED for o in received):
            # The usual chunk: a stream hands each delivery's outcome to its own chunk, once
            # (executor_stream.py), so all of them came and nothing needs matching. The
            # matching below cost seven passes with a key per task.
            return RunResult(received, [])
        wanted = {(d.task.task_id, d.attempt) for d in chunk}
        outcomes = [o for o in received if (o.task_id, o.attempt) in wanted]
        got = {(o.task_id, o.attempt) for o in outcomes}
        missing = [d for d in chunk if (d.task.task_id, d.attempt) not in got]
        # Not started in time (the lease ran out while they queued at the executor):
        # never run, so they come back unspent, as if never sent.
        late = {(o.task_id, o.attempt) for o in outcomes if o.kind == pb.OUTCOME_KIND_NOT_STARTED}
        outcomes = [o for o in outcomes if (o.task_id, o.attempt) not in late]
        unstarted = [d for d in chunk if (d.task.task_id, d.attempt) in late]
        missed = _failed(missing, self._now_ms(), f"executor {inst.address}: {_describe(failure)}")
        return RunResult(outcomes + missed, unstarted)

    async def _over_stream(self, address: str, chunk: list[pb.Delivery], deadline_s: float,
                           on_outcomes: Callable[[list[pb.Outcome]], None] | None = None,
                           ) -> tuple[list[pb.Outcome], BaseException | None] | None:
        """The chunk's outcomes through the executor's Work stream, and why any are
        missing; None when the chunk must go as an Execute call instead (an executor
        without Work, or one of its tasks already waiting on the stream)."""
        if not self._use_streams or address in self._calls_only:
            return None
        stream = self._streams.get(address)
        if stream is None or stream.ended:
            stream = self._streams[address] = ExecutorStream(self._stub(address), self._node_id, self._heartbeats,
                                                                      self._lease_now_s)
        elif stream.taken(chunk):
            return None
        result = await stream.run(chunk, deadline_s, on_outcomes)
        error = result.error
        if isinstance(error, grpc.aio.AioRpcError) and error.code() == grpc.StatusCode.UNIMPLEMENTED \
                and not result.outcomes:
            # Nothing ran: the executor has no such method. Calls from now on.
            self._calls_only.add(address)
            return None
        return result.outcomes, error


def _describe(failure: BaseException | None) -> str:
    if failure is None:
        return "returned no outcome"
    if isinstance(failure, grpc.aio.AioRpcError):
        return f"{failure.code().name}: {failure.details()}"
    if isinstance(failure, StreamEnded):
        return f"UNAVAILABLE: {failure}"
    if isinstance(failure, TimeoutError):
        return f"DEADLINE_EXCEEDED: {failure}"
    return f"{type(failure).__name__}: {failure}"


def _failed(deliveries: Sequence[pb.Delivery], now_ms: int, error: str) -> list[pb.Outcome]:
    return [pb.Outcome(task_id=d.task.task_id, attempt=d.attempt, kind=pb.OUTCOME_KIND_RETRYABLE_FAILURE,
                       error=error, started_at_ms=0, finished_at_ms=now_ms) for d in deliveries]
