"""Cron fires under node faults on three real nodes (the cron issue's acceptance run).

Given a rule `* * * * * *` (every second, UTC) created through the CronService of a node
whose wall clock is 30 s ahead, on a slot that node owns,
when, in turn, the slot's owner is killed (kill -9) and restarted, frozen (SIGSTOP) past its
ZooKeeper session and thawed, every node is restarted in a rolling restart (SIGTERM, back,
settled, the next) and the owner, now 30 s behind, is killed and restarted again,
then every fire time from the first after creation to the last before the rule was deleted
(at least 300) has exactly one task, `cron-<uid>-<fire ms>`, which succeeded and ran at
least once (a re-run after a kill is a retry of that same task: one attempt series), none
started before its fire time, and none started later than a session timeout and a little.

The clocks: n3 runs with its wall clock shifted (time.time() and time.time_ns(), not the
monotonic clock) by tests/integration/skewed_clock/sitecustomize.py, loaded through
PYTHONPATH with TASKRING_TEST_WALL_CLOCK_SHIFT_S, as the fault matrix's row 10 does. This
shim is used instead of libfaketime, which hangs Python 3.11's timed waits (its wrappers of
clock_nanosleep and pthread_cond_timedwait fail or never return). Nodes follow the store's
clock (dispatcher/base/clock_sync.py), so the fires must stay on time whichever node owns them.

The lead: the first generation of nodes writes fires only 4 s ahead (TASKRING_CRON_LEAD_MS),
so that the kill and the freeze land on the materializer itself: the new owner must plan
the fires the old one never wrote, within cron_missed_after_ms, or they are lost. The
rolling restart brings every node back with the default lead (60 s), as a deploy changes a
setting, so the second kill is of an owner that had written its fires a minute ahead.

Waits are on conditions (fires that ran, the slot's owner in ZooKeeper, the ring settled),
each with a deadline; the one sleep is the freeze itself.
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator

import grpc
import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from cluster.slots import slot_of
from harness.executors import Execution, RecordingExecutor
from harness.processes import REPO, NodeProcess
from harness.stats import percentile
from harness.wait import wait_until
from harness.world import World
from taskring.wire import pb, pb_grpc
from tests.integration.cluster_harness import SESSION_TIMEOUT_MS, Cluster

# faults: the fault tier (deploy/local/test.sh --full, and CI), run alone on the machine.
pytestmark = [pytest.mark.integration, pytest.mark.faults]

THREE = {"n1", "n2", "n3"}
SESSION_S = SESSION_TIMEOUT_MS / 1000
SHORT_LEAD = {"TASKRING_CRON_LEAD_MS": "4000"}
DEFAULT_LEAD_MS = 60_000      # NodeConfig.cron_lead_ms: the second generation's
MIN_FIRES = 300
EARLY_TOLERANCE_MS = 5        # the executor's clock and the store's are this box's one clock
STEADY_P99_MS = 2_000
FAULT_MAX_MS = SESSION_TIMEOUT_MS + 12_000
NEAR_FAULT_BEFORE_MS = 2_000  # fires claimed into the victim's heap (poll_lookahead_ms) ...
NEAR_FAULT_AFTER_MS = 3_000   # ... and those of the seconds after the ring settled again
STOP_MARGIN_MS = 2_000        # fires this close to the delete may be cancelled instead of run


def skewed(shift_s: int) -> dict[str, str]:
    """The environment of a node whose wall clock is `shift_s` off (the module docstring)."""
    return {"PYTHONPATH": str(REPO / "tests" / "integration" / "skewed_clock"),
            "TASKRING_TEST_WALL_CLOCK_SHIFT_S": str(shift_s)}


def now_ms() -> int:
    return int(time.time() * 1000)


def iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%H:%M:%S.%f")[:-3]


# ---------------------------------------------------------------- what the run observes

class SlotOwnerLog:
    """Which node owned one slot when, as its claim znode (/owners/<slot>) says, sampled
    on a thread of its own: the report's "owner then", and a failure's evidence."""

    def __init__(self, env: World, slot: int, interval_s: float = 0.05):
        self.slot = slot
        self._interval_s = interval_s
        self._zk = KazooClient(hosts=env.zk_hosts)
        self._lock = threading.Lock()
        self._changes: list[tuple[int, str | None]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="slot-owner-log", daemon=True)

    def start(self) -> SlotOwnerLog:
        self._zk.start(timeout=15)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self._zk.stop()
        self._zk.close()

    def _read(self) -> str | None:
        try:
            data, _ = self._zk.get(f"/owners/{self.slot}")
        except NoNodeError:
            return None
        claim = json.loads(data or b"{}")
        return claim.get("node") if claim.get("epoch") is not None else None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                owner = self._read()
            except Exception:
                owner = "?"   # ZooKeeper did not answer this sample
            with self._lock:
                if not self._changes or self._changes[-1][1] != owner:
                    self._changes.append((now_ms(), owner))
            self._stop.wait(self._interval_s)

    def current(self) -> str | None:
        with self._lock:
            return self._changes[-1][1] if self._changes else None

    def at(self, ms: int) -> str | None:
        with self._lock:
            owner = None
            for t, o in self._changes:
                if t > ms:
                    break
                owner = o
            return owner

    def changes(self) -> list[tuple[int, str | None]]:
        with self._lock:
            return list(self._changes)


@dataclasses.dataclass
class Fault:
    name: str
    start_ms: int
    end_ms: int = 0

    def near(self, fire_ms: int) -> bool:
        return self.start_ms - NEAR_FAULT_BEFORE_MS <= fire_ms <= self.end_ms + NEAR_FAULT_AFTER_MS


class Timeline:
    def __init__(self) -> None:
        self.faults: list[Fault] = []

    @contextlib.contextmanager
    def fault(self, name: str) -> Iterator[Fault]:
        fault = Fault(name, now_ms())
        self.faults.append(fault)
        print(f"\n{iso(fault.start_ms)} fault: {name}", flush=True)
        try:
            yield fault
        finally:
            fault.end_ms = now_ms()
            print(f"{iso(fault.end_ms)} fault over: {name} ({(fault.end_ms - fault.start_ms) / 1000:.1f} s)",
                  flush=True)

    def phase_of(self, fire_ms: int) -> str:
        return next((f.name for f in self.faults if f.near(fire_ms)), "steady")


def fire_runs(executor: RecordingExecutor, prefix: str) -> dict[str, list[Execution]]:
    """The executions of each of the rule's fire tasks, oldest first."""
    runs: dict[str, list[Execution]] = {}
    for e in executor.snapshot():
        if e.task_id.startswith(prefix):
            runs.setdefault(e.task_id, []).append(e)
    return runs


