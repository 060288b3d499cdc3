"""The cluster: ZooKeeper membership, consistent-hash slot ownership, fenced
handoff. Three real node processes under steady load in every test."""
from __future__ import annotations

import time

import pytest

from harness.executors import stale_deliveries
from harness.faults import CutProxy
from harness.wait import wait_until
from tests.integration.cluster_harness import (
    SESSION_TIMEOUT_MS,
    Cluster,
    LoadGenerator,
    ZkOwners,
    assert_nothing_lost,
    slots_of,
)

# serial: two tests stop the stack's ZooKeeper, and the others bound recovery by the session timeout.
pytestmark = [pytest.mark.integration, pytest.mark.serial]

THREE = {"n1", "n2", "n3"}


@pytest.fixture
def cluster(taskring_env, recording_executor):
    c = Cluster(taskring_env)
    try:
        yield c
    finally:
        c.stop_all()


def start_three(cluster: Cluster, **per_node_env) -> dict[int, str]:
    for node_id in sorted(THREE):
        cluster.add(node_id, **per_node_env.get(node_id, {}))
    for node in cluster.live():
        node.wait_ready()
    return cluster.wait_settled(THREE)


def report(name: str, **figures) -> None:
    print(f"\n{name}: " + ", ".join(f"{k}={v}" for k, v in figures.items()))


def test_each_node_claims_and_consumes_only_the_slots_it_owns(cluster, taskring_env, recording_executor):
    owners = start_three(cluster)
    load = LoadGenerator(taskring_env, cluster.live()).start()
    t0 = time.time()
    try:
        # Let both paths carry work into every node: MySQL rows fall due after 2-3 s.
        wait_until(lambda: all(n.status()["last_claimed_at"] and n.status()["last_consumed_at"]
                               for n in cluster.live()), 30, "every node to claim rows and consume messages")
    finally:
        load.stop()
    assert cluster.owners() == owners, "ownership moved during a steady run"
    for node in cluster.live():
        status = node.status()
        mine = {s for s, o in owners.items() if o == node.node_id}
        claimed = {int(s) for s, at in status["last_claimed_at"].items() if at >= t0}
        consumed = {int(s) for s, at in status["last_consumed_at"].items() if at >= t0}
        assert claimed and consumed
        assert claimed <= mine, f"{node.node_id} claimed rows of slots it does not own: {claimed - mine}"
        assert consumed <= mine, f"{node.node_id} consumed partitions it does not own: {consumed - mine}"
    assert_nothing_lost(taskring_env, load)


def test_a_fourth_node_takes_about_a_quarter_of_the_slots_and_nothing_runs_twice(cluster, taskring_env,
                                                                                 recording_executor):
    before = start_three(cluster)
    load = LoadGenerator(taskring_env, cluster.live()).start()
    try:
        wait_until(lambda: len(load.acked) > 300, 20, "load to flow")
        cluster.add("n4").wait_ready()
        after = cluster.wait_settled(THREE | {"n4"})
        wait_until(lambda: len(load.acked) > 1200, 30, "load to continue after the join")
    finally:
        load.stop()
    moved = {s for s in before if before[s] != after[s]}
    assert moved and all(after[s] == "n4" for s in moved), f"slots moved elsewhere than n4: {moved}"
    assert 1 <= len(moved) <= 8, f"{len(moved)} of 16 slots moved (ideal 4)"
    figures = assert_nothing_lost(taskring_env, load)
    duplicates = recording_executor.duplicates()
    report("join", slots_moved=len(moved), of=len(before), ideal=len(before) / 4, duplicates=len(duplicates),
           **figures)
    assert duplicates == {}


def test_sigterm_hands_a_nodes_slots_to_the_others_and_nothing_runs_twice(cluster, taskring_env,
                                                                          recording_executor):
    before = start_three(cluster)
    leaving = cluster.nodes["n2"]
    load = LoadGenerator(taskring_env, [cluster.nodes["n1"], cluster.nodes["n3"]]).start()
    try:
        wait_until(lambda: len(load.acked) > 300, 20, "load to flow")
        t0 = time.monotonic()
        assert leaving.terminate() == 0
        after = cluster.wait_settled({"n1", "n3"})
        reown_s = time.monotonic() - t0
        wait_until(lambda: len(load.acked) > 1000, 30, "load to continue after the leave")
    finally:
        load.stop()
    moved = {s for s in before if before[s] != after[s]}
    assert moved == {s for s, o in before.items() if o == "n2"}
    figures = assert_nothing_lost(taskring_env, load)
    duplicates = recording_executor.duplicates()
    report("sigterm", slots_moved=len(moved), reown_s=round(reown_s, 2), duplicates=len(duplicates), **figures)
    assert duplicates == {}


