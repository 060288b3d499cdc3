"""When a failed attempt runs again.

Two shapes of policy, as in the wire contract (`pb.RetryPolicy`):

- exponential backoff with full jitter: retry n (1-based) waits a uniform draw in
  [0, min(max_backoff_ms, initial_backoff_ms * multiplier ** (n - 1))]. Full jitter
  spreads a burst of failures (a downstream outage) instead of retrying it in lockstep.
- a tiered schedule, when `schedule_ms` is non-empty: retry n waits
  schedule_ms[min(n - 1, len - 1)], exactly, with no jitter (e.g. 30 s, 2 min,
  10 min, 1 h, 1 h, ...). Teams ask for this when a human or a batch job on the
  other side needs predictable gaps.

Which policy a task gets: its own (fields it leaves 0/empty filled from the next
level), else its task type's, else the server default (`RetryPolicies`).

Pure: randomness comes in as a `random.Random`.
"""
from __future__ import annotations

import dataclasses
import json
import math
import random
import types
from collections.abc import Mapping
from typing import Any

from dispatcher.policy.fairness import FAIRNESS_FIELD, FairPolicy, InvalidFairness, parse_fairness
from dispatcher.policy.heartbeat import HEARTBEAT_FIELD, InvalidHeartbeatPolicy, parse_heartbeat_timeout
from dispatcher.policy.scheduling import LIMIT_FIELDS, InvalidSchedulingPolicy, TypeLimits, parse_type_limits
from dispatcher.policy.unique import InvalidUniqueRule, UniqueRule, parse_unique_rule
from taskring.wire import pb

UNIQUE_FIELDS = frozenset({"unique_key", "unique_ttl_ms"})
"""Fields of a task type's entry that are its unique-key rule, not its retry policy."""
TYPE_ONLY_FIELDS = UNIQUE_FIELDS | LIMIT_FIELDS | {HEARTBEAT_FIELD, FAIRNESS_FIELD}
"""Fields of a task type's entry that are not its retry policy (unique key, limits, heartbeat)."""

MAX_SCHEDULE_ENTRIES = 100
_RULE_ERRORS = (InvalidUniqueRule, InvalidSchedulingPolicy, InvalidHeartbeatPolicy, InvalidFairness)


class InvalidRetryPolicy(ValueError):
    """A policy that cannot be used; `field` names the offending RetryPolicy field."""

    def __init__(self, field: str, problem: str):
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    initial_backoff_ms: int = 1000
    """Upper bound of the first retry's jittered wait."""
    max_backoff_ms: int = 300_000
    """Cap on the upper bound of any jittered wait."""
    multiplier: float = 2.0
    """Growth of the upper bound per retry; >= 1."""
    schedule_ms: tuple[int, ...] = ()
    """When non-empty: the exact wait of retry 1, 2, ...; the last entry repeats."""

    def __post_init__(self) -> None:
        # Accept any sequence for convenience but store an immutable tuple.
        if not isinstance(self.schedule_ms, tuple):
            object.__setattr__(self, "schedule_ms", tuple(self.schedule_ms))
        object.__setattr__(self, "multiplier", float(self.multiplier))
        if self.initial_backoff_ms < 1:
            raise InvalidRetryPolicy("initial_backoff_ms", f"must be at least 1, got {self.initial_backoff_ms}")
        if self.max_backoff_ms < 1:
            raise InvalidRetryPolicy("max_backoff_ms", f"must be at least 1, got {self.max_backoff_ms}")
        if self.initial_backoff_ms > self.max_backoff_ms:
            raise InvalidRetryPolicy(
                "initial_backoff_ms",
                f"{self.initial_backoff_ms} is greater than max_backoff_ms ({self.max_backoff_ms})",
            )
        if not math.isfinite(self.multiplier) or self.multiplier < 1:
            raise InvalidRetryPolicy("multiplier", f"must be a finite number >= 1, got {self.multiplier!r}")
        if len(self.schedule_ms) > MAX_SCHEDULE_ENTRIES:
            raise InvalidRetryPolicy(
                "schedule_ms",
                f"has {len(self.schedule_ms)} entries, more than the maximum {MAX_SCHEDULE_ENTRIES}",
            )
        for i, wait in enumerate(self.schedule_ms):
            if wait < 1:
                raise InvalidRetryPolicy(f"schedule_ms[{i}]", f"must be at least 1 ms, got {wait}")

    @classmethod
    def from_pb(cls, msg: pb.RetryPolicy, default: RetryPolicy) -> RetryPolicy:
        """The policy `msg` describes; each field left 0/empty takes `default`'s value.

        Raises InvalidRetryPolicy when the merged result is not usable.
        """
        return cls(
            initial_backoff_ms=msg.initial_backoff_ms or default.initial_backoff_ms,
            max_backoff_ms=msg.max_backoff_ms or default.max_backoff_ms,
            # 0.0 is proto3's "unset"; NaN is not equal to 0 and is rejected above.
            multiplier=msg.multiplier if msg.multiplier != 0 else default.multiplier,
            schedule_ms=tuple(msg.schedule_ms) if len(msg.schedule_ms) else default.schedule_ms,
        )

    def to_pb(self) -> pb.RetryPolicy:
        return pb.RetryPolicy(
            initial_backoff_ms=self.initial_backoff_ms,
            max_backoff_ms=self.max_backoff_ms,
            multiplier=self.multiplier,
            schedule_ms=list(self.schedule_ms),
        )

    @property
    def tiered(self) -> bool:
        return bool(self.schedule_ms)


