"""taskring.outbox against the real stack: a real `taskring node --single`, a real executor
(harness RecordingExecutor, namespace "tests"), and a database of the service's own holding
the outbox (tests/integration/service_proc.py). Enqueued is not success; committed is.
"""
from __future__ import annotations

import datetime as dt
import os
import threading
from collections.abc import Callable, Iterator, Sequence

import pytest
from prometheus_client import CollectorRegistry

from harness.processes import NodeProcess
from harness.wait import wait_until
from taskring import Client, Priority, RetryPolicy, SubmitResult, TaskInfo, TaskSpec, TaskState, outbox
from taskring.errors import NotFound
from taskring.outbox import OutboxRelay, decode_spec, encode_spec, enqueue
from tests.integration.service_proc import start_parked

pytestmark = pytest.mark.integration

TABLE = outbox.DEFAULT_TABLE
WAIT_S = 30.0


@pytest.fixture
def node(taskring_env):
    n = NodeProcess(taskring_env, "outbox-1", single=True).start()
    try:
        yield n.wait_ready()
    finally:
        n.terminate()


@pytest.fixture
def client(node) -> Iterator[Client]:
    with Client(node.target) as c:
        yield c


@pytest.fixture
def relays() -> Iterator[Callable[..., OutboxRelay]]:
    """Factory of relays, every one stopped after the test."""
    made: list[OutboxRelay] = []

    def make(*args, **kwargs) -> OutboxRelay:
        made.append(OutboxRelay(*args, **kwargs))
        return made[-1]
    yield make
    for relay in made:
        relay.stop()


def sql(connect, query: str, args=()) -> list[tuple]:
    conn = connect()
    with conn.cursor() as cur:
        cur.execute(query, args)
        return list(cur.fetchall())


def enqueue_committed(connect, specs: Sequence[TaskSpec]) -> list[str]:
    """The service's own transaction: an order row and its tasks, committed together."""
    conn = connect()
    with conn.cursor() as cur:
        cur.execute("START TRANSACTION")
        ids = [enqueue(cur, spec) for spec in specs]
    conn.commit()
    return ids


def outbox_rows(connect) -> dict[str, tuple]:
    """task_id -> (relayed, rejection) of every row."""
    return {tid: (relayed is not None, rejection) for tid, relayed, rejection in
            sql(connect, f"SELECT task_id, relayed_at, rejection FROM {TABLE}")}


def wait_terminal(client: Client, task_ids, timeout_s: float = 60.0) -> dict[str, TaskInfo]:
    infos: dict[str, TaskInfo] = {}

    def done() -> bool:
        for tid in task_ids:
            if tid not in infos or not infos[tid].state.is_terminal:
                infos[tid] = client.get(tid)
        return all(i.state.is_terminal for i in infos.values())
    wait_until(done, timeout_s, f"{len(task_ids)} tasks to reach a terminal state", 0.2)
    return infos


def node_tasks(taskring_env) -> dict[str, int]:
    """task_id -> rows on the node's store (so an id stored twice would show as 2)."""
    return dict(taskring_env.sql("SELECT task_id, COUNT(*) FROM tasks GROUP BY task_id"))


def relay_until_drained(relay: OutboxRelay, connect) -> None:
    """run_once until no committed row is left unrelayed (a killed relay's locks go when the
    server ends its session)."""
    def drained() -> bool:
        relay.run_once()
        return not sql(connect, f"SELECT 1 FROM {TABLE} WHERE relayed_at IS NULL LIMIT 1")
    wait_until(drained, WAIT_S, "the relay to drain the outbox", 0.1)