def test_kill9_slots_are_reowned_within_the_session_timeout(cluster, taskring_env, recording_executor):
    before = start_three(cluster)
    victim = cluster.nodes["n3"]
    victim_slots = {s for s, o in before.items() if o == "n3"}
    load = LoadGenerator(taskring_env, [cluster.nodes["n1"], cluster.nodes["n2"]]).start()
    try:
        wait_until(lambda: len(load.acked) > 300, 20, "load to flow")
        victim.kill()
        t_kill = time.monotonic()
        marks = ",".join(str(s) for s in victim_slots)
        in_flight = taskring_env.sql(f"SELECT COUNT(*) FROM tasks WHERE status = 'dispatched' AND slot IN ({marks})")
        in_flight = in_flight[0][0]
        zk = ZkOwners(taskring_env)
        try:
            owners = wait_until(lambda: (lambda o: o if all(o.get(s) in ("n1", "n2") for s in victim_slots)
                                         else None)(zk.owners()),
                                SESSION_TIMEOUT_MS / 1000 + 10, "the victim's slots to be owned again", 0.02)
            reown_s = time.monotonic() - t_kill
        finally:
            zk.close()
        cluster.wait_settled({"n1", "n2"})
        wait_until(lambda: len(load.acked) > 1000, 30, "load to continue after the kill")
    finally:
        load.stop()
    figures = assert_nothing_lost(taskring_env, load)
    duplicates = recording_executor.duplicates()
    report("kill -9", reown_s=round(reown_s, 2), session_timeout_s=SESSION_TIMEOUT_MS / 1000,
           in_flight_on_victim=in_flight, duplicates=len(duplicates), **figures)
    assert reown_s <= SESSION_TIMEOUT_MS / 1000 + 2
    assert len(duplicates) <= in_flight
    assert stale_deliveries(recording_executor.snapshot(), slots_of(taskring_env, load.acked)) == []
    assert owners


def test_a_frozen_node_writes_and_dispatches_nothing_for_slots_it_lost(cluster, taskring_env, recording_executor):
    before = start_three(cluster)
    frozen = cluster.nodes["n1"]
    lost = {s for s, o in before.items() if o == "n1"}
    load = LoadGenerator(taskring_env, [cluster.nodes["n2"], cluster.nodes["n3"]]).start()
    try:
        wait_until(lambda: len(load.acked) > 300, 20, "load to flow")
        epochs_before = taskring_env.epochs()
        frozen.pause()
        t_freeze = time.monotonic()
        wait_until(lambda: all(cluster.owners(cluster.nodes["n2"])[s] in ("n2", "n3") for s in lost),
                   SESSION_TIMEOUT_MS / 1000 + 10, "the frozen node's slots to be taken over")
        # The claim znode comes first, the epoch bump in MySQL right after: wait for both.
        epochs_taken = wait_until(lambda: (lambda e: e if all(e[s] > epochs_before[s] for s in lost) else None)(
            taskring_env.epochs()), 10, "the new owners' epochs in MySQL")
        # Stay frozen for twice the session timeout in all.
        remaining = 2 * SESSION_TIMEOUT_MS / 1000 - (time.monotonic() - t_freeze)
        if remaining > 0:
            time.sleep(remaining)  # the fault itself: a process frozen for a set time, not a wait for a result
        resume_wall = time.time()
        frozen.resume()
        cluster.wait_settled(THREE, timeout_s=40)
        wait_until(lambda: len(load.acked) > 1200, 30, "load to continue after the rejoin")
    finally:
        load.stop()
    assert all(epochs_taken[s] > epochs_before[s] for s in lost)
    # Nothing of a lost slot was dispatched under the old epoch after the takeover ...
    slot_of_task = slots_of(taskring_env, load.acked)
    stale = [e for e in recording_executor.snapshot()
             if slot_of_task.get(e.task_id) in lost and e.epoch < epochs_taken[slot_of_task[e.task_id]]
             and e.started_ms >= resume_wall * 1000]
    if stale:
        marks = ",".join(["%s"] * len(stale))
        dispatched = taskring_env.sql(
            f"SELECT task_id, attempt, node, UNIX_TIMESTAMP(at) * 1000 FROM task_history WHERE state = 'dispatched'"
            f" AND task_id IN ({marks})", [e.task_id for e in stale])
        detail = [(e.task_id[:8], e.attempt, e.epoch, e.started_ms - int(resume_wall * 1000),
                   [(a, n, int(float(at)) - int(resume_wall * 1000)) for t, a, n, at in dispatched if t == e.task_id])
                  for e in stale]
        raise AssertionError(f"{len(stale)} deliveries under a lost epoch after the resume"
                             f" (task, attempt, epoch, started ms after the resume, dispatches: (attempt, node,"
                             f" ms after the resume)): {detail}")
    assert stale_deliveries(recording_executor.snapshot(), slot_of_task) == []
    # ... and no state change was written for it by the frozen node until it claimed it again.
    rows = taskring_env.sql(
        "SELECT COUNT(*) FROM task_history e JOIN tasks t ON t.task_id = e.task_id"
        " JOIN slot_owners o ON o.slot = t.slot"
        " WHERE e.node = 'n1' AND e.at >= FROM_UNIXTIME(%s) AND e.at < o.claimed_at AND t.slot IN ("
        + ",".join(str(s) for s in lost) + ")", (resume_wall,))
    assert rows[0][0] == 0, f"{rows[0][0]} stale-epoch writes by the frozen node"
    figures = assert_nothing_lost(taskring_env, load)
    report("sigstop", lost_slots=len(lost), stale_epoch_writes=rows[0][0],
           duplicates=len(recording_executor.duplicates()), **figures)


