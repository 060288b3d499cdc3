"""What the delivery of a task of a graph carries beyond its envelope: whether its handler's
result is wanted (others depend on it), and how the tasks it depends on ended, with their
results (docs/graphs.md, "Results")."""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from dispatcher.store.interface_graphs import ParentEnd
from taskring.wire import pb

log = logging.getLogger(__name__)

PARENT_RESULTS_BYTES = 1 << 20
"""The most of its parents' results one delivery carries (an executor's gRPC messages are 4 MiB)."""

ParentEnds = Callable[[list[str]], dict[str, list[ParentEnd]]]
"""GraphStore.parent_ends: task ids -> how each one's parents ended."""


async def with_parents(deliveries: list[pb.Delivery], parent_ends: ParentEnds) -> None:
    """Fill the graph part of these deliveries: keep_result for a task others depend on; the
    parents' ends and results for one with parents (up to PARENT_RESULTS_BYTES a delivery,
    the rest without their result, and said so). A read that fails leaves the attempt to run
    without them rather than not at all."""
    for delivery in deliveries:
        delivery.keep_result = delivery.task.graph.has_dependents
    children = [d.task.task_id for d in deliveries if d.task.graph.parents]
    if not children:
        return
    try:
        ends = await asyncio.to_thread(parent_ends, children)
    except Exception:
        log.exception("the parents' results of %d tasks of graphs could not be read", len(children))
        return
    for delivery in deliveries:
        budget = PARENT_RESULTS_BYTES
        for end in ends.get(delivery.task.task_id, ()):
            result = end.result_json or ""
            if len(result) > budget:
                delivery.parent_results_truncated = True
                result = ""
            budget -= len(result)
            delivery.parent_results.append(pb.ParentResult(key=end.key, task_id=end.task_id, outcome=end.outcome,
                                                           result_json=result, error=end.error or ""))