def test_a_committed_transactions_task_is_relayed_and_runs(client, recording_executor, connect, relays):
    # Given a relay running in its thread
    registry = CollectorRegistry()
    relay = relays(connect, client, poll_interval_s=0.05, registry=registry).start()
    # When the service commits an order together with its task
    conn = connect()
    with conn.cursor() as cur:
        cur.execute("START TRANSACTION")
        cur.execute("INSERT INTO orders (id, status) VALUES (1, 'unpaid')")
        task_id = enqueue(cur, TaskSpec("tests", "ok", {"order": 1}))
    conn.commit()
    # Then the relay hands it over, under its id, and it runs once
    wait_until(lambda: relay.relayed_total == 1, WAIT_S, "the relay to hand the task over")
    assert outbox_rows(connect) == {task_id: (True, None)}
    info = wait_terminal(client, [task_id])[task_id]
    assert info.state == TaskState.SUCCEEDED
    assert info.payload == {"order": 1}
    wait_until(lambda: recording_executor.runs_by_task()[task_id] == 1, WAIT_S, "the execution to be recorded")
    assert registry.get_sample_value("taskring_outbox_relayed_total", {"table": TABLE}) == 1.0
    assert relay.duplicates_total == 0


def test_a_rolled_back_transaction_enqueues_nothing(client, recording_executor, connect, relays, taskring_env):
    # Given a transaction that enqueued a task and then rolled back
    conn = connect()
    with conn.cursor() as cur:
        cur.execute("START TRANSACTION")
        cur.execute("INSERT INTO orders (id, status) VALUES (2, 'unpaid')")
        rolled_back = enqueue(cur, TaskSpec("tests", "ok", {"order": 2}))
    conn.rollback()
    # When a relay has run past it (a sentinel committed after it is relayed and has run)
    [sentinel] = enqueue_committed(connect, [TaskSpec("tests", "ok", {"sentinel": True})])
    relay = relays(connect, client)
    relay_until_drained(relay, connect)
    assert wait_terminal(client, [sentinel])[sentinel].state == TaskState.SUCCEEDED
    # Then nothing of it exists: no outbox row, no task on the node, no run
    assert outbox_rows(connect) == {sentinel: (True, None)}
    with pytest.raises(NotFound):
        client.get(rolled_back)
    assert node_tasks(taskring_env) == {sentinel: 1}
    assert recording_executor.runs_by_task()[rolled_back] == 0
    assert relay.relayed_total == 1


def test_a_relay_killed_between_submit_and_mark_loses_and_duplicates_nothing(
        node, client, recording_executor, connect, relays, service_db, taskring_env, tmp_path):
    # Given seven committed tasks, and a relay process that submitted the first five of them
    # in one batch and is stopped before marking them relayed
    ids = enqueue_committed(connect, [TaskSpec("tests", "ok", {"i": i}) for i in range(7)])
    child, info = start_parked("relay", ["--database", service_db, "--table", TABLE, "--target", node.target,
                                         "--batch-size", "5"], tmp_path)
    try:
        assert info["submitted"] == ids[:5]
        assert set(node_tasks(taskring_env)) == set(ids[:5])   # the submit went through
        assert outbox_rows(connect) == {tid: (False, None) for tid in ids}  # and nothing was marked
        # When it is killed there
        child.kill()
    finally:
        child.kill()
    assert child.started.returncode == -9
    # And a second relay runs
    relay = relays(connect, client, batch_size=5)
    relay_until_drained(relay, connect)
    # Then every row is relayed, the five resent were recognised, and each task exists once
    assert outbox_rows(connect) == {tid: (True, None) for tid in ids}
    assert (relay.relayed_total, relay.duplicates_total) == (7, 5)
    assert node_tasks(taskring_env) == {tid: 1 for tid in ids}
    infos = wait_terminal(client, ids)
    assert all(i.state == TaskState.SUCCEEDED for i in infos.values())
    wait_until(lambda: set(recording_executor.runs_by_task()) == set(ids), WAIT_S, "every task to be run")
    assert recording_executor.runs_by_task() == {tid: 1 for tid in ids}


