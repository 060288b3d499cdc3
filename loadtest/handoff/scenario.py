"""The cluster-handoff run: a private cluster under steady load, and each membership event in turn
(joins, leaves, kill -9, SIGTERM) with what ZooKeeper, the nodes and the executors saw around it.
"""
from __future__ import annotations

import argparse
import functools
import os
import pathlib
import signal
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Collection
from typing import Any

from cluster.ring import desired_owners
from cluster.slots import slot_of
from harness.processes import NodeProcess
from harness.stack import StackEndpoints
from harness.stats import dip_figures, percentile, tail
from harness.wait import wait_until
from harness.world import new_run_id
from loadtest.bench.env import NAMESPACE, SLOTS, BenchEnv, spread_task_types
from loadtest.bench.executors import Executors, Run
from loadtest.bench.load import PacedLoad
from loadtest.bench.observe import ProcessSampler, scan_logs
from loadtest.bench.store import task_statuses, wait_terminal
from loadtest.bench.zk import RingPoller, ZkObserver, ZkSample, get_json, settled_pred

WINDOW_MS = 250
ROUTE_THRESHOLD_MS = 1500
TYPES_PER_SLOT = 4


def task_types() -> list[str]:
    """64 task types, 4 in every slot."""
    return spread_task_types(per_slot=TYPES_PER_SLOT, prefix="t")


# ================================================================ the scenarios