def test_a_node_cut_off_from_zookeeper_alone_hands_its_slots_over(cluster, taskring_env, recording_executor):
    proxy = CutProxy(taskring_env.stack.host, taskring_env.stack.zk_port)
    chroot = taskring_env.zk_hosts.split("/", 1)[1]
    try:
        before = start_three(cluster, n3={"TASKRING_ZK": f"127.0.0.1:{proxy.port}/{chroot}"})
        cut_slots = {s for s, o in before.items() if o == "n3"}
        load = LoadGenerator(taskring_env, [cluster.nodes["n1"], cluster.nodes["n2"]]).start()
        try:
            wait_until(lambda: len(load.acked) > 300, 20, "load to flow")
            proxy.cut()
            # Its session expires; the others claim its slots, the store refuses them while
            # its leases are live and marks the slots wanted, and it hands them over ...
            wait_until(lambda: not cluster.nodes["n3"].status()["owned_slots"], SESSION_TIMEOUT_MS / 1000 + 10,
                       "the cut node to hand its slots over")
            # ... and the others own them.
            wait_until(lambda: all(cluster.owners(cluster.nodes["n1"])[s] in ("n1", "n2") for s in cut_slots),
                       SESSION_TIMEOUT_MS / 1000 + 10, "the others to own the cut node's slots")
            proxy.restore()
            cluster.wait_settled(THREE, timeout_s=40)
            wait_until(lambda: len(load.acked) > 1200, 30, "load to continue after the cut")
        finally:
            load.stop()
    finally:
        proxy.close()
    slot_of_task = slots_of(taskring_env, load.acked)
    assert stale_deliveries(recording_executor.snapshot(), slot_of_task) == [], "two owners acted on one slot"
    figures = assert_nothing_lost(taskring_env, load)
    report("zk cut", cut_slots=len(cut_slots), duplicates=len(recording_executor.duplicates()), **figures)


