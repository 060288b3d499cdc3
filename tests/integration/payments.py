"""A payments service for the operations tests: `charge` fails until it is fixed, `ship` never
succeeds; and the helpers that turn its failures into dead letters."""
from __future__ import annotations

import threading

from harness.wait import wait_until
from taskring import Client, Executor, TaskSpec, TaskState
from taskring.errors import NonRetryableError

NS = "shop"


class Payments:
    """`charge` declines a card of "bad" until `fixed`; `ship` always fails for good."""

    def __init__(self, zk_hosts: str):
        self.fixed = threading.Event()
        self.runs: dict[str, int] = {}
        self.executor = Executor(NS, zk_hosts=zk_hosts)
        self.executor.add_handler("charge", self._charge)
        self.executor.add_handler("ship", self._ship)

    def _charge(self, ctx) -> None:
        self.runs[ctx.task_id] = self.runs.get(ctx.task_id, 0) + 1
        if ctx.payload.get("card") == "bad" and not self.fixed.is_set():
            raise ValueError(f"card declined for order {ctx.payload['order']}")

    def _ship(self, ctx) -> None:
        raise NonRetryableError(f"no carrier for zone {ctx.payload['zone']}")


def dead_letter(client: Client, specs: list[TaskSpec], timeout_s: float = 60) -> list[str]:
    ids = [res.task_id for res in client.submit_batch(specs)]
    wait_until(lambda: all(client.get(i).state == TaskState.DEAD_LETTERED for i in ids), timeout_s,
               f"{len(ids)} tasks to be dead-lettered")
    return ids


def charge(order: int, card: str = "bad", **kw) -> TaskSpec:
    return TaskSpec(NS, "charge", {"order": order, "card": card}, max_retries=0, **kw)