class Fires:
    """Fires that ran: the one condition the run's steps wait on between faults."""

    def __init__(self, executor: RecordingExecutor, prefix: str):
        self.executor = executor
        self.prefix = prefix

    def count(self) -> int:
        return len({e.task_id for e in self.executor.snapshot() if e.task_id.startswith(self.prefix)})

    def wait(self, n: int, what: str) -> None:
        """Until `n` more fires (of one second each) have started."""
        base = self.count()
        wait_until(lambda: self.count() >= base + n, n + 2 * SESSION_S + 20, f"{n} more fires to run ({what})",
                   0.2)

    def wait_past(self, fire_ms: int, what: str) -> None:
        """Until a fire of `fire_ms` or later has started."""
        def ran() -> bool:
            return any(int(e.task_id[len(self.prefix):]) >= fire_ms for e in self.executor.snapshot()
                       if e.task_id.startswith(self.prefix))
        wait_until(ran, (fire_ms - now_ms()) / 1000 + 2 * SESSION_S + 20, f"the fire of {iso(fire_ms)} to run ({what})",
                   0.2)


@contextlib.contextmanager
def cron_service(node: NodeProcess) -> Iterator[pb_grpc.CronServiceStub]:
    channel = grpc.insecure_channel(node.target)
    try:
        yield pb_grpc.CronServiceStub(channel)
    finally:
        channel.close()


