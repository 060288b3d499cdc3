"""SDK clients to a set of node processes, taken in turn: how the load generators of the
tests spread their calls over whichever nodes are alive at the moment."""
from __future__ import annotations

from collections.abc import Callable

from harness.processes import NodeProcess
from taskring import Client


class RoundRobinClients:
    """`next()` is the next live node and a client to it (one cached per node); None when none lives.
    `nodes` is asked each turn: the caller may change its targets while the load runs."""

    def __init__(self, nodes: Callable[[], list[NodeProcess]], rpc_timeout_s: float = 3.0):
        self.nodes = nodes
        self.rpc_timeout_s = rpc_timeout_s
        self._clients: dict[str, Client] = {}
        self._turn = 0

    def next(self) -> tuple[NodeProcess, Client] | None:
        live = [n for n in self.nodes() if n.alive()]
        if not live:
            return None
        node = live[self._turn % len(live)]
        self._turn += 1
        client = self._clients.get(node.target)
        if client is None:
            client = self._clients[node.target] = Client(node.target, rpc_timeout_s=self.rpc_timeout_s)
        return node, client

    def drop(self, node: NodeProcess) -> None:
        """Forget the node's client (after a failed call: the next one reconnects)."""
        client = self._clients.pop(node.target, None)
        if client is not None:
            client.close()

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()
