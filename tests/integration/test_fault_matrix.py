"""The fault matrix (the faults issue): each row a fault on the real stack under a steady
mixed load, judged by the figures of fault_matrix.FaultReport: 0 lost, 0 stuck, 0 early,
0 stale, executed twice <= in flight at the fault, lateness back to normal within two
session timeouts of the fault's end.

The short rows (1, 2, 3, 6, 10) run in .ci/run. The long ones run with
TASKRING_FAULT_MATRIX=full (see the README's reliability section), which also runs
every row TASKRING_FAULT_REPEAT times (default 1).
"""
from __future__ import annotations

import os
import time

import pytest

from harness.executors import ExecutorProcess, RecordingExecutor
from harness.faults import CutProxy
from harness.processes import REPO
from harness.wait import wait_until
from tests.integration.cluster_harness import SESSION_TIMEOUT_MS, Cluster
from tests.integration.fault_matrix import FaultClock, MixedLoad, in_flight, report

# faults: the fault tier (deploy/local/test.sh --full, and CI), run alone on the machine.
pytestmark = [pytest.mark.integration, pytest.mark.faults]

FULL = os.environ.get("TASKRING_FAULT_MATRIX") == "full"
REPEAT = int(os.environ.get("TASKRING_FAULT_REPEAT", "1"))
THREE = ("n1", "n2", "n3")
SESSION_S = SESSION_TIMEOUT_MS / 1000
long_row = pytest.mark.skipif(not FULL, reason="a long row: TASKRING_FAULT_MATRIX=full")
repeat = pytest.mark.parametrize("run", range(REPEAT))


@pytest.fixture
def cluster(taskring_env, recording_executor):
    c = Cluster(taskring_env, TASKRING_RECOVERY_GRACE_MS="5000", TASKRING_RECOVERY_INTERVAL_MS="1000")
    try:
        yield c
    finally:
        c.stop_all()


def start(cluster: Cluster, names=THREE) -> None:
    for name in names:
        cluster.add(name)
    for node in cluster.live():
        node.wait_ready()
    cluster.wait_settled(set(names))


def restart(cluster: Cluster, name: str) -> None:
    """SIGTERM (a clean handoff), then the same node id again at once."""
    assert cluster.nodes[name].terminate() == 0
    cluster.add(name).wait_ready()


@repeat
def test_row1_sigterm_and_immediate_restart_of_two_nodes_with_retries_coming_due(
        cluster, taskring_env, recording_executor, run):
    start(cluster)
    load = MixedLoad(taskring_env, cluster.live()).start()
    fault = FaultClock()
    load.wait_accepted(1500)
    fault.start()
    flying = in_flight(taskring_env)
    restart(cluster, "n1")
    time.sleep(5)  # the fault's own shape: the second restart five seconds after the first
    flying += in_flight(taskring_env)
    restart(cluster, "n2")
    cluster.wait_settled(set(THREE))
    fault.end()
    load.targets = cluster.live()
    load.wait_accepted(1500)
    report("1 SIGTERM+restart x2", taskring_env, load, recording_executor, fault,
           in_flight_at_fault=flying).check()


@repeat
def test_row2_sigstop_past_the_session_then_sigcont(cluster, taskring_env, recording_executor, run):
    start(cluster)
    load = MixedLoad(taskring_env, [cluster.nodes["n2"], cluster.nodes["n3"]]).start()
    fault = FaultClock()
    load.wait_accepted(1500)
    fault.start()
    flying = in_flight(taskring_env)
    cluster.nodes["n1"].pause()
    # And again once it is frozen: what it dispatched between the count and the SIGSTOP stays
    # dispatched until another node claims the slot, and may run twice as well.
    flying = max(flying, in_flight(taskring_env))
    time.sleep(2 * SESSION_S)  # the fault itself: frozen for twice the session timeout
    cluster.nodes["n1"].resume()
    cluster.wait_settled(set(THREE), timeout_s=40)
    fault.end()
    load.targets = cluster.live()
    load.wait_accepted(3000)   # long enough after the rejoin to see the slots it took back
    report("2a SIGSTOP 2x session", taskring_env, load, recording_executor, fault,
           in_flight_at_fault=flying).check()