def _stack(*args: str) -> str:
    """Run deploy/local/stack.sh; its output. The script's own bounds (30 s to stop,
    TASKRING_READY_TIMEOUT to answer) are inside this one: killed half-way, it would
    leave ZooKeeper down for every test after this."""
    import subprocess

    from harness.processes import REPO
    out = subprocess.run(["bash", "deploy/local/stack.sh", *args], cwd=REPO, capture_output=True, text=True,
                         timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_a_zookeeper_outage_past_the_session_timeout_keeps_every_node_dispatching(cluster, taskring_env,
                                                                                   recording_executor):
    before = start_three(cluster)
    epochs_before = taskring_env.epochs()
    load = LoadGenerator(taskring_env, cluster.live()).start()
    try:
        wait_until(lambda: len(load.acked) > 300, 20, "load to flow")
        _stack("stop-zookeeper")
        try:
            # Tasks started twice the session timeout into the outage: every node carries
            # on under its store leases (it used to stop within the session timeout).
            late_ms = (time.time() + 2 * SESSION_TIMEOUT_MS / 1000) * 1000
            wait_until(lambda: sum(1 for e in recording_executor.snapshot() if e.started_ms > late_ms) >= 300,
                       30, "300 tasks to start with ZooKeeper down past twice the session timeout")
            assert all(node.probe("/readyz") for node in cluster.live()), "a node reported not ready"
            started_during = {e.task_id for e in recording_executor.snapshot() if e.started_ms > late_ms}
        finally:
            _stack("start-zookeeper")
        after = cluster.wait_settled(THREE, timeout_s=40)
        acked = len(load.acked)
        wait_until(lambda: len(load.acked) > acked + 300, 30, "load to continue after the outage")
    finally:
        load.stop()
    # Nothing moved: the same owners under the same epochs, before, during and after.
    assert after == before
    assert taskring_env.epochs() == epochs_before, "a slot was claimed again: ownership changed"
    slot_of_task = slots_of(taskring_env, load.acked)
    assert {before[slot_of_task[t]] for t in started_during if t in slot_of_task} == THREE, \
        "a node did not dispatch during the outage"
    assert stale_deliveries(recording_executor.snapshot(), slot_of_task) == []
    figures = assert_nothing_lost(taskring_env, load)
    report("zk outage", started_during=len(started_during), duplicates=len(recording_executor.duplicates()),
           **figures)


def test_a_zookeeper_restart_shorter_than_the_session_timeout_changes_no_ownership(taskring_env,
                                                                                    recording_executor):
    cluster = Cluster(taskring_env, TASKRING_ZK_SESSION_TIMEOUT_MS="10000")
    try:
        before = start_three(cluster)
        epochs_before = taskring_env.epochs()
        load = LoadGenerator(taskring_env, cluster.live()).start()
        try:
            wait_until(lambda: len(load.acked) > 300, 20, "load to flow")
            t0 = time.time()
            out = _stack("restart-zookeeper")
            after = cluster.wait_settled(THREE, timeout_s=20)
            wait_until(lambda: all(n.probe("/readyz") for n in cluster.live()), 20, "every node ready again")
            acked = len(load.acked)
            wait_until(lambda: len(load.acked) > acked + 300, 30, "load to continue after the restart")
        finally:
            load.stop()
        assert after == before
        assert taskring_env.epochs() == epochs_before, "a claim was re-made: ownership changed"
        moves = [m for n in cluster.live() for m in n.status()["ownership_moves"] if m[0] >= t0]
        assert moves == []
        figures = assert_nothing_lost(taskring_env, load)
        report("zk restart", restart=out.strip().splitlines()[-1], **figures)
    finally:
        cluster.stop_all()


def test_retries_follow_the_slot_to_its_new_owner(cluster, taskring_env, recording_executor):
    from cluster.slots import slot_of
    from taskring import Client, RetryPolicy, TaskSpec
    before = start_three(cluster)
    slot = slot_of("tests", "fail_then_ok", taskring_env.partitions)
    old_owner = cluster.nodes[before[slot]]
    entry = next(n for n in cluster.live() if n is not old_owner)
    # Given tasks whose first attempt fails and whose retry waits on the Kafka path (1 s)
    # or on the MySQL path (2.5 s, past the 1.5 s route threshold)
    specs = [TaskSpec("tests", "fail_then_ok", {"failures": 1}, max_retries=2,
                      retry_policy=RetryPolicy.tiered(1.0 if i % 2 else 2.5)) for i in range(20)]
    with Client(entry.target) as client:
        ids = [r.task_id for r in client.submit_batch(specs)]
        wait_until(lambda: len({e.task_id for e in recording_executor.snapshot()}) == 20, 20,
                   "every task's first attempt")
        # When the slot's owner leaves while the retries wait
        assert old_owner.terminate() == 0
        after = cluster.wait_settled(THREE - {old_owner.node_id})
        wait_until(lambda: all(client.get(t).state.value == "succeeded" for t in ids), 30, "the retries to succeed")
        infos = [client.get(t) for t in ids]
    # Then each retry was dispatched by the slot's new owner, and only by it
    for info in infos:
        by_attempt = {e.attempt: e.node for e in info.history if e.state.value == "dispatched"}
        assert by_attempt == {1: old_owner.node_id, 2: after[slot]}, by_attempt
    assert recording_executor.duplicates() == {}
