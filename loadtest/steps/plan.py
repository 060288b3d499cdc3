"""The plan of a step load: each step's users, and the pace of a user, from the peak and the percentages.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

# ---------------------------------------------------------------- the plan

@dataclasses.dataclass(frozen=True)
class Step:
    index: int
    percent: int
    users: int
    target_per_s: float

    @property
    def label(self) -> str:
        return f"{self.percent}%"


@dataclasses.dataclass(frozen=True)
class Plan:
    peak_per_s: float
    batch: int
    user_rate: float          # SubmitBatch calls per second of each user
    step_s: float
    steps: tuple[Step, ...]

    @property
    def load_s(self) -> float:
        return self.step_s * len(self.steps)


def plan_steps(peak: float, percents: Sequence[int], batch: int, step_s: float, max_user_rate: float,
               peak_users: int | None = None) -> Plan:
    """Users per step and the pace of each user, so that step k offers percents[k]% of `peak`.

    The peak step gets the fewest users that keep each at most `max_user_rate` calls/s,
    rounded up until every step's share of them is a whole number (25/50/75/100%: a
    multiple of 4); the pace is then whatever makes the peak exact."""
    if peak_users is None:
        peak_users = max(1, math.ceil(peak / (batch * max_user_rate)))
        while any(peak_users * p % 100 for p in percents):
            peak_users += 1
    user_rate = peak / (batch * peak_users)
    steps = []
    for i, p in enumerate(percents):
        users = max(1, round(peak_users * p / 100))
        steps.append(Step(i, p, users, users * batch * user_rate))
    return Plan(peak, batch, user_rate, step_s, tuple(steps))