@repeat
def test_row2_sigstop_for_half_a_session_moves_nothing(cluster, taskring_env, recording_executor, run):
    start(cluster)
    epochs = taskring_env.epochs()
    load = MixedLoad(taskring_env, [cluster.nodes["n2"], cluster.nodes["n3"]]).start()
    fault = FaultClock()
    load.wait_accepted(1500)
    fault.start()
    cluster.nodes["n1"].pause()
    time.sleep(SESSION_S / 2)  # the fault itself
    cluster.nodes["n1"].resume()
    fault.end()
    load.wait_accepted(1500)
    figures = report("2b SIGSTOP 0.5x session", taskring_env, load, recording_executor, fault,
                     in_flight_at_fault=0)
    figures.check()
    assert taskring_env.epochs() == epochs, "a pause shorter than the session moved ownership"


@repeat
@pytest.mark.parametrize("victims", [("n3",), ("n2", "n3")], ids=["one", "two-of-three"])
def test_row3_kill9(cluster, taskring_env, recording_executor, victims, run):
    start(cluster)
    survivors = [n for n in THREE if n not in victims]
    load = MixedLoad(taskring_env, [cluster.nodes[n] for n in survivors]).start()
    fault = FaultClock()
    load.wait_accepted(1500)
    fault.start()
    flying = in_flight(taskring_env)
    for name in victims:
        cluster.nodes[name].kill()
    flying = max(flying, in_flight(taskring_env))   # what they dispatched up to the kill (see row 2)
    cluster.wait_settled(set(survivors), timeout_s=SESSION_S + 20)
    fault.end()
    load.wait_accepted(1500)
    report(f"3 kill -9 {'+'.join(victims)}", taskring_env, load, recording_executor, fault,
           in_flight_at_fault=flying).check()


@long_row
@repeat
def test_row4_rolling_restart_of_every_node(cluster, taskring_env, recording_executor, run):
    start(cluster)
    load = MixedLoad(taskring_env, cluster.live()).start()
    fault = FaultClock()
    load.wait_accepted(1500)
    fault.start()
    flying = 0
    for name in THREE:
        flying += in_flight(taskring_env)
        restart(cluster, name)
        cluster.wait_settled(set(THREE))
        load.targets = cluster.live()
    fault.end()
    load.wait_accepted(1500)
    report("4 rolling restart", taskring_env, load, recording_executor, fault, in_flight_at_fault=flying).check()


@long_row
@repeat
def test_row5_membership_flapping(cluster, taskring_env, recording_executor, run):
    start(cluster)
    load = MixedLoad(taskring_env, [cluster.nodes["n1"], cluster.nodes["n2"]]).start()
    fault = FaultClock()
    load.wait_accepted(1500)
    fault.start()
    flying = 0
    until = time.monotonic() + 120
    while time.monotonic() < until:
        flying += in_flight(taskring_env)
        cluster.add("n4")
        time.sleep(5)   # the fault's shape: join and leave every 5 s
        flying += in_flight(taskring_env)
        assert cluster.nodes["n4"].terminate() == 0
        time.sleep(5)
    cluster.wait_settled(set(THREE))
    fault.end()
    load.wait_accepted(1500)
    report("5 flapping 2 min", taskring_env, load, recording_executor, fault, in_flight_at_fault=flying).check()


def test_report_counts_what_it_claims(taskring_env, recording_executor):
    """The figures can fail: a task acknowledged but never stored is lost."""
    from tests.integration.fault_matrix import Submitted
    load = MixedLoad(taskring_env, [])
    load.submitted["never-stored"] = Submitted("immediate", int(time.time() * 1000))
    figures = report("self-check", taskring_env, load, recording_executor, FaultClock(), in_flight_at_fault=0,
                     settle_timeout_s=1)
    assert figures.lost == 1 and not figures.passed()


# ---------------------------------------------------------------- row 6: executors

@pytest.fixture
def executor_b(taskring_env):
    b = ExecutorProcess(taskring_env.zk_hosts, taskring_env.logs)
    try:
        yield b
    finally:
        b.stop()


def executors_registered(env) -> int:
    from kazoo.client import KazooClient
    zk = KazooClient(hosts=env.zk_hosts)
    zk.start(timeout=15)
    try:
        return len(zk.get_children("/executors/tests")) if zk.exists("/executors/tests") else 0
    finally:
        zk.stop()
        zk.close()


def _executor_row(cluster, env, recording_executor, b: ExecutorProcess, row: str, fault_action) -> None:
    start(cluster)
    b.start()
    wait_until(lambda: executors_registered(env) == 2, 15, "both executors registered")
    load = MixedLoad(env, cluster.live()).start()
    fault = FaultClock()
    load.wait_accepted(1500)
    wait_until(lambda: b.executions(), 15, "the executor process to have run tasks")
    fault.start()
    flying = in_flight(env)
    fault_action()
    fault.end()
    load.wait_accepted(1500)
    report(row, env, load, recording_executor, fault, in_flight_at_fault=flying,
           more_executions=b.executions).check()


