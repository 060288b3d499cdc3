"""The Kafka log's contract: what the engine and the API need from it, whichever
backend holds it (the broker, or the twin of memory.py).

Ownership decides which partitions a node reads (a partition is a slot), and the
progress of a partition lives in MySQL under the slot's epoch, so a reader is
assigned partitions explicitly, each from an offset, and never commits to Kafka.

    LogProducer  send(messages) resolves once each message is durable or failed
    LogReader    assigned partitions read from a next-offset; pause and resume by topic, lag.
                 One thread drives it.
    LogIntake    the thread that drives a reader; assignment changes are commands
                 it applies between reads, and their events say when they took effect

tests/log_conformance.py holds both backends to this contract.
"""
from __future__ import annotations

import dataclasses
import threading
from collections.abc import Collection, Sequence
from typing import Protocol

Partition = tuple[str, int]
"""(topic, partition number)."""


@dataclasses.dataclass(slots=True)
class OutMessage:
    topic: str
    partition: int
    key: bytes
    value: bytes


@dataclasses.dataclass(slots=True)
class InMessage:
    topic: str
    partition: int
    offset: int
    value: bytes


class LogProducer(Protocol):
    def start(self) -> None: ...

    def stop(self) -> None: ...

    async def send(self, messages: Sequence[OutMessage]) -> list[str | None]:
        """Produce all; per message None (durable: acknowledged by every in-sync
        replica) or the error text. Never raises for a message's failure."""


class LogReader(Protocol):
    def start(self) -> None: ...

    def stop(self) -> None: ...

    def assign(self, starts: dict[Partition, int | None]) -> None:
        """Add partitions, each read from the given next-offset (None: the beginning)."""

    def unassign(self, pairs: Sequence[Partition]) -> None: ...

    def assigned(self) -> set[Partition]: ...

    def pause(self, topics: Collection[str]) -> None:
        """Stop fetching the assigned partitions of `topics`, and any of theirs assigned later,
        until resumed."""

    def resume(self, topics: Collection[str]) -> None: ...

    @property
    def paused(self) -> frozenset[str]:
        """The topics paused."""

    def read(self, max_messages: int, timeout_s: float) -> list[InMessage]:
        """Up to max_messages of the assigned partitions, in offset order per partition;
        waits up to timeout_s for the first one only."""

    def lag(self) -> dict[Partition, int]:
        """Per assigned partition: the high watermark minus the read position."""


class LogIntake(Protocol):
    def start(self) -> None: ...

    def stop(self) -> None: ...

    def assign(self, starts: dict[Partition, int | None]) -> threading.Event: ...

    def unassign(self, pairs: list[Partition]) -> threading.Event: ...

    def lag(self) -> dict[Partition, int]: ...