def clock_offset_s(node: NodeProcess) -> float:
    """The node's measured offset, store minus local: -30 for a clock 30 s ahead."""
    return node.metric("taskring_clock_offset_seconds")


def log_excerpt(env: World, words: tuple[str, ...] = ("cron", "Traceback", "ERROR", "stale", "epoch"),
                lines: int = 40) -> str:
    """The nodes' log lines that mention any of `words`, the last `lines` of each log."""
    out = []
    for node_id in sorted(THREE):
        path = env.logs / f"{node_id}.log"
        try:
            text = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        hits = [line for line in text if any(w in line for w in words)]
        out.append(f"--- {path} ({len(hits)} matching lines):\n" + "\n".join(hits[-lines:]))
    return "\n".join(out)


# ---------------------------------------------------------------- the faults

def kill_and_restart(cluster: Cluster, owners: SlotOwnerLog, fires: Fires, victim: str, env: dict[str, str]) -> None:
    """kill -9 of the slot's owner; the slot owned elsewhere and fires running there; the
    victim back with the same settings; the ring settled (the slot is the victim's again)."""
    wait_until(lambda: owners.current() == victim, 5, f"slot {owners.slot}'s claim to be {victim}'s")
    cluster.nodes[victim].kill()
    wait_until(lambda: owners.current() not in (None, "?", victim), SESSION_S + 10,
               f"slot {owners.slot} to be owned by a survivor of {victim}", 0.05)
    # Down long enough for the new owner to run fires past what the victim had planned (4 s
    # ahead in the first generation): fires it materialized itself.
    fires.wait_past(now_ms() + 6000, f"on {owners.current()} after the kill of {victim}")
    cluster.add(victim, **env).wait_ready()
    cluster.wait_settled(THREE, timeout_s=40)


def freeze_past_the_session(cluster: Cluster, env: World, owners: SlotOwnerLog, victim: str) -> None:
    """SIGSTOP of the slot's owner until the slot is another's (claim and epoch) and twice
    the session timeout has passed; SIGCONT; the ring settled with the victim back."""
    wait_until(lambda: owners.current() == victim, 5, f"slot {owners.slot}'s claim to be {victim}'s")
    epoch_before = env.epochs()[owners.slot]
    node = cluster.nodes[victim]
    node.pause()
    t0 = time.monotonic()
    try:
        wait_until(lambda: owners.current() not in (None, "?", victim), SESSION_S + 10,
                   f"slot {owners.slot} to be taken from the frozen {victim}", 0.05)
        wait_until(lambda: env.epochs()[owners.slot] > epoch_before, 10, "the new owner's epoch in MySQL")
        remaining = 2 * SESSION_S - (time.monotonic() - t0)
        if remaining > 0:
            time.sleep(remaining)  # the fault itself: a process frozen for a set time, not a wait for a result
    finally:
        node.resume()
    cluster.wait_settled(THREE, timeout_s=40)


# ---------------------------------------------------------------- the run

@pytest.fixture
def cluster(taskring_env, recording_executor) -> Iterator[Cluster]:
    c = Cluster(taskring_env)
    try:
        yield c
    finally:
        c.stop_all()