@repeat
def test_row6_an_executor_killed_mid_task(cluster, taskring_env, recording_executor, executor_b, run):
    def kill():
        executor_b.kill()
        # Its znode goes with its session (3 s): until then dispatchers may still pick it.
        wait_until(lambda: executors_registered(taskring_env) == 1, 15, "the dead executor's znode to go")
    _executor_row(cluster, taskring_env, recording_executor, executor_b, "6a executor kill -9", kill)


@repeat
def test_row6_an_executor_that_hangs(cluster, taskring_env, recording_executor, executor_b, run):
    def hang():
        executor_b.pause()
        time.sleep(2 * SESSION_S)  # the fault itself: a hung process, past its own session
        executor_b.resume()
    _executor_row(cluster, taskring_env, recording_executor, executor_b, "6b executor SIGSTOP", hang)


@repeat
def test_row6_an_executors_connections_dropped_mid_call(cluster, taskring_env, recording_executor, run):
    proxy = None
    b = None
    try:
        b = ExecutorProcess(taskring_env.zk_hosts, taskring_env.logs, name="executor-proxied")
        proxy = CutProxy("127.0.0.1", b.port)
        b.advertise_port = proxy.port

        def drop():
            proxy.cut()
            time.sleep(1)  # the fault's shape: calls in flight while the connection is dead
            proxy.restore()  # closes every proxied connection: in-flight calls fail
        _executor_row(cluster, taskring_env, recording_executor, b, "6c executor connection dropped", drop)
    finally:
        if b is not None:
            b.stop()
        if proxy is not None:
            proxy.close()


# ---------------------------------------------------------------- rows 7-9: the parts underneath

