"""The import rule of the server's packages (docs/architecture.md, "Which way the imports point"):
each package of dispatcher/ imports only packages of a lower layer, no two modules import each
other round a cycle, and the layers below (cluster/, membership/) and the shell's tools
(taskring_cli/) stay out of the node. Read from the source with ast, so a lazy import inside a
function counts as much as one at the top."""
from __future__ import annotations

import ast
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]

# Lowest first. A module may import its own package and any package of a lower layer; packages
# of one layer do not import each other. The modules at dispatcher/'s root (node.py, the
# composition root) are the top.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("base",),                               # clock, config, errors, ids, metrics, loop lifecycles
    ("store", "log", "auth", "policy"),      # the backends' contracts, who may call, per-type rules
    ("engine",),                             # the owner's loops and what they share
    ("api",),                                # the task API's edge
    ("ops", "cron"),                         # operations services; cron rules and their planner
    ("admin",),                              # all HTTP: the admin endpoint, its auth, console, ops routes
    ("",),                                   # dispatcher/node.py
)
RANK = {package: rank for rank, packages in enumerate(LAYERS) for package in packages}


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: pathlib.Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
            found.extend(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
    return found


def _package(module: str) -> str:
    """dispatcher.engine.dispatch -> engine; dispatcher.node -> '' (the root)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in RANK) else ""


def _modules(top: str) -> dict[str, list[str]]:
    return {_module_name(path): _imports(path) for path in sorted((REPO / top).rglob("*.py"))}


DISPATCHER = _modules("dispatcher")


def upward_imports(graph: dict[str, list[str]]) -> list[str]:
    wrong = []
    for module, imported in graph.items():
        source = _package(module)
        assert source in RANK, f"{module}: package {source!r} has no layer in LAYERS"
        for target in imported:
            if not target.startswith("dispatcher.") or target not in graph:
                continue
            dest = _package(target)
            if dest != source and RANK[dest] >= RANK[source]:
                wrong.append(f"{module} ({source or 'root'}) imports {target} ({dest or 'root'})")
    return sorted(set(wrong))


def cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    edges = {m: sorted({t for t in imported if t in graph and t != m}) for m, imported in graph.items()}
    found, state, stack = [], {}, []

    def visit(m: str) -> None:
        state[m] = "open"
        stack.append(m)
        for t in edges[m]:
            if state.get(t) == "open":
                found.append(stack[stack.index(t):] + [t])
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = "done"

    for m in edges:
        if m not in state:
            visit(m)
    return found


def test_every_import_inside_dispatcher_points_down() -> None:
    assert upward_imports(DISPATCHER) == []


def test_no_import_cycle_inside_dispatcher() -> None:
    assert cycles(DISPATCHER) == []


def test_the_check_sees_an_upward_import_and_a_cycle() -> None:
    graph = {"dispatcher.base.clock": ["dispatcher.engine.heap"], "dispatcher.engine.heap": ["dispatcher.base.clock"]}
    assert upward_imports(graph) == ["dispatcher.base.clock (base) imports dispatcher.engine.heap (engine)"]
    assert cycles(graph) == [["dispatcher.base.clock", "dispatcher.engine.heap", "dispatcher.base.clock"]]


@pytest.mark.parametrize("top", ["cluster", "membership"])
def test_the_layers_below_import_nothing_of_the_node(top: str) -> None:
    assert [f"{m} imports {t}" for m, imported in _modules(top).items() for t in imported
            if t.split(".")[0] in ("dispatcher", "harness", "loadtest", "taskring_cli")] == []


def test_the_shell_tools_import_nothing_of_the_node_but_its_entry() -> None:
    # `taskring node` is the one door: main.py imports dispatcher.node inside that command only.
    wrong = [f"{m} imports {t}" for m, imported in _modules("taskring_cli").items() for t in imported
             if t.split(".")[0] == "dispatcher"
             and not (m == "taskring_cli.main" and t.startswith(("dispatcher.node", "dispatcher.dev")))]
    assert wrong == []


def test_only_the_composition_root_reads_the_whole_node_config() -> None:
    # Every part takes its own params (dispatcher/params.py cuts them from NodeConfig); store_of
    # is the store's factory from the config's MySQL settings and shard map.
    readers = sorted(m for m, imported in DISPATCHER.items() if "dispatcher.base.config.NodeConfig" in imported)
    assert readers == ["dispatcher.dev", "dispatcher.node", "dispatcher.params", "dispatcher.parts",
                       "dispatcher.store.sharded"]


def test_every_query_is_in_the_store() -> None:
    # Every statement the node runs is under a store contract (dispatcher/store/interface*.py),
    # kept by MariaDB and by a twin: none is written in the engine, the API, cron, ops or admin.
    words = ("SELECT ", "INSERT ", "REPLACE INTO", "UPDATE ", "DELETE FROM", ".execute(", ".executemany(")
    outside = [f"{path.relative_to(REPO)}: {word.strip()}" for path in sorted((REPO / "dispatcher").rglob("*.py"))
               if "store" not in path.relative_to(REPO / "dispatcher").parts[:1]
               for word in words if word in path.read_text()]
    assert outside == []