def test_lag_grows_while_no_relay_runs_and_returns_to_zero(client, recording_executor, connect, relays):
    registry = CollectorRegistry()
    relay = relays(connect, client, registry=registry)
    assert relay.lag_seconds() == 0.0
    # Given a committed task and no relay running
    [task_id] = enqueue_committed(connect, [TaskSpec("tests", "ok", {})])
    [(created_at,)] = sql(connect, f"SELECT created_at FROM {TABLE}")
    first = relay.lag_seconds()
    # Then its lag grows (on the database's clock) ...
    wait_until(lambda: relay.lag_seconds() >= first + 0.3, WAIT_S, "the lag to grow")
    assert relay.lag_seconds(now=created_at + dt.timedelta(minutes=2)) == pytest.approx(120.0)
    assert registry.get_sample_value("taskring_outbox_lag_seconds", {"table": TABLE}) == pytest.approx(120.0)
    # ... and is 0 once it is relayed
    assert relay.run_once() == 1
    assert relay.lag_seconds() == 0.0
    assert registry.get_sample_value("taskring_outbox_lag_seconds", {"table": TABLE}) == 0.0
    assert wait_terminal(client, [task_id])[task_id].state == TaskState.SUCCEEDED


class PausingClient:
    """Submits, then holds its batch (and so its rows' locks) until released."""

    def __init__(self, client: Client):
        self.client = client
        self.submitted, self.release = threading.Event(), threading.Event()

    def submit_batch(self, specs: Sequence[TaskSpec], /) -> list[SubmitResult]:
        results = self.client.submit_batch(specs)
        self.submitted.set()
        assert self.release.wait(WAIT_S), "never released"
        return results


def test_two_relays_share_the_rows_and_enqueues_never_wait_for_a_relay(
        client, recording_executor, connect, relays, taskring_env):
    ids = enqueue_committed(connect, [TaskSpec("tests", "ok", {"i": i}) for i in range(6)])
    # Given relay A holding every committed row mid-batch (its scan reached the end of them)
    pausing = PausingClient(client)
    relay_a = relays(connect, pausing, batch_size=100)
    errors: list[BaseException] = []

    def run_a() -> None:
        try:
            relay_a.run_once()
        except BaseException as e:
            errors.append(e)
    a = threading.Thread(target=run_a)
    a.start()
    try:
        assert pausing.submitted.wait(WAIT_S)
        # When relay B runs, it skips A's rows rather than waiting for them
        relay_b = relays(connect, client, batch_size=100)
        assert relay_b.run_once() == 0
        # And the service enqueues meanwhile, without waiting on A's locks (2 s, then an error)
        conn = connect()
        with conn.cursor() as cur:
            cur.execute("SET SESSION innodb_lock_wait_timeout = 2")
            cur.execute("START TRANSACTION")
            late = enqueue(cur, TaskSpec("tests", "ok", {"late": True}))
        conn.commit()
        # Then B takes the new row while A still holds its batch
        assert relay_b.run_once() == 1
        assert {tid for tid, (done, _) in outbox_rows(connect).items() if done} == {late}
    finally:
        pausing.release.set()
        a.join(WAIT_S)
    assert not errors and not a.is_alive()
    # And every task went out once
    everything = [*ids, late]
    assert outbox_rows(connect) == {tid: (True, None) for tid in everything}
    assert (relay_a.relayed_total, relay_b.relayed_total) == (6, 1)
    assert relay_a.duplicates_total + relay_b.duplicates_total == 0
    assert node_tasks(taskring_env) == {tid: 1 for tid in everything}
    wait_terminal(client, everything)
    wait_until(lambda: set(recording_executor.runs_by_task()) == set(everything), WAIT_S, "every task to be run")
    assert recording_executor.runs_by_task() == {tid: 1 for tid in everything}


def test_a_task_the_server_refuses_is_set_aside_and_the_rest_go_through(client, recording_executor, connect,
                                                                         relays, taskring_env):
    good_1, bad, good_2 = enqueue_committed(connect, [
        TaskSpec("tests", "ok", {}), TaskSpec("Bad Namespace", "ok", {}), TaskSpec("tests", "ok", {})])
    relay = relays(connect, client)
    assert relay.run_once() == 2
    assert relay.rejected_total == 1
    rows = outbox_rows(connect)
    assert rows[good_1] == rows[good_2] == (True, None)
    assert rows[bad][0] is True and "tasks[1].namespace" in rows[bad][1]
    assert set(node_tasks(taskring_env)) == {good_1, good_2}
    assert relay.run_once() == 0                           # it is not tried again
    wait_terminal(client, [good_1, good_2])