def next_delay_ms(policy: RetryPolicy, retry_number: int, rng: random.Random) -> int:
    """How long retry `retry_number` (1 = the first retry) waits after the failure."""
    if retry_number < 1:
        raise ValueError(f"retry_number must be >= 1, got {retry_number}")
    if policy.schedule_ms:
        return policy.schedule_ms[min(retry_number - 1, len(policy.schedule_ms) - 1)]
    return rng.randint(0, backoff_ceiling_ms(policy, retry_number))


def backoff_ceiling_ms(policy: RetryPolicy, retry_number: int) -> int:
    """The upper bound of retry `retry_number`'s jittered wait (exponential policies)."""
    if retry_number < 1:
        raise ValueError(f"retry_number must be >= 1, got {retry_number}")
    try:
        ceiling = policy.initial_backoff_ms * policy.multiplier ** (retry_number - 1)
    except OverflowError:  # multiplier ** n beyond a float: certainly past the cap
        return policy.max_backoff_ms
    if not math.isfinite(ceiling) or ceiling >= policy.max_backoff_ms:
        return policy.max_backoff_ms
    return int(ceiling)


@dataclasses.dataclass(frozen=True)
class RetryPolicies:
    """Per task type defaults over a server default.

    Precedence: the task's own policy > its (namespace, task_type)'s > `server_default`.
    """

    server_default: RetryPolicy = RetryPolicy()
    by_type: Mapping[tuple[str, str], RetryPolicy] = dataclasses.field(default_factory=dict)
    unique_by_type: Mapping[tuple[str, str], UniqueRule] = dataclasses.field(default_factory=dict)
    """The unique-key rules declared in the same file, per task type (dispatcher/policy/unique.py)."""
    limits_by_type: Mapping[tuple[str, str], TypeLimits] = dataclasses.field(default_factory=dict)
    """The concurrency limits declared in the same file, per task type (dispatcher/policy/scheduling.py)."""
    heartbeat_by_type: Mapping[tuple[str, str], int] = dataclasses.field(default_factory=dict)
    """The heartbeat timeouts (ms) declared in the same file, per task type (dispatcher/policy/heartbeat.py)."""
    fairness_by_type: Mapping[tuple[str, str], FairPolicy] = dataclasses.field(default_factory=dict)
    """Fair shares among each type's tenants (dispatcher/policy/fairness.py)."""

    def __post_init__(self) -> None:
        # Read-only copies: later changes to the caller's dicts do not leak in.
        object.__setattr__(self, "by_type", types.MappingProxyType(dict(self.by_type)))
        object.__setattr__(self, "unique_by_type", types.MappingProxyType(dict(self.unique_by_type)))
        object.__setattr__(self, "limits_by_type", types.MappingProxyType(dict(self.limits_by_type)))
        object.__setattr__(self, "heartbeat_by_type", types.MappingProxyType(dict(self.heartbeat_by_type)))
        object.__setattr__(self, "fairness_by_type", types.MappingProxyType(dict(self.fairness_by_type)))

    def for_type(self, namespace: str, task_type: str) -> RetryPolicy:
        """The policy a task of this type gets when it brings none of its own."""
        return self.by_type.get((namespace, task_type), self.server_default)

    def resolve(self, task_policy: RetryPolicy | None, namespace: str, task_type: str) -> RetryPolicy:
        """`task_policy` if given, else the type's, else the server default."""
        if task_policy is not None:
            return task_policy
        return self.for_type(namespace, task_type)