@pytest.mark.timeout(900)
def test_every_fire_time_runs_exactly_one_attempt_series_through_kill_freeze_rolling_restart_and_skewed_clocks(
        cluster, taskring_env, recording_executor):
    env = taskring_env
    # Given three nodes, n3's clock 30 s ahead, planning 4 s ahead
    first_env = {"n1": SHORT_LEAD, "n2": SHORT_LEAD, "n3": {**SHORT_LEAD, **skewed(30)}}
    for node_id in sorted(THREE):
        cluster.add(node_id, **first_env[node_id])
    for node in cluster.live():
        node.wait_ready()
    settled = cluster.wait_settled(THREE)
    offset = clock_offset_s(cluster.nodes["n3"])
    assert abs(offset + 30) < 1, f"n3 (30 s ahead) measured a clock offset of {offset} s"
    # ... and a task type of a slot that n3 owns
    assert env.partitions is not None
    partitions = env.partitions
    task_type = next(t for t in ("ok", *RecordingExecutor.SPREAD_TYPES) if settled[slot_of("tests", t, partitions)]
                     == "n3")
    slot = slot_of("tests", task_type, partitions)
    owners = SlotOwnerLog(env, slot).start()
    timeline = Timeline()
    try:
        wait_until(lambda: owners.current() == "n3", 10, f"the owner log to see n3 own slot {slot}")
        # When the rule is created through n3
        rule = pb.CronRule(namespace="tests", name="every-second", task_type=task_type,
                           payload_json='{"from": "cron"}', schedule="* * * * * *", time_zone="UTC")
        asked_ms = now_ms()
        with cron_service(cluster.nodes["n3"]) as cron:
            created = cron.CreateCronRule(pb.PutCronRuleRequest(rule=rule)).rule
        created_ms = int(dt.datetime.fromisoformat(created.created_at).timestamp() * 1000)
        assert asked_ms - 1000 <= created_ms <= now_ms() + 1000, (
            f"n3 stamped the rule created at {created.created_at}, {created_ms - asked_ms} ms off the store's clock")
        rule_uid = env.sql("SELECT rule_uid FROM cron_rules WHERE namespace = 'tests' AND name = 'every-second'")[0][0]
        prefix = f"cron-{rule_uid}-"
        fires = Fires(recording_executor, prefix)
        print(f"\nrule {rule_uid} on slot {slot} ({task_type}), created {iso(created_ms)} through n3 (+30 s)")

        fires.wait(20, "steady, n3 (+30 s) the owner")
        with timeline.fault("kill -9 n3 (+30 s)"):
            kill_and_restart(cluster, owners, fires, "n3", first_env["n3"])
        fires.wait(15, "steady after the kill")
        with timeline.fault("SIGSTOP n3 (+30 s) past its session"):
            freeze_past_the_session(cluster, env, owners, "n3")
        fires.wait(15, "steady after the freeze")
        # The rolling restart: every node back with the default lead, n3 now 30 s behind.
        second_env = {"n1": {}, "n2": {}, "n3": skewed(-30)}
        for node_id in sorted(THREE):
            with timeline.fault(f"SIGTERM {node_id} (rolling restart)"):
                assert cluster.nodes[node_id].terminate() == 0, f"{node_id} did not exit cleanly on SIGTERM"
                cluster.wait_settled(THREE - {node_id})
                cluster.add(node_id, **second_env[node_id]).wait_ready()
                cluster.wait_settled(THREE, timeout_s=40)
        offset = clock_offset_s(cluster.nodes["n3"])
        assert abs(offset - 30) < 1, f"n3 (30 s behind) measured a clock offset of {offset} s"
        fires.wait(20, "steady, n3 (-30 s) the owner")
        with timeline.fault("kill -9 n3 (-30 s)"):
            kill_and_restart(cluster, owners, fires, "n3", second_env["n3"])
        # Steady until the window holds enough fires.
        wanted_until = created_ms + (MIN_FIRES + 1) * 1000 + STOP_MARGIN_MS
        fires.wait(max(10, (wanted_until - now_ms()) // 1000 + 1), "steady until the window holds enough fires")
        stop_ms = now_ms()
        with cron_service(cluster.nodes["n3"]) as cron:
            cron.DeleteCronRule(pb.CronRuleRef(namespace="tests", name="every-second"))
        print(f"{iso(stop_ms)} rule deleted", flush=True)

        def terminal() -> bool:
            live = env.sql_all("SELECT COUNT(*) FROM tasks WHERE task_id LIKE %s"
                               " AND status NOT IN ('succeeded', 'dead_lettered', 'cancelled')", (prefix + "%",))
            return sum(n for (n,) in live) == 0
        try:
            wait_until(terminal, 30, "every fire task to be terminal", 0.25)
        except AssertionError as exc:
            stuck = env.sql_all("SELECT task_id, status, attempts, trigger_at, accepted_by, dispatched_by FROM tasks"
                                " WHERE task_id LIKE %s AND status NOT IN ('succeeded', 'dead_lettered',"
                                " 'cancelled') ORDER BY task_id LIMIT 20", (prefix + "%",))
            raise AssertionError(f"{exc}: {stuck}\n{log_excerpt(env)}") from None
    finally:
        owners.stop()

    # Then: the tasks, one per fire time of the schedule and nothing else
    rows = env.sql_all("SELECT task_id, status, attempts FROM tasks WHERE task_id LIKE %s", ("cron-%",))
    others = env.sql_all("SELECT COUNT(*) FROM tasks WHERE task_id NOT LIKE %s", ("cron-%",))
    assert sum(n for (n,) in others) == 0, "tasks other than the rule's fires exist"
    tasks_per_fire = Counter(tid.rsplit("-", 1)[1] for tid, _s, _a in rows)
    duplicates = sorted(int(ms) for ms, n in tasks_per_fire.items() if n > 1)
    assert not duplicates, f"fire times with more than one task: {[iso(ms) for ms in duplicates[:10]]}"
    foreign = [tid for tid, _s, _a in rows if not tid.startswith(prefix)]
    assert not foreign, f"fire tasks of another rule uid: {foreign[:5]}"
    status = {int(tid[len(prefix):]): s for tid, s, _a in rows}
    attempts = {int(tid[len(prefix):]): a for tid, _s, a in rows}
    off_second = sorted(ms for ms in status if ms % 1000)
    assert not off_second, f"fire tasks off the whole second: {[iso(ms) for ms in off_second[:5]]}"
    first_fire = (created_ms // 1000 + 1) * 1000   # the first second strictly after creation
    last_task = max(status)
    window_end = (stop_ms - STOP_MARGIN_MS) // 1000 * 1000
    window = list(range(first_fire, window_end + 1000, 1000))
    schedule = range(first_fire, last_task + 1000, 1000)
    early_tasks = sorted(ms for ms in status if ms < first_fire)
    missing = sorted(set(schedule) - set(status))

    def evidence(fire_list: list[int]) -> str:
        return (", ".join(f"{iso(ms)} (slot owner then: {owners.at(ms)})" for ms in fire_list[:10])
                + f"\nslot {slot} owners: {[(iso(t), o) for t, o in owners.changes()]}"
                + f"\nfaults: {[(f.name, iso(f.start_ms), iso(f.end_ms)) for f in timeline.faults]}"
                + f"\n{log_excerpt(env)}")
    assert not early_tasks, f"fire tasks before the first fire after creation ({iso(first_fire)}): " + evidence(
        early_tasks)
    assert not missing, f"{len(missing)} fire times without a task: " + evidence(missing)
    assert len(window) >= MIN_FIRES, f"only {len(window)} fire times in the window"
    assert last_task <= stop_ms + DEFAULT_LEAD_MS + 1000, (
        f"a fire task at {iso(last_task)}, further ahead of the delete than the lead")

    # ... every fire of the window succeeded and ran; those after it were run or cancelled
    runs = {int(tid[len(prefix):]): es for tid, es in fire_runs(recording_executor, prefix).items()}
    assert set(runs) <= set(status), "the executor ran fire tasks that are not in the store"
    not_ok = [ms for ms in window if status[ms] != "succeeded"]
    assert not not_ok, f"{len(not_ok)} fires of the window did not succeed: " + ", ".join(
        f"{iso(ms)} {status[ms]}" for ms in not_ok[:10]) + "\n" + evidence(not_ok)
    never_ran = [ms for ms in window if ms not in runs]
    assert not never_ran, f"{len(never_ran)} fires succeeded without the executor seeing them: " + evidence(never_ran)
    tail = [ms for ms in status if ms > window_end]
    bad_tail = [ms for ms in tail if status[ms] not in ("succeeded", "cancelled")]
    assert not bad_tail, f"fires after the delete neither ran nor cancelled: {[(iso(m), status[m]) for m in bad_tail]}"
    ran_cancelled = [ms for ms in tail if status[ms] == "cancelled" and ms in runs]
    assert not ran_cancelled, f"cancelled fires that the executor ran: {[iso(ms) for ms in ran_cancelled]}"

    # ... re-runs: a retry of the one task (an attempt series) is counted; one attempt run twice fails
    reruns = {ms: es for ms, es in runs.items() if len(es) > 1}
    same_attempt = {ms: es for ms, es in reruns.items()
                    if max(Counter(e.attempt for e in es).values()) > 1}
    for ms, es in sorted(reruns.items()):
        print(f"re-run: fire {iso(ms)} attempts {attempts[ms]} runs (attempt, epoch, started +ms)"
              f" {[(e.attempt, e.epoch, e.started_ms - ms) for e in es]} phase {timeline.phase_of(ms)}")

    # ... on time: none early, steady fires prompt, none late past a session and a little
    late = {ms: min(e.started_ms for e in runs[ms]) - ms for ms in window}
    early = {ms: v for ms, v in late.items() if v < -EARLY_TOLERANCE_MS}
    by_phase: dict[str, list[int]] = {}
    for ms, v in late.items():
        by_phase.setdefault(timeline.phase_of(ms), []).append(v)
    by_node = {int(tid[len(prefix):]): (m, d) for tid, m, d in env.sql_all(
        "SELECT task_id, accepted_by, dispatched_by FROM tasks WHERE task_id LIKE %s", (prefix + "%",))}
    for phase, values in by_phase.items():
        in_phase = [ms for ms in late if timeline.phase_of(ms) == phase]
        worst = max(in_phase, key=lambda ms: late[ms])
        print(f"lateness {phase}: fires={len(values)} p50={percentile(values, 50)} ms"
              f" p99={percentile(values, 99)} ms max={max(values)} ms min={min(values)} ms"
              f" (latest: fire {iso(worst)}, slot claimed by {owners.at(worst)} then);"
              f" materialized by {dict(Counter(by_node[ms][0] for ms in in_phase))},"
              f" dispatched by {dict(Counter(by_node[ms][1] for ms in in_phase))}")
    print(f"slot {slot} claims: " + ", ".join(f"{iso(t)} {o}" for t, o in owners.changes()))
    print(f"\ncron faults: fires={len(window)} tasks={len(status)} (after the window: {len(tail)},"
          f" cancelled {sum(1 for ms in tail if status[ms] == 'cancelled')}) missing={len(missing)}"
          f" duplicate_tasks={len(duplicates)} ran_more_than_once={len(reruns)} same_attempt_twice={len(same_attempt)}"
          f" early={len(early)} max_late_ms={max(late.values())}"
          f" steady_p99_ms={percentile(by_phase.get('steady', []), 99)}")
    # One attempt handed out twice would mean two owners at once: fencing forbids it.
    assert not same_attempt, "the same attempt of a fire ran twice: " + evidence(sorted(same_attempt))
    assert not early, f"{len(early)} fires started before their fire time: " + ", ".join(
        f"{iso(ms)} {v} ms" for ms, v in sorted(early.items())[:10])
    steady = by_phase.get("steady", [])
    assert len(steady) >= MIN_FIRES // 2, f"only {len(steady)} fires away from the faults"
    steady_p99 = percentile(steady, 99)
    assert steady_p99 is not None and steady_p99 < STEADY_P99_MS, f"steady fires started late: p99 {steady_p99} ms"
    too_late = sorted(ms for ms, v in late.items() if v > FAULT_MAX_MS)
    assert not too_late, f"{len(too_late)} fires started more than {FAULT_MAX_MS} ms late: " + ", ".join(
        f"{iso(ms)} +{late[ms]} ms ({timeline.phase_of(ms)})" for ms in too_late[:10]) + "\n" + evidence(too_late)