class ClusterBench:
    """The live cluster's part of a run: n1..n3, the load, then the membership changes and
    the re-own series, the drain, and the figures of every event."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.run_id = new_run_id(10)
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix=f"taskring-bench-cluster-{self.run_id}-"))
        self.logs = self.dir / "logs"
        self.env = BenchEnv(StackEndpoints.from_env(), "bench", self.dir, logs=self.logs, run_id=self.run_id,
                            node_stop_timeout_s=30.0)
        self.session_ms: dict[str, int] = {}
        self.events: list[dict[str, Any]] = []
        self.timeline: list[tuple[float, str]] = []
        self.types = task_types()
        self.target_names: dict[str, str] = {}
        self.sampler = ProcessSampler()
        self.zk: ZkObserver | None = None
        self.executors: Executors | None = None
        self.load: PacedLoad | None = None
        self.runs: list[Run] = []
        self.acked_doc: dict[str, Any] = {}
        self.t_start = time.time()

    def note(self, what: str) -> None:
        t = time.time()
        self.timeline.append((t, what))
        print(f"  [{t - self.t_start:7.2f}s] {what}", flush=True)

    @property
    def observer(self) -> ZkObserver:
        if self.zk is None:
            raise RuntimeError("the ZooKeeper observer is started in run()")
        return self.zk

    @property
    def nodes(self) -> dict[str, NodeProcess]:
        return self.env.nodes

    @property
    def paced(self) -> PacedLoad:
        if self.load is None:
            raise RuntimeError("the load is started in start_workers()")
        return self.load

    # ---- nodes, load, executor ----

    def start_node(self, node_id: str, session_ms: int) -> NodeProcess:
        node = self.env.start_node(node_id, TASKRING_ZK_SESSION_TIMEOUT_MS=str(session_ms),
                                   TASKRING_ROUTE_THRESHOLD_MS=str(ROUTE_THRESHOLD_MS))
        self.session_ms[node_id] = session_ms
        self.target_names[node.target] = node_id
        self.sampler.role(node.pid, "nodes", node_id)
        return node

    def wait_settled(self, members: set[str], since: float, timeout_s: float = 40.0) -> ZkSample:
        return self.observer.wait(settled_pred(members), since, timeout_s, f"the ring to settle on {sorted(members)}")

    def set_targets(self, exclude: Collection[str] = frozenset()) -> None:
        self.paced.set_targets([self.nodes[n].target for n in self.env.live() if n not in exclude])

    def set_phase(self, phase: str) -> None:
        self.paced.set_phase(phase)

    def start_workers(self) -> None:
        a = self.args
        self.executors = Executors(self.env.world, self.types, 1, a.max_in_flight, out_dir=self.dir)
        self.env.on_stop("executor", functools.partial(self.executors.stop, timeout_s=30))
        self.executors.start()
        for pid in self.executors.pids:
            if pid is not None:
                self.sampler.role(pid, "bench", "executor")
        self.load = PacedLoad([self.nodes[n].target for n in self.env.live()], a.rate, self.types,
                              long_delay_share=a.long_delay_share, threads=a.load_threads, batch=a.batch,
                              out_path=self.dir / "acked.json", seed=11)
        self.env.on_stop("load", self.load.stop)
        self.load.start()
        if self.load.pid is not None:
            self.sampler.role(self.load.pid, "bench", "load")

    def wait_flowing(self, n: int = 500, timeout_s: float = 30) -> None:
        executors, load = self.executors, self.paced
        assert executors is not None, "start_workers() first"
        a0, e0 = load.acked(), executors.executed()
        wait_until(lambda: load.acked() - a0 >= n and executors.executed() - e0 >= n, timeout_s,
                   f"load to flow ({n} more acked and executed)", 0.1)

    @staticmethod
    def owners_of(sample: ZkSample, node_id: str) -> set[int]:
        return {s for s, o in sample.owners.items() if o[0] == node_id}

    # ---- one membership change: a join, or a leave on SIGTERM ----

    def membership_change(self, name: str, *, join: str | None = None, leave: str | None = None) -> dict[str, Any]:
        node = join or leave                                # the node that joins or leaves
        if node is None:
            raise ValueError(f"{name}: membership_change needs join= or leave=")
        zk = self.observer
        before_members = set(self.env.live())
        after_members = before_members | {node} if join else before_members - {node}
        self.set_phase(name)
        before = self.wait_settled(before_members, time.time())
        time.sleep(self.args.quiet_s + self.args.baseline_s)
        t_event = time.time()
        rec: dict[str, Any] = {"name": name, "kind": "join" if join else "leave", "node": node,
                               "members_before": sorted(before_members), "members_after": sorted(after_members),
                               "t_event": t_event}
        exited: threading.Thread | None = None
        if join:
            self.note(f"{name}: start {join}")
            self.start_node(join, self.args.session_ms)
            reg = zk.wait(lambda s: join in s.members, t_event, 30, f"{join} to register")
            rec["t_registered"] = reg.members[join] / 1000
            rec["registered_after_start_s"] = rec["t_registered"] - t_event
            t_from = rec["t_registered"]
        else:
            self.note(f"{name}: SIGTERM {node}")
            self.set_targets(exclude={node})
            proc = self.nodes[node].started
            t_event = rec["t_event"] = time.time()
            proc.send_signal(signal.SIGTERM)
            exited = threading.Thread(target=proc.wait, daemon=True)
            exited.start()
            t_from = t_event
        after = self.wait_settled(after_members, t_event)
        if exited is not None:
            exited.join(30)
            rec["exit_code"] = self.nodes[node].started.returncode
        self.note(f"{name}: settled")
        self.set_targets()
        b, a = ({s: o[0] for s, o in before.owners.items()}, {s: o[0] for s, o in after.owners.items()})
        moved = sorted(s for s in range(SLOTS) if b.get(s) != a.get(s))
        only_that_node = all((a[s] == node) if join else (b[s] == node) for s in moved)
        # Every owner any slot had in between (None = unclaimed for a moment).
        seen: dict[int, list] = defaultdict(list)
        for s in zk.since(t_event):
            if s.t > after.t:
                break
            for slot in range(SLOTS):
                o = s.owners.get(slot, (None,))[0]
                if not seen[slot] or seen[slot][-1] != o:
                    seen[slot].append(o)
        transient = {slot: seq for slot, seq in seen.items()
                     if any(o is not None and o not in (b.get(slot), a.get(slot)) for o in seq)}
        predicted = sorted(s for s in range(SLOTS)
                           if desired_owners(before_members, SLOTS)[s] != desired_owners(after_members, SLOTS)[s])
        mtimes = [after.owners[s][3] / 1000 for s in moved]
        larger = max(len(before_members), len(after_members))
        rec.update({
            "moved_slots": moved, "moved": len(moved), "ideal": SLOTS / larger,
            "moved_fraction": len(moved) / SLOTS, "ideal_fraction": 1 / larger,
            "only_to_from_that_node": only_that_node, "predicted_by_ring": predicted,
            "matches_ring": predicted == moved, "transient_other_owners": {str(k): v for k, v in transient.items()},
            "handoff_s_zk_stat": (max(mtimes) - t_from) if mtimes else 0.0,
            "settled_s_zk_poll": after.t - t_from, "t_done": after.t,
        })
        time.sleep(self.args.after_s)
        self.events.append(rec)
        return rec

    # ---- one re-own: kill -9 or SIGTERM of a member, then (optionally) its restart ----

    def reown(self, name: str, victim: str, how: str, restart_session_ms: int) -> dict[str, Any]:
        zk = self.observer
        members = set(self.env.live())
        survivors = members - {victim}
        self.set_phase(name)
        self.wait_settled(members, time.time())
        time.sleep(self.args.quiet_s + self.args.baseline_s)
        snap = zk.latest()
        assert snap is not None, "the ZooKeeper observer has samples once the ring has settled"
        victim_slots = sorted(self.owners_of(snap, victim))
        old_epochs = {s: snap.owners[s][1] for s in victim_slots}
        ring = RingPoller(self.nodes[sorted(survivors)[0]].admin)
        self.env.on_stop(f"{name}: /ring poller", ring.stop)
        ring.start()
        time.sleep(0.3)                                     # a few /ring polls before the event
        self.set_targets(exclude={victim})
        proc = self.nodes[victim].started
        self.note(f"{name}: {how} {victim} (session {self.session_ms[victim]} ms, slots {victim_slots})")
        t_event = time.time()
        if how == "kill -9":
            proc.kill()
        else:
            proc.send_signal(signal.SIGTERM)
        t_exit: list[float] = []

        def wait_exit() -> None:
            proc.wait()
            t_exit.append(time.time())
        waiter = threading.Thread(target=wait_exit, daemon=True)
        waiter.start()

        def reowned(s: ZkSample) -> bool:
            return all(s.owners.get(x, (None, None))[0] in survivors and s.owners[x][1] is not None
                       for x in victim_slots)

        def ring_shows_survivors(owners: dict) -> bool:
            return all(owners.get(x) in survivors for x in victim_slots)

        timeout = self.session_ms[victim] / 1000 + 20
        got = zk.wait(reowned, t_event, timeout, f"{victim}'s slots to be re-owned")
        gone = zk.wait(lambda s: victim not in s.members and not self.owners_of(s, victim), t_event, timeout,
                       f"{victim}'s znodes to vanish")
        done = self.wait_settled(survivors, t_event)
        self.note(f"{name}: re-owned after {got.t - t_event:.2f} s (zk poll)")
        # /ring: wait until it shows the new owners (it lags by its cache), then stop polling.
        deadline = time.monotonic() + 5
        while ring.first(ring_shows_survivors, t_event)[0] is None and time.monotonic() < deadline:
            time.sleep(0.05)
        ring.stop()
        ring_t, ring_gen = ring.first(ring_shows_survivors, t_event)
        assigned = self.survivors_moves(survivors, victim_slots, t_event)
        waiter.join(30)
        new = {x: got.owners[x] for x in victim_slots}
        rec = {
            "name": name, "kind": how, "victim": victim, "victim_session_ms": self.session_ms[victim],
            "survivor_session_ms": {n: self.session_ms[n] for n in sorted(survivors)},
            "victim_slots": victim_slots, "t_event": t_event, "t_done": got.t,
            "reown_s_zk_stat": max(o[3] for o in new.values()) / 1000 - t_event if new else 0.0,
            "first_claim_s_zk_stat": min(o[2] for o in new.values()) / 1000 - t_event if new else 0.0,
            "last_claim_created_s_zk_stat": max(o[2] for o in new.values()) / 1000 - t_event if new else 0.0,
            "reown_s_zk_poll": got.t - t_event,
            "victim_znodes_gone_s_zk_poll": gone.t - t_event,
            "reown_s_ring_poll": None if ring_t is None else ring_t - t_event,
            "ring_generated_at_s": None if ring_gen is None else ring_gen - t_event,
            "ring_polls": len(ring.polls), "ring_poll_errors": ring.errors,
            "ring_request_ms_p50": percentile(ring.request_ms, 50),
            "ring_request_ms_max": max(ring.request_ms, default=None),
            "reown_s_node_moves": (max(t for _, t in assigned.values()) - t_event) if len(assigned) == len(victim_slots)
            else None,
            "node_moves_found": len(assigned),
            "settled_s_zk_poll": done.t - t_event,
            "process_exit_s": (t_exit[0] - t_event) if t_exit else None,
            "exit_code": proc.returncode,
            "new_owners": {str(x): new[x][0] for x in victim_slots},
            "epochs": {str(x): [old_epochs[x], new[x][1]] for x in victim_slots},
            "epochs_bumped": all(new[x][1] > old_epochs[x] for x in victim_slots),
        }
        time.sleep(self.args.after_s)
        self.events.append(rec)
        # Bring the victim back (the next repeat needs three nodes).
        if restart_session_ms:
            t_back = time.time()
            self.start_node(victim, restart_session_ms)
            self.wait_settled(members, t_back)
            self.set_targets()
            rec["restart_to_settled_s"] = time.time() - t_back
            self.note(f"{name}: {victim} back (session {restart_session_ms} ms), settled")
        return rec

    def survivors_moves(self, survivors: set[str], slots: list[int], since: float) -> dict[int, tuple[str, float]]:
        """The survivors' own record of when they took each slot (`ownership_moves` "assigned")."""
        assigned: dict[int, tuple[str, float]] = {}
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and len(assigned) < len(slots):
            for n in sorted(survivors):
                try:
                    st = get_json(self.nodes[n].admin + "/ring")["node_status"]
                except Exception:
                    continue
                for t, slot, kind in st.get("ownership_moves", []):
                    if kind == "assigned" and slot in slots and t >= since:
                        assigned[slot] = (n, t)
            if len(assigned) < len(slots):
                time.sleep(0.3)
        return assigned

    # ---- the run ----

    def run(self) -> dict[str, Any]:
        a = self.args
        result: dict[str, Any] = {"params": params_of(a), "run_id": self.run_id, "logs": str(self.logs)}
        self.env.start()
        self.zk = ZkObserver(self.env.world.zk_hosts)
        self.env.on_stop("ZooKeeper observer", self.zk.stop)
        self.env.on_stop("process sampler", self.sampler.stop)
        try:
            self.zk.start()
            self.sampler.start()
            self.note("starting n1, n2, n3")
            t0 = time.time()
            for n in ("n1", "n2", "n3"):
                self.start_node(n, a.session_ms)
            for n in ("n1", "n2", "n3"):
                self.nodes[n].wait_ready(60)
            s = self.wait_settled({"n1", "n2", "n3"}, t0, 60)
            result["startup_to_settled_s"] = s.t - t0
            self.note("settled; starting the executor and the load")
            self.start_workers()
            self.wait_flowing()
            self.note(f"load flowing ({a.rate:.0f} tasks/s offered)")
            self.set_phase("warmup")
            time.sleep(2)

            self.membership_change("join-3to4", join="n4")
            self.membership_change("join-4to5", join="n5")
            self.membership_change("leave-5to4", leave="n5")
            self.membership_change("leave-4to3", leave="n4")
            victims = ["n3", "n1", "n2"]
            for i in range(a.repeats):
                self.reown(f"kill9-{a.session_ms}-{i + 1}", victims[i % 3], "kill -9", a.session_ms)
            for i in range(a.repeats):
                # Restarted with the default timeout, ready for the kill -9 series with it.
                self.reown(f"sigterm-{i + 1}", victims[i % 3], "SIGTERM", a.default_session_ms)
            for i in range(a.repeats):
                v = victims[i % 3]
                if self.session_ms[v] != a.default_session_ms:   # only when repeats > 3
                    t_b = time.time()
                    self.nodes[v].terminate(30)
                    self.start_node(v, a.default_session_ms)
                    self.wait_settled(set(self.nodes) & set(self.env.live()) | {v}, t_b)
                last = i == a.repeats - 1
                self.reown(f"kill9-{a.default_session_ms}-{i + 1}", v, "kill -9", 0 if last else a.default_session_ms)
            self.set_phase("cooldown")
            self.note("stopping the load; draining")
            self.paced.stop(60)
            result["drain"] = wait_terminal(self.env.world, a.drain_timeout_s)
            self.note("drained")
            assert self.executors is not None, "started in start_workers()"
            self.runs = self.executors.stop(timeout_s=60)
            result["machine_during"] = {"loadavg": os.getloadavg()}
            result["counts"] = self.count()
            result["events"] = self.events
            result["zk_observer_states"] = [(t, st) for t, st in self.zk.states if st != "CONNECTED"]
            self.sampler.stop()
            result["neighbours"] = self.sampler.summary(self.t_start)
            result["zk_poll_ms"] = {**tail(self.zk.poll_ms), "errors": self.zk.errors}
            result["log_findings"] = scan_logs(self.logs)
        finally:
            world = self.env.describe() if a.keep else ""
            for problem in self.env.stop(keep_world=a.keep):
                print(f"warning: {problem}")
            if a.keep:
                print(f"kept: {world}")
        result["timeline"] = [(round(t - self.t_start, 3), w) for t, w in self.timeline]
        return result

    # ---- what became of every task ----

    def count(self) -> dict[str, Any]:
        """Per scenario: acked, executed, executed twice, lost, unknown submits, very late."""
        acked_doc = self.acked_doc = self.paced.result()
        runs = self.runs
        stored = task_statuses(self.env.world)
        by_phase_acked: dict[str, list[str]] = defaultdict(list)
        for tid, phase, _sub, _due in acked_doc["acked"]:
            by_phase_acked[phase].append(tid)
        runs_by_task: Counter[str] = Counter(r.task_id for r in runs)
        attempts_by_task: dict[str, Counter[int]] = defaultdict(Counter)
        phase_of: dict[str, str] = {}
        for r in runs:
            attempts_by_task[r.task_id][r.attempt] += 1
            phase_of[r.task_id] = r.phase or "?"
        unknown_ids = {u[0] for u in acked_doc["unknown"]}
        unknown_by_phase: dict[str, list[str]] = defaultdict(list)
        for tid, phase in acked_doc["unknown"]:
            unknown_by_phase[phase].append(tid)
        first_run: dict[str, Run] = {}
        for r in runs:
            if r.task_id not in first_run or r.start_s < first_run[r.task_id].start_s:
                first_run[r.task_id] = r

        def late_ms(r: Run) -> int | None:
            return None if r.due_ms is None else r.start_ms - r.due_ms

        ev_t = {e["name"]: e["t_event"] for e in self.events}
        per_phase = {}
        phases = list(dict.fromkeys([p for _, p, _, _ in acked_doc["acked"]] + list(phase_of.values())))
        for phase in phases:
            acked = by_phase_acked.get(phase, [])
            ran_twice = [t for t, p in phase_of.items() if p == phase and runs_by_task[t] > 1]
            same_attempt = [t for t in ran_twice if any(c > 1 for c in attempts_by_task[t].values())]
            unknown = unknown_by_phase.get(phase, [])
            per_phase[phase] = {
                "acked": len(acked),
                "executed_tasks": sum(1 for p in phase_of.values() if p == phase),
                "executed_twice_or_more": len(ran_twice),
                "of_which_same_attempt": len(same_attempt),
                "extra_runs": sum(runs_by_task[t] - 1 for t in ran_twice),
                "lost_acked_not_succeeded": sum(1 for t in acked if stored.get(t) != "succeeded"),
                "acked_not_stored": sum(1 for t in acked if t not in stored),
                "acked_never_executed": sum(1 for t in acked if t not in runs_by_task),
                "unknown_submits": len(unknown),
                "unknown_stored": sum(1 for t in unknown if t in stored),
                "unknown_succeeded": sum(1 for t in unknown if stored.get(t) == "succeeded"),
                "ran_over_10s_late": sum(1 for r in first_run.values() if r.phase == phase
                                         and (late_ms(r) or 0) > 10_000),
            }
        slow_submits = {a[0] for a in acked_doc["acked"] if a[3] - a[2] > ROUTE_THRESHOLD_MS}   # the MySQL path
        duplicates = []
        for tid, n in runs_by_task.items():
            if n > 1:
                xs = sorted((r for r in runs if r.task_id == tid), key=lambda r: r.start_s)
                t_ev = ev_t.get(xs[0].phase or "")
                duplicates.append({
                    "phase": xs[0].phase, "task_type": xs[0].task_type,
                    "slot": slot_of(NAMESPACE, xs[0].task_type, SLOTS),
                    "path": "mysql" if xs[0].due_ms is not None and tid in slow_submits else "kafka",
                    "runs": [{"attempt": r.attempt, "epoch": r.epoch,
                              "start_ms_from_event": None if t_ev is None else r.start_ms - int(t_ev * 1000)}
                             for r in xs]})
        late = []
        for tid, r in first_run.items():
            lm = late_ms(r)
            if lm is not None and r.due_ms is not None and lm > 10_000:
                t_ev = ev_t.get(r.phase or "")
                late.append({"phase": r.phase, "task_type": r.task_type,
                             "slot": slot_of(NAMESPACE, r.task_type, SLOTS), "late_ms": lm,
                             "unknown_submit": tid in unknown_ids,
                             "due_ms_from_event": None if t_ev is None else r.due_ms - int(t_ev * 1000)})
        not_ok = Counter(stored.get(t, "missing") for t, _, _, _ in acked_doc["acked"]
                         if stored.get(t) != "succeeded")
        unknown_outcomes = Counter(stored.get(t, "not stored") for t in unknown_ids)
        return {
            "acked": len(acked_doc["acked"]), "unknown_submits": len(unknown_ids),
            "unknown_submit_outcomes": dict(unknown_outcomes),
            "submit_errors": acked_doc["errors"], "skipped_behind": acked_doc["skipped_behind"],
            "submit_error_detail": [(round(t / 1000 - self.t_start, 2), self.target_names.get(tg, tg), err, n)
                                    for t, tg, err, n in acked_doc.get("error_detail", [])],
            "submit_rpc_ms": tail(acked_doc["rpc_ms"]),
            "runs": len(runs), "tasks_run": len(runs_by_task), "stored": len(stored),
            "stored_status": dict(Counter(stored.values())),
            "lost_total": sum(not_ok.values()), "lost_by_status": dict(not_ok),
            "executed_twice_total": sum(1 for c in runs_by_task.values() if c > 1),
            "duplicates": duplicates, "over_10s_late": late,
            "per_phase": per_phase,
        }

    def dips(self) -> None:
        """Throughput and lateness figures for every event (from the executor records)."""
        slot_of_type = {t: slot_of(NAMESPACE, t, SLOTS) for t in self.types}
        runs = [(r.start_ms, slot_of_type.get(r.task_type)) for r in self.runs]
        first: dict[str, tuple[int, int, int | None]] = {}    # task_id -> (due_ms, started_ms, slot)
        for r in self.runs:
            if r.due_ms is not None and (r.task_id not in first or r.start_ms < first[r.task_id][1]):
                first[r.task_id] = (r.due_ms, r.start_ms, slot_of_type.get(r.task_type))
        first_runs = list(first.values())
        submits = [sub for _tid, _ph, sub, _due in self.acked_doc["acked"]]
        a, b = self.args.baseline_s, self.args.after_s
        for ev in self.events:
            t_event, t_done = ev["t_event"], ev["t_done"]
            ev["dip"] = dip_figures([st for st, _ in runs], [(d, st) for d, st, _ in first_runs],
                                    t_event, t_done, a, b, WINDOW_MS)
            moving = set(ev.get("victim_slots") or ev.get("moved_slots") or [])
            if moving:
                ev["dip_moving_slots"] = dip_figures([st for st, sl in runs if sl in moving],
                                                     [(d, st) for d, st, sl in first_runs if sl in moving],
                                                     t_event, t_done, a, b, WINDOW_MS)
                ev["dip_other_slots"] = dip_figures([st for st, sl in runs if sl not in moving],
                                                    [(d, st) for d, st, sl in first_runs if sl not in moving],
                                                    t_event, t_done, a, b, WINDOW_MS)
            ev["submits"] = dip_figures(submits, [], t_event, t_done, a, b, WINDOW_MS)
            ev["machine"] = self.sampler.window(t_event - a, t_done + b + 1)


def params_of(args: argparse.Namespace) -> dict[str, Any]:
    return {k: v for k, v in vars(args).items() if k not in ("report_dir", "rerender")}


# ================================================================ what it reports
