"""The resource's status: `conditions` (Ready, Reconciling, Error) and `observedGeneration`.

Conditions follow Kubernetes' convention (metav1.Condition): each has a type, a status of
"True" or "False", a CamelCase reason, a message and the time its status last changed, which is
kept when the status did not change so that `kubectl wait` and dashboards see real transitions.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

READY, RECONCILING, ERROR = "Ready", "Reconciling", "Error"


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one reconcile ended, as the status tells it."""

    phase: str
    """"Ready", "Reconciling" (under way, or to be retried) or "Error" (refused until the spec changes)."""
    reason: str
    message: str


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def conditions(outcome: Outcome, previous: Sequence[Mapping[str, Any]] = (), now: str | None = None) -> list[dict]:
    """The three conditions for `outcome` (the one its phase names is "True"); a condition whose
    status is unchanged keeps its lastTransitionTime from `previous`."""
    stamp = now or _now()
    before = {c.get("type"): c for c in previous if isinstance(c, Mapping)}
    out = []
    for kind in (READY, RECONCILING, ERROR):
        status = "True" if outcome.phase == kind else "False"
        old = before.get(kind)
        since = old.get("lastTransitionTime") if old and old.get("status") == status else None
        # Each carries the outcome's reason and message, so whichever one a tool reads explains it.
        out.append({"type": kind, "status": status, "reason": outcome.reason, "message": outcome.message,
                    "lastTransitionTime": since or stamp})
    return out


def status_patch(outcome: Outcome, generation: int | None, previous: Mapping[str, Any] | None,
                 extra: Mapping[str, Any] | None = None, now: str | None = None) -> dict[str, Any]:
    """The whole `status` to write: conditions, the generation they are about, and `extra`
    (what was registered: topic, partitions, policy revision, cron rules)."""
    prev = previous or {}
    patch: dict[str, Any] = {"conditions": conditions(outcome, prev.get("conditions") or (), now),
                             "observedGeneration": generation, "phase": outcome.phase}
    patch.update(extra or {})
    return patch
