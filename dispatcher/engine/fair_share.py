"""Fair shares of executor time among the flows (tenants) of a task type, at the slot's owner:
deficit round robin (Shreedhar and Varghese, 1996) with costs in executor milliseconds.

A fair type's due tasks wait in one queue per flow (parked in the due queue under the limit
`fair:<flow>`). When its executors have room, `pick` says how many of each flow go now: the
flows take turns; on its turn a flow is credited `quantum * weight` ms and sends tasks while its
credit is above zero, each paying its *estimate*, the moving average of its flow's measured run
time (the type's, before its first outcome). When an attempt's outcome comes, the flow is charged
what the executor actually spent (`charge`: the estimate paid is corrected), so a tenant whose
tasks run ten times longer gets a tenth of the starts at equal weight, and work already running
is paid for when it is sent. A flow that empties leaves the round and keeps no credit or debt.

The quantum is the smallest estimate among the active flows: every turn sends at least one task
of the cheapest flow, and the loop of turns is short. Exact within this owner; the type lives in
one slot, so with one owner per slot a type's tenants share fairly cluster-wide.
"""
from __future__ import annotations

import collections
import json
from collections.abc import Mapping

from dispatcher.base.errors import InvalidArgument
from dispatcher.engine.due import Due
from dispatcher.policy.fairness import FairPolicy
from dispatcher.policy.key_template import render_key

TypeKey = tuple[str, str]
FAIR_SHARE = "fair_share"
"""The limit a task waiting for its flow's turn is counted under (the `limit` label of the metrics)."""
DEFAULT_COST_MS = 100.0
"""A type's estimate before any outcome: only its ratio to other flows' estimates matters."""
SMOOTHING = 0.2
"""Weight of each new measurement in a flow's moving average."""
FLOWS_KEPT = 10_000
"""Idle flows' estimates kept per type at most (their averages matter when they come back)."""


class _TypeShare:
    """The round of one fair type."""

    def __init__(self, policy: FairPolicy):
        self.policy = policy
        self.active: collections.deque[str] = collections.deque()   # flows in the round, in turn order
        self.credit: dict[str, float] = {}                           # of each active flow, ms
        self.turn_open = False                                       # the head flow got its quantum this turn
        self.quantum = DEFAULT_COST_MS                               # of the last pick
        self.estimates: collections.OrderedDict[str, float] = collections.OrderedDict()
        self.type_estimate: float | None = None

    def estimate(self, flow: str) -> float:
        """At least 1 ms: a flow of instant tasks still pays for each, and credit always grows."""
        found = self.estimates.get(flow)
        if found is None:
            found = self.type_estimate if self.type_estimate is not None else DEFAULT_COST_MS
        return max(1.0, found)


class FairShare:
    def __init__(self, policies: Mapping[TypeKey, FairPolicy] | None = None):
        self._types = {key: _TypeShare(policy) for key, policy in (policies or {}).items()}

    def set_policies(self, policies: Mapping[TypeKey, FairPolicy]) -> None:
        """New fair shares (the policies file changed): a type whose policy is unchanged keeps
        its round and estimates; a changed one starts afresh."""
        self._types = {key: share if (share := self._types.get(key)) is not None and share.policy == policy
                       else _TypeShare(policy) for key, policy in policies.items()}

    def fair(self, key: TypeKey) -> bool:
        return key in self._types

    def types(self) -> set[TypeKey]:
        return set(self._types)

    def flow_of(self, key: TypeKey, due: Due) -> str:
        """The due task's flow, from its payload (worked out once and kept on it). A payload
        without the template's fields (submitted before it was declared) is in the flow ""."""
        if due.fair_flow is None:
            try:
                due.fair_flow = render_key(self._types[key].policy.key, json.loads(due.task.payload_json or "{}"),
                                           "payload_json", "fairness key")
            except (InvalidArgument, ValueError):
                due.fair_flow = ""
        return due.fair_flow

    def pick(self, key: TypeKey, waiting: Mapping[str, int], room: int) -> dict[str, int]:
        """How many of each flow's waiting tasks (`waiting`: flow -> count) start now, at most
        `room` in all, by deficit round robin; each is paid for at its flow's estimate."""
        share = self._types[key]
        for flow in waiting:
            if flow not in share.credit and waiting[flow] > 0:
                share.active.append(flow)
                share.credit[flow] = 0.0
        if not share.active or room <= 0:
            return {}
        quantum = share.quantum = min(share.estimate(f) for f in share.active)
        for f in share.active:   # no flow holds more than a turn's credit (see charge)
            share.credit[f] = min(share.credit[f], quantum * share.policy.weight(f))
        picked: dict[str, int] = {}
        while room > 0 and share.active:
            flow = share.active[0]
            if waiting.get(flow, 0) - picked.get(flow, 0) <= 0:   # emptied: out of the round, no credit kept
                share.active.popleft()
                del share.credit[flow]
                share.turn_open = False
                continue
            if not share.turn_open:
                share.credit[flow] += quantum * share.policy.weight(flow)
                share.turn_open = True
            if share.credit[flow] > 0:
                picked[flow] = picked.get(flow, 0) + 1
                share.credit[flow] -= share.estimate(flow)
                room -= 1
            else:
                share.active.rotate(-1)
                share.turn_open = False
        return picked

    def estimate(self, key: TypeKey, flow: str) -> float:
        """What a start of the flow pays now (ms, at least 1)."""
        return self._types[key].estimate(flow)

    def charge(self, key: TypeKey, flow: str, paid_ms: float, actual_ms: float) -> None:
        """An attempt of the flow whose start paid `paid_ms` ran `actual_ms` on its executor:
        correct its flow's credit and update the estimates."""
        share = self._types.get(key)
        if share is None:
            return
        actual_ms = max(1.0, actual_ms)   # as estimates: an instant task is not free
        if flow in share.credit:
            # A refund (the start paid more than it took) is capped at one turn's credit: an
            # estimate far too high at first must not buy a long run of starts ahead of the
            # other flows. A debt is kept whole: that is what holds a slow tenant back.
            cap = share.quantum * share.policy.weight(flow)
            share.credit[flow] = min(share.credit[flow] + paid_ms - actual_ms, max(cap, share.credit[flow]))
        share.type_estimate = actual_ms if share.type_estimate is None else \
            (1 - SMOOTHING) * share.type_estimate + SMOOTHING * actual_ms
        estimates = share.estimates
        previous = estimates.pop(flow, None)
        estimates[flow] = actual_ms if previous is None else (1 - SMOOTHING) * previous + SMOOTHING * actual_ms
        if len(estimates) > FLOWS_KEPT:
            estimates.popitem(last=False)

    def active_flows(self, key: TypeKey) -> int:
        share = self._types.get(key)
        return len(share.active) if share is not None else 0
