"""The demo's work: the tasks it submits, its handlers, and whether each task ended as
expected (state, attempts, no attempt started before it was due), printed as a table.

Pure judgement over `TaskInfo` histories, apart from `submit_all`: unit-tested in
tests/unit/test_demo.py; harness/demo.py runs it on a live cluster.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import threading
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # taskring is imported where it is used, not at import time
    from taskring import Client, TaskSpec

NAMESPACE = "demo"


def say(message: str = "") -> None:
    print(message, flush=True)


class Handlers:
    """The demo's handlers; they count calls per task to compare with the server's attempts."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def _count(self, ctx) -> None:
        with self._lock:
            self.calls[ctx.task_id] += 1

    def register(self, executor) -> None:
        from taskring import NonRetryableError, RetryableError

        @executor.handler("send_email")
        def send_email(ctx) -> None:
            self._count(ctx)
            time.sleep(0.02)  # pretend to talk to a mail server

        @executor.handler("send_sms")
        def send_sms(ctx) -> None:
            self._count(ctx)

        @executor.handler("ship_order")
        def ship_order(ctx) -> None:
            self._count(ctx)

        @executor.handler("charge_card")
        def charge_card(ctx) -> None:
            self._count(ctx)
            if ctx.attempt <= 2:
                raise RetryableError(f"payment gateway busy (attempt {ctx.attempt})")

        @executor.handler("reconcile")
        def reconcile(ctx) -> None:
            self._count(ctx)
            raise RuntimeError(f"ledger {ctx.payload.get('ledger')} does not balance")

        @executor.handler("validate_order")
        def validate_order(ctx) -> None:
            self._count(ctx)
            raise NonRetryableError(f"order {ctx.payload.get('order')} has no items")


@dataclasses.dataclass
class Planned:
    spec: TaskSpec
    via: int                # index of the node it is submitted through
    expect_state: str
    expect_attempts: int
    cancel: bool = False
    task_id: str = ""
    due_at: dt.datetime | None = None
    info: Any = None        # taskring.TaskInfo, once looked up


def plan_tasks(node_count: int, run: str) -> list[Planned]:
    from taskring import RetryPolicy, TaskSpec

    short_retries = RetryPolicy.tiered(0.5, 1)

    def spec(task_type: str, payload: dict, **kw) -> TaskSpec:
        return TaskSpec(NAMESPACE, task_type, {**payload, "run": run}, trace_id=f"demo-{run}", **kw)

    other = [2, 3] if node_count >= 3 else [min(2, node_count)] * 2
    return [
        # through node 1, in one SubmitBatch
        Planned(spec("send_email", {"to": "ana@example.com"}), 1, "succeeded", 1),
        Planned(spec("send_email", {"to": "ben@example.com"}), 1, "succeeded", 1),
        Planned(spec("send_email", {"to": "cho@example.com"}, delay=3), 1, "succeeded", 1),
        Planned(spec("send_email", {"to": "dev@example.com"}, delay=15), 1, "succeeded", 1),
        Planned(spec("charge_card", {"order": 1001, "cents": 4200}, priority="high",
                     max_retries=3, retry_policy=short_retries), 1, "succeeded", 3),
        Planned(spec("charge_card", {"order": 1002, "cents": 990}, delay=15,
                     max_retries=3, retry_policy=short_retries), 1, "succeeded", 3),
        Planned(spec("reconcile", {"ledger": "2026-11"}, max_retries=2, retry_policy=short_retries),
                1, "dead_lettered", 3),
        Planned(spec("validate_order", {"order": 1003}, max_retries=5), 1, "dead_lettered", 1),
        Planned(spec("send_email", {"to": "eve@example.com"}, delay=3), 1, "cancelled", 0, cancel=True),
        Planned(spec("send_email", {"to": "fay@example.com"}, delay=15), 1, "cancelled", 0, cancel=True),
        # one at a time through the other nodes: any node accepts any task
        Planned(spec("ship_order", {"order": 1004}), other[0], "succeeded", 1),
        Planned(spec("send_sms", {"to": "+6590000001"}, delay=3), other[0], "succeeded", 1),
        Planned(spec("send_sms", {"to": "+6590000002"}), other[1], "succeeded", 1),
        Planned(spec("ship_order", {"order": 1005}, delay=15), other[1], "succeeded", 1),
    ]