def policies_document(text: str) -> dict:
    """The policies file's text as a JSON object (its entries are checked by parse_retry_policies)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InvalidRetryPolicy("retry_policies", f"not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidRetryPolicy("retry_policies", "must be a JSON object")
    return data


def parse_retry_policies(text: str) -> RetryPolicies:
    """Retry policies from JSON: the server default and per task type defaults.

        {"default": {"initial_backoff_ms": 1000, "max_backoff_ms": 300000, "multiplier": 2},
         "payments/charge_card": {"schedule_ms": [30000, 120000, 600000, 3600000]},
         "shop/cancel_unpaid_order": {"unique_key": "order:{order_id}"},
         "shop/export_orders": {"concurrency": {"per_type": 3}, "retry_cap": 1, "heartbeat_timeout_ms": 30000}}

    Keys other than "default" are "namespace/task_type". Fields left out take
    the default policy's values. A task type's entry may also declare its unique
    key (`unique_key`, a template over payload fields, and `unique_ttl_ms`;
    dispatcher/policy/unique.py) and its limits (`concurrency`, `retry_cap`;
    dispatcher/policy/scheduling.py), its heartbeat timeout (`heartbeat_timeout_ms`;
    dispatcher/policy/heartbeat.py) and fair shares among its tenants (`fairness`;
    dispatcher/policy/fairness.py). Errors name the key and field.
    """
    data = policies_document(text)

    def policy(key: str, spec: object, base: RetryPolicy) -> RetryPolicy:
        if not isinstance(spec, dict):
            raise InvalidRetryPolicy(key, "must be a JSON object")
        unknown = set(spec) - {f.name for f in dataclasses.fields(RetryPolicy)} - TYPE_ONLY_FIELDS
        if unknown:
            raise InvalidRetryPolicy(f"{key}.{sorted(unknown)[0]}", "is not a retry policy field")
        try:
            return dataclasses.replace(base, **{k: v for k, v in spec.items() if k not in TYPE_ONLY_FIELDS})
        except InvalidRetryPolicy as exc:
            raise InvalidRetryPolicy(f"{key}.{exc.field}", exc.problem) from None

    default_spec = data.get("default", {})
    if isinstance(default_spec, dict) and TYPE_ONLY_FIELDS & set(default_spec):
        raise InvalidRetryPolicy(f"default.{sorted(TYPE_ONLY_FIELDS & set(default_spec))[0]}",
                                 "is per task type: unique keys, limits and heartbeats are declared under"
                                 " \"namespace/task_type\"")
    default = policy("default", default_spec, RetryPolicy())
    by_type = {}
    unique_by_type: dict[tuple[str, str], Any] = {}
    limits_by_type: dict[tuple[str, str], Any] = {}
    heartbeat_by_type: dict[tuple[str, str], Any] = {}
    fairness_by_type: dict[tuple[str, str], Any] = {}
    for key, spec in data.items():
        if key == "default":
            continue
        namespace, sep, task_type = key.partition("/")
        if not sep or not namespace or not task_type:
            raise InvalidRetryPolicy(key, 'keys must be "default" or "namespace/task_type"')
        by_type[(namespace, task_type)] = policy(key, spec, default)
        # The entry's other rules, each parsed by its own module; each error names its field.
        for parse, into in ((parse_unique_rule, unique_by_type), (parse_type_limits, limits_by_type),
                            (parse_heartbeat_timeout, heartbeat_by_type), (parse_fairness, fairness_by_type)):
            try:
                rule = parse(key, spec)
            except _RULE_ERRORS as exc:
                raise InvalidRetryPolicy(exc.field, exc.problem) from None
            if rule is not None:
                into[(namespace, task_type)] = rule
    return RetryPolicies(server_default=default, by_type=by_type, unique_by_type=unique_by_type,
                         limits_by_type=limits_by_type, heartbeat_by_type=heartbeat_by_type,
                         fairness_by_type=fairness_by_type)