def stack(*args: str) -> None:
    import subprocess
    out = subprocess.run(["bash", "deploy/local/stack.sh", *args], cwd=REPO, capture_output=True, text=True,
                         timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr


def _stack_row(cluster, env, recording_executor, row: str, fault_action, *, settle_timeout_s: float = 60) -> None:
    start(cluster)
    load = MixedLoad(env, cluster.live()).start()
    fault = FaultClock()
    load.wait_accepted(1500)
    fault.start()
    flying = in_flight(env)
    try:
        fault_action()
    finally:
        fault.end()
    cluster.wait_settled(set(THREE), timeout_s=settle_timeout_s)
    load.targets = cluster.live()
    load.wait_accepted(1500, timeout_s=60)
    report(row, env, load, recording_executor, fault, in_flight_at_fault=flying).check()


@long_row
@repeat
@pytest.mark.parametrize("server", ["mariadb", "kafka"])
def test_row7_8_a_server_killed_and_restarted(cluster, taskring_env, recording_executor, server, run):
    def crash():
        stack("kill", server)
        try:
            time.sleep(5)  # the fault's shape: down for 5 s
        finally:
            stack("start", server)
    _stack_row(cluster, taskring_env, recording_executor, f"7/8 {server} kill -9 + restart", crash)


@long_row
@repeat
def test_row8_kafka_down_for_30s(cluster, taskring_env, recording_executor, run):
    # The broker advertises its own address, so a proxy cannot cut clients off from it:
    # "unreachable" is the broker stopped for 30 s.
    def down():
        stack("kill", "kafka")
        try:
            time.sleep(30)  # the fault itself
        finally:
            stack("start", "kafka")
    _stack_row(cluster, taskring_env, recording_executor, "8 kafka down 30 s", down)


@long_row
@repeat
def test_row7_mariadb_unreachable_for_30s(taskring_env, recording_executor, run):
    proxy = CutProxy(taskring_env.stack.host, taskring_env.stack.mysql_port)
    cluster = Cluster(taskring_env, TASKRING_RECOVERY_GRACE_MS="5000", TASKRING_RECOVERY_INTERVAL_MS="1000",
                      TASKRING_MYSQL_PORT=str(proxy.port))
    try:
        def cut():
            proxy.cut()
            try:
                time.sleep(30)  # the fault itself: silence, no reset
            finally:
                proxy.restore()
        _stack_row(cluster, taskring_env, recording_executor, "7 mariadb unreachable 30 s", cut)
    finally:
        cluster.stop_all()
        proxy.close()


@long_row
@repeat
def test_row9_zookeeper_down_for_60s(cluster, taskring_env, recording_executor, run):
    def down():
        stack("stop-zookeeper")
        try:
            time.sleep(60)  # the fault itself
        finally:
            stack("start-zookeeper")
    _stack_row(cluster, taskring_env, recording_executor, "9 zookeeper down 60 s", down)



# ---------------------------------------------------------------- row 10: a node's clock off

def _skewed_env(shift_s: float) -> dict[str, str]:
    return {"PYTHONPATH": str(REPO / "tests" / "integration" / "skewed_clock"),
            "TASKRING_TEST_WALL_CLOCK_SHIFT_S": str(shift_s)}


@repeat
@pytest.mark.parametrize("shift", [30, -30], ids=["ahead", "behind"])
def test_row10_a_node_whose_clock_is_30s_off(cluster, taskring_env, recording_executor, shift, run):
    # n1's clock is off from the start; the load goes through every node, so n1 also
    # stamps due times on what it accepts, and owns (and times) a third of the slots.
    cluster.add("n1", **_skewed_env(shift))
    cluster.add("n2")
    cluster.add("n3")
    for node in cluster.live():
        node.wait_ready()
    cluster.wait_settled(set(THREE))
    offset = cluster.nodes["n1"].metric("taskring_clock_offset_seconds")
    assert abs(abs(offset) - 30) < 1, f"n1 measured a clock offset of {offset} s"
    load = MixedLoad(taskring_env, cluster.live()).start()
    fault = FaultClock()
    fault.start()
    fault.end()   # the fault is there all along: lateness is judged over the whole run
    load.wait_accepted(3000)
    # No "after the fault" here, so no recovery time: a 300 ms scheduling hiccup of a loaded
    # box 7 s into the run would read as a 7 s recovery. What a skew that leaked into due
    # times would do is shift tasks by ~30 s; every first attempt within 5 s rules that out.
    report(f"10 clock {shift:+d} s", taskring_env, load, recording_executor, fault,
           in_flight_at_fault=0).check(recovery_bound_s=None, lateness_bound_s=5.0)


# ---------------------------------------------------------------- row 11: a full heap lost

@long_row
@repeat
@pytest.mark.timeout(900)
def test_row11_kill9_of_a_node_holding_100k_pending_tasks_in_its_heap(taskring_env, recording_executor, run):
    import random
    import uuid

    from taskring import Client, TaskSpec
    from tests.integration.fault_matrix import Submitted
    total = int(os.environ.get("TASKRING_ROW11_TASKS", "100000"))
    # Due in 90-150 s (about 1,700/s when they fall due): on the Kafka path (threshold 180 s),
    # so each lands in its owner's heap.
    cluster = Cluster(taskring_env, TASKRING_ROUTE_THRESHOLD_MS="180000", TASKRING_RECOVERY_GRACE_MS="5000")
    try:
        start(cluster)
        load = MixedLoad(taskring_env, [])   # holds the figures; this row submits by itself
        rng = random.Random(11)
        t0 = time.time()
        clients = [Client(n.target, rpc_timeout_s=30) for n in cluster.live()]
        try:
            for i in range(0, total, 1000):
                specs = []
                for _ in range(min(1000, total - i)):
                    due = t0 + 90 + rng.uniform(0, 60)
                    specs.append(TaskSpec("tests", rng.choice(RecordingExecutor.SPREAD_TYPES), {},
                                          task_id=str(uuid.uuid4()), delay=max(0.0, due - time.time())))
                for res in clients[(i // 1000) % len(clients)].submit_batch(specs):
                    assert res.due_at is not None, f"{res.task_id} accepted without a due time"
                    load.submitted[res.task_id] = Submitted("bulk", int(res.due_at.timestamp() * 1000))
        finally:
            for c in clients:
                c.close()
        print(f"\nrow 11: {total} tasks accepted in {time.time() - t0:.1f} s")
        assert time.time() < t0 + 85, "submitting took too long: tasks fell due before the kill"
        heaps = {n.node_id: n.status()["heap_size"] for n in cluster.live()}
        victim = max(heaps, key=lambda node_id: heaps[node_id])
        fault = FaultClock()
        fault.start()
        flying = in_flight(taskring_env)
        cluster.nodes[victim].kill()
        cluster.wait_settled(set(THREE) - {victim}, timeout_s=SESSION_S + 20)
        fault.end()
        figures = report(f"11 kill -9 of a node holding {heaps[victim]} of {total} pending", taskring_env, load,
                         recording_executor, fault, in_flight_at_fault=flying, settle_timeout_s=300)
        print(f"\nheaps before the kill: {heaps}")
        figures.check()
        assert heaps[victim] > total / 5, f"the victim held only {heaps[victim]} tasks in its heap"
    finally:
        cluster.stop_all()