def test_a_task_id_the_server_would_refuse_is_refused_at_enqueue(connect):
    conn = connect()
    with conn.cursor() as cur:
        with pytest.raises(ValueError, match="task_id"):
            enqueue(cur, TaskSpec("tests", "ok", {}, task_id="has space"))
        with pytest.raises(TypeError, match="JSON"):
            enqueue(cur, TaskSpec("tests", "ok", {"at": dt.datetime.now()}))
    assert outbox_rows(connect) == {}


def test_a_spec_comes_out_of_the_outbox_as_it_went_in_with_its_delay_counted_from_the_enqueue():
    spec = TaskSpec("shop", "cancel_unpaid", {"order": 12345, "big": 2**70, "nested": {"b": 1, "a": [1.5]}},
                    task_id="order-cancel:12345", delay=1800, timeout=60, max_retries=5,
                    retry_policy=RetryPolicy(initial_backoff=2, max_backoff=300, multiplier=3.0), priority="high",
                    unique_key="u-1", trace_id="req-1", payload_version=2)
    created = dt.datetime(2030, 1, 1, 12, 0, 0, 123456)  # naive UTC, as the DATETIME column holds it
    out = decode_spec(encode_spec(spec, "order-cancel:12345"), created)
    assert out.schedule_time == dt.datetime(2030, 1, 1, 12, 30, 0, 123456, tzinfo=dt.UTC) and out.delay is None
    assert out.payload == spec.payload
    for name in ("namespace", "task_type", "task_id", "timeout", "max_retries", "retry_policy", "unique_key",
                 "trace_id", "payload_version"):
        assert getattr(out, name) == getattr(spec, name), name
    assert out.priority == Priority.HIGH
    tiered = TaskSpec("shop", "t", None, schedule_time=dt.datetime(2030, 1, 1, tzinfo=dt.UTC),
                      retry_policy=RetryPolicy.tiered(10, 60))
    again = decode_spec(encode_spec(tiered, "x"), created)
    assert again.schedule_time == tiered.schedule_time and again.retry_policy == tiered.retry_policy
    assert again.payload is None


def test_new_task_ids_are_uuid7_in_time_order():
    import uuid
    ids = [outbox.new_task_id() for _ in range(50)]
    assert all(uuid.UUID(i).version == 7 and len(i) == 36 for i in ids)
    assert len(set(ids)) == 50
    stamps = [uuid.UUID(i).int >> 80 for i in ids]
    assert stamps == sorted(stamps)


def test_the_relay_runs_as_a_process_of_its_own_until_sigterm(node, client, recording_executor, connect, service_db,
                                                             stack, tmp_path):
    import signal
    import subprocess
    import sys
    ids = enqueue_committed(connect, [TaskSpec("tests", "ok", {"i": i}) for i in range(5)])
    log_path = tmp_path / "relay.log"
    with open(log_path, "w") as log:
        relay = subprocess.Popen(
            [sys.executable, "-m", "taskring.outbox_relay", "--target", node.target, "--mysql-host", stack.host,
             "--mysql-port", str(stack.mysql_port), "--mysql-user", stack.mysql_user, "--database", service_db,
             "--poll-interval-s", "0.1", "--report-every-s", "1"],
            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "TASKRING_OUTBOX_MYSQL_PASSWORD":
                                                        stack.mysql_password})
    try:
        wait_until(lambda: all(relayed for relayed, _ in outbox_rows(connect).values()), 60,
                   "every row marked relayed")
        infos = wait_terminal(client, ids, timeout_s=60)
        assert all(info.state == TaskState.SUCCEEDED for info in infos.values())
    finally:
        relay.send_signal(signal.SIGTERM)
        code = relay.wait(timeout=30)
    text = log_path.read_text()
    assert code == 0, text
    assert "relayed 5, duplicates 0, rejected 0, lag 0.0s" in text, text