def submit_all(planned: list[Planned], clients: dict[int, Client]) -> None:
    first = [p for p in planned if p.via == 1]
    results = clients[1].submit_batch([p.spec for p in first])
    for p, r in zip(first, results):
        p.task_id, p.due_at = r.task_id, r.due_at
    for p in planned:
        if p.via != 1:
            s = p.spec
            r = clients[p.via].submit(s.namespace, s.task_type, s.payload, delay=s.delay, trace_id=s.trace_id)
            p.task_id, p.due_at = r.task_id, r.due_at
    for p in planned:
        if p.cancel:
            clients[1].cancel(p.task_id)


def _ms(t: dt.datetime) -> int:
    return round(t.timestamp() * 1000)


def path_of(info) -> str:
    """The path the task was routed on at submit, from its first `queued` event."""
    for e in info.history:
        if e.state.value == "queued" and e.attempt == 0:
            return e.detail or "?"
    return "?"


def attempt_starts(p: Planned) -> list[tuple[int, int, int]]:
    """(attempt, due ms, started ms) per attempt that ran. The first attempt is due at
    the submit's due_at; a retry is due at its `queued` event (recorded at min(due, now))."""
    due: dict[int, int] = {1: _ms(p.due_at)} if p.due_at else {}
    started: dict[int, int] = {}
    for e in p.info.history:
        if e.state.value == "queued" and e.attempt > 1:
            due[e.attempt] = _ms(e.at)
        elif e.state.value == "running":
            started[e.attempt] = _ms(e.at)
    return [(a, due[a], started[a]) for a in sorted(started) if a in due]


def history_text(info) -> str:
    parts = []
    for e in info.history:
        name = e.state.value
        parts.append(f"{name}#{e.attempt}" if e.attempt and name != "accepted" else name)
    return " > ".join(parts)


def ran_on(info) -> str:
    nodes = []
    for e in info.history:
        if e.state.value == "dispatched" and e.node not in nodes:
            nodes.append(e.node)
    return ",".join(n.removeprefix("demo-") for n in nodes) or "-"


def judge(p: Planned, calls: int) -> tuple[list[str], list[str]]:
    """(problems, notes) for one finished task."""
    problems, notes = [], []
    info = p.info
    if info.state.value != p.expect_state or info.attempts != p.expect_attempts:
        problems.append(f"expected {p.expect_state} after {p.expect_attempts} attempt(s), "
                        f"got {info.state.value} after {info.attempts}")
    for attempt, due_ms, started_ms in attempt_starts(p):
        if started_ms < due_ms:
            problems.append(f"attempt {attempt} started {due_ms - started_ms} ms before it was due")
    if calls != info.attempts:
        notes.append(f"the handler ran {calls} time(s) for {info.attempts} recorded attempt(s)")
    return problems, notes


def print_table(planned: list[Planned], handlers: Handlers) -> tuple[list[str], list[str]]:
    header = (f"{'#':>2}  {'task type':<14} {'via':<6} {'path':<5} {'slot':>4} {'state':<13} {'att':>3}  "
              f"{'ran on':<13} {'late ms (per attempt)':<22} task id")
    say(header)
    say("-" * len(header))
    problems, notes = [], []
    for i, p in enumerate(planned, 1):
        info = p.info
        lateness = ", ".join(str(started - due) for _a, due, started in attempt_starts(p)) or "-"
        bad, note = judge(p, handlers.calls.get(p.task_id, 0))
        problems += [f"task {i} ({info.task_type} {p.task_id}): {b}" for b in bad]
        notes += [f"task {i} ({info.task_type} {p.task_id}): {n}" for n in note]
        mark = "  <-- UNEXPECTED" if bad else ""
        say(f"{i:>2}  {info.task_type:<14} {'node' + str(p.via):<6} {path_of(info):<5} {info.slot:>4}"
            f" {info.state.value:<13} {info.attempts:>3}  {ran_on(info):<13} {lateness:<22} {p.task_id}{mark}")
        say(f"    history: {history_text(info)}")
        if info.last_error:
            say(f"    last error: {info.last_error.splitlines()[0][:110]}")
    return problems, notes
