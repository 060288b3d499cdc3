"""The task type's Kafka topic: created with the spec's partitions, or grown to them; never shrunk.

Kafka cannot take partitions away from a topic, and a record's partition is chosen by its key's
hash over the count, so a "shrink" would mean deleting the topic and every record in it. The
operator refuses instead: `plan_topic` decides from what the topic has now, before anything is
changed, and the refusal names `spec.topic.partitions` and both counts.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

from taskring_operator.spec import SpecError


@dataclass(frozen=True, slots=True)
class TopicPlan:
    name: str
    current: int | None
    """Partitions the topic has now; None: it does not exist."""
    wanted: int

    @property
    def action(self) -> str:
        if self.current is None:
            return "create"
        return "grow" if self.wanted > self.current else "none"


def plan_topic(name: str, current: int | None, wanted: int, *, task_topic: bool = False) -> TopicPlan:
    """What to do to topic `name`; SpecError when `wanted` is fewer partitions than it has.

    `task_topic`: `name` is one of the nodes' own task topics (`<prefix>.high|normal|low`), whose
    partition count is the cluster's slot count P, fixed once the cluster has data (a partition is
    a slot, docs/kubernetes.md). Such a topic is created when missing but never regrown: growing
    it would leave it out of step with every node's P."""
    if task_topic and current is not None and wanted != current:
        raise SpecError("spec.topic.partitions",
                        f"topic {name} is a task topic of the nodes with {current} partitions, the cluster's slot"
                        f" count; the spec asks for {wanted}: give {current}, or name a topic of the type's own"
                        " in spec.topic.name")
    if current is not None and wanted < current:
        raise SpecError("spec.topic.partitions",
                        f"topic {name} has {current} partitions, the spec asks for {wanted}: partitions are never"
                        f" removed (Kafka cannot shrink a topic); give at least {current}")
    return TopicPlan(name=name, current=current, wanted=wanted)


class Topics(Protocol):
    """What the reconciler needs of Kafka (KafkaTopics; an in-memory twin in the unit tests)."""

    def partitions(self, name: str) -> int | None: ...
    def create(self, name: str, partitions: int) -> None: ...
    def grow(self, name: str, partitions: int) -> None: ...


class KafkaTopics:
    """Topics through confluent-kafka's AdminClient, as deploy/local/stackctl.py creates them."""

    def __init__(self, bootstrap: str, *, replication: int = 1, timeout_s: float = 30.0,
                 config: dict[str, str] | None = None):
        from confluent_kafka.admin import AdminClient
        self._admin = AdminClient({"bootstrap.servers": bootstrap, **(config or {})})
        self._replication = replication
        self._timeout = timeout_s

    def partitions(self, name: str) -> int | None:
        topic = self._admin.list_topics(topic=name, timeout=self._timeout).topics.get(name)
        if topic is None:
            return None
        if topic.error is not None:
            from confluent_kafka import KafkaError
            # Asked for one topic, Kafka reports a missing one with this error; any other (no
            # leader yet, say) is not an answer, and the reconcile is tried again.
            if topic.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                return None
            raise RuntimeError(f"topic {name}: {topic.error.str()}")
        return len(topic.partitions)

    def create(self, name: str, partitions: int) -> None:
        from confluent_kafka.admin import NewTopic
        future = self._admin.create_topics([NewTopic(name, num_partitions=partitions,
                                                     replication_factor=self._replication)])[name]
        future.result(timeout=self._timeout)
        self._wait_led(name, partitions)

    def grow(self, name: str, partitions: int) -> None:
        from confluent_kafka.admin import NewPartitions
        future = self._admin.create_partitions([NewPartitions(name, partitions)])[name]
        future.result(timeout=self._timeout)
        self._wait_led(name, partitions)

    def _wait_led(self, name: str, partitions: int) -> None:
        """Until every partition has a leader: Kafka answers a create before its metadata says
        so, and Ready must mean the topic can be written to (and reads back as grown)."""
        deadline = time.monotonic() + self._timeout
        while True:
            topic = self._admin.list_topics(topic=name, timeout=self._timeout).topics.get(name)
            if (topic is not None and topic.error is None and len(topic.partitions) == partitions
                    and all(p.leader >= 0 for p in topic.partitions.values())):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"topic {name}: not every one of its {partitions} partitions has a leader"
                                   f" after {self._timeout:g}s")
            time.sleep(0.1)


def apply_topic(topics: Topics, plan: TopicPlan) -> int:
    """Carry out `plan`; returns the partitions the topic has afterwards."""
    if plan.action == "create":
        topics.create(plan.name, plan.wanted)
    elif plan.action == "grow":
        topics.grow(plan.name, plan.wanted)
    return max(plan.wanted, plan.current or 0)
