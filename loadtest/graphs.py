"""Graph submit and release cost (issue 22): one node, its executors and the local stack.

A benchmark, not a test. In a private world with one `taskring node --single` and one
executor process of no-op handlers:

  A  throughput: G graphs of 1,000 tasks each, fan-out / fan-in (root -> 998 -> sink, 1,996
     edges), submitted back to back, against the same G x 1,000 tasks without edges submitted
     with SubmitBatch; tasks/s end to end (first submit to the last start), alternated
     --pairs times (this box moves its figures between identical runs: compare alternately).
     CPU seconds of the node and of MariaDB per task and the extra per edge.
  B  release latency: for each graph's sink (998 parents), the time from the end of its last
     parent (the store's clock) to its release (its `queued` event) and to its start (the
     executor's clock, the same machine); and for a chain of --chain tasks (one edge each, the
     worst case per edge), each link's release after its parent's end. p50 / p99.
  Raw  loadtest/raw_parts.py's Kafka-alone and MariaDB-alone limits, measured in the same run
     after the node stopped (--no-raw skips them).

    .venv/bin/python -m loadtest.graphs                   # 3 pairs of 10 graphs, about 4 minutes
    .venv/bin/python -m loadtest.graphs --pairs 1 --graphs 3 --chain 50 --no-raw --no-report

Run from the repository root, one benchmark at a time. Report: loadtest/reports/graphs.md/.json.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import pathlib
import statistics
import sys
import tempfile
import time

from harness.stats import percentile
from harness.wait import wait_until
from loadtest.bench.env import NAMESPACE, BenchEnv, add_stack_options, spread_task_types, stack_from_args
from loadtest.bench.executors import Executors
from loadtest.bench.observe import CpuMeter, machine_facts, stack_pids
from taskring import Client, TaskSpec
from taskring.graph import Graph

REPORTS = pathlib.Path(__file__).with_name("reports")
PARTS = ("node", "mariadb", "kafka", "executor")
"""The processes whose CPU per task is reported."""


def fan_graph(graph_id: str, types: list[str], width: int) -> Graph:
    g = Graph(graph_id)
    root = g.task("root", TaskSpec(NAMESPACE, types[0]))
    middle = [g.task(f"m{i}", TaskSpec(NAMESPACE, types[(i + 1) % len(types)]), after=[root]) for i in range(width)]
    g.task("sink", TaskSpec(NAMESPACE, types[-1]), after=middle)
    return g


def chain_graph(graph_id: str, types: list[str], length: int) -> Graph:
    g = Graph(graph_id)
    last = g.task("c0", TaskSpec(NAMESPACE, types[0]))
    for i in range(1, length):
        last = g.task(f"c{i}", TaskSpec(NAMESPACE, types[i % len(types)]), after=[last])
    return g


def meter(node_pid: int, executors: Executors) -> CpuMeter:
    """CPU of every process a task passes through, over one run (bench/observe.py)."""
    stack = stack_pids()
    return CpuMeter({"node": node_pid, "mariadb": stack.get("mariadb"), "kafka": stack.get("kafka"),
                     **{f"executor-{i}": pid for i, pid in enumerate(executors.pids)}})


def _cpu(figures: dict) -> dict[str, float]:
    """Process CPU seconds by part, the executors summed."""
    procs = figures["process_cpu_s"]
    out = {k: v or 0.0 for k, v in procs.items() if not k.startswith("executor-")}
    out["executor"] = sum(v or 0.0 for k, v in procs.items() if k.startswith("executor-"))
    return out


def run_plain(client: Client, executors: Executors, types: list[str], n: int, node_pid: int) -> dict:
    before = executors.executed()
    started = time.monotonic()
    cpu = meter(node_pid, executors).start()
    for i in range(0, n, 1000):
        client.submit_batch([TaskSpec(NAMESPACE, types[j % len(types)], {"i": j})
                             for j in range(i, min(n, i + 1000))])
    wait_until(lambda: executors.executed() >= before + n, 600, f"{n} plain tasks to run", 0.02)
    elapsed = time.monotonic() - started
    return {"tasks": n, "seconds": elapsed, "tasks_per_s": n / elapsed, "cpu_s": _cpu(cpu.stop())}


def run_graphs(client: Client, executors: Executors, types: list[str], count: int, width: int, node_pid: int,
               tag: str) -> dict:
    before = executors.executed()
    n = count * (width + 2)
    started = time.monotonic()
    cpu = meter(node_pid, executors).start()
    for k in range(count):
        client.submit_graph(fan_graph(f"fan-{tag}-{k}", types, width))
    wait_until(lambda: executors.executed() >= before + n, 600, f"{count} graphs to run", 0.02)
    elapsed = time.monotonic() - started
    return {"tasks": n, "edges": count * 2 * width, "seconds": elapsed, "tasks_per_s": n / elapsed,
            "cpu_s": _cpu(cpu.stop()), "graph_ids": [f"fan-{tag}-{k}" for k in range(count)]}


def _history(world, task_ids: list[str]) -> dict[str, list[tuple[str, dt.datetime]]]:
    out: dict[str, list] = {}
    for i in range(0, len(task_ids), 500):
        chunk = task_ids[i:i + 500]
        marks = ",".join(["%s"] * len(chunk))
        for tid, state, at in world.sql(f"SELECT task_id, state, at FROM task_history WHERE task_id IN ({marks})"
                                        " ORDER BY task_id, seq", chunk):
            out.setdefault(tid, []).append((state, at))
    return out


def _at(history: list[tuple[str, dt.datetime]], state: str, last: bool = False) -> dt.datetime:
    found = [at for s, at in history if s == state]
    if not found:
        raise LookupError(f"no {state!r} event in {history}")
    return found[-1] if last else found[0]


def release_latency(world, client: Client, graph_ids: list[str], starts: dict[str, float]) -> dict:
    """Per fan-in sink: its last parent's end -> its release, and -> its start."""
    to_release, to_start = [], []
    for gid in graph_ids:
        info = client.get_graph(NAMESPACE, gid)
        ids = {key: n.task_id for key, n in info.nodes.items()}
        parents = [tid for key, tid in ids.items() if key.startswith("m")]
        history = _history(world, [*parents, ids["sink"]])
        last_end = max(_at(history[p], "succeeded", last=True) for p in parents)
        released = _at(history[ids["sink"]], "queued")
        to_release.append((released - last_end).total_seconds() * 1000)
        start = starts.get(ids["sink"])
        if start is not None:
            to_start.append(start * 1000 - last_end.replace(tzinfo=dt.UTC).timestamp() * 1000)
    return {"to_release_ms": _pcts(to_release), "to_start_ms": _pcts(to_start)}


def chain_latency(world, client: Client, executors: Executors, types: list[str], length: int) -> dict:
    before = executors.executed()
    client.submit_graph(chain_graph("chain", types, length))
    wait_until(lambda: executors.executed() >= before + length, 300, "the chain to run", 0.02)
    info = client.get_graph(NAMESPACE, "chain")
    ids = [info.nodes[f"c{i}"].task_id for i in range(length)]
    history = _history(world, ids)
    links = [(_at(history[child], "queued") - _at(history[parent], "succeeded", last=True)).total_seconds() * 1000
             for parent, child in zip(ids, ids[1:])]
    first = _at(history[ids[0]], "queued")
    last = _at(history[ids[-1]], "succeeded", last=True)
    return {"length": length, "link_release_ms": _pcts(links),
            "whole_chain_s": (last - first).total_seconds()}


def _pcts(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    return {"n": len(values), "p50": percentile(ordered, 50), "p99": percentile(ordered, 99), "max": ordered[-1]}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=3, help="alternating (plain, graphs) pairs (default 3)")
    p.add_argument("--graphs", type=int, default=10, help="graphs of 1,000 tasks per run (default 10)")
    p.add_argument("--width", type=int, default=998, help="the fan-out's width (default 998: 1,000 tasks a graph)")
    p.add_argument("--chain", type=int, default=200, help="tasks of the chain for per-edge latency (default 200)")
    p.add_argument("--no-raw", action="store_true", help="skip the Kafka-alone and MariaDB-alone limits")
    p.add_argument("--no-report", action="store_true", help="print only; write nothing to loadtest/reports/")
    add_stack_options(p)
    args = p.parse_args(argv)
    stack = stack_from_args(args, "loadtest.graphs")
    types = spread_task_types()
    command = "python -m loadtest.graphs " + " ".join(argv if argv is not None else sys.argv[1:])
    with tempfile.TemporaryDirectory(prefix="taskring-graphs-") as tmp:
        env = BenchEnv(stack, "graphs", pathlib.Path(tmp)).start()
        executors = Executors(env.world, types, count=1, max_in_flight=2_000)
        try:
            node = env.start_node("graphs-1", single=True, TASKRING_ROUTE_THRESHOLD_MS="5000")
            node.wait_ready()
            executors.start()
            env.on_stop("executors", executors.stop)
            pairs = []
            with Client(node.target, rpc_timeout_s=120) as client:
                run_plain(client, executors, types, 2_000, node.pid)   # warm up both paths
                run_graphs(client, executors, types, 1, args.width, node.pid, "warm")
                for i in range(args.pairs):
                    plain = run_plain(client, executors, types, args.graphs * (args.width + 2), node.pid)
                    graphs = run_graphs(client, executors, types, args.graphs, args.width, node.pid, str(i))
                    pairs.append({"plain": plain, "graphs": graphs})
                    print(f"pair {i + 1}: plain {plain['tasks_per_s']:,.0f} tasks/s, graphs"
                          f" {graphs['tasks_per_s']:,.0f} tasks/s", flush=True)
                chain = chain_latency(env.world, client, executors, types, args.chain)
                runs = executors.stop()
                starts = {r.task_id: r.start_s for r in runs}
                fan_in = release_latency(env.world, client, [g for pair in pairs for g in pair["graphs"]["graph_ids"]],
                                         starts)
        finally:
            env.stop()
    raw = None
    if not args.no_raw:
        from loadtest.raw_parts import measure_raw_parts
        raw = measure_raw_parts(50_000, kafka_bootstrap=stack.kafka_bootstrap, mysql_host=stack.host,
                                mysql_port=stack.mysql_port, mysql_user=stack.mysql_user)
    result = summarize(pairs, chain, fan_in, raw, command, stack)
    text = render(result)
    print(text)
    if not args.no_report:
        REPORTS.mkdir(exist_ok=True)
        (REPORTS / "graphs.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
        (REPORTS / "graphs.md").write_text(text + "\n")


def summarize(pairs: list[dict], chain: dict, fan_in: dict, raw: dict | None, command: str, stack) -> dict:
    def per_task(run: dict, part: str) -> float:
        return run["cpu_s"].get(part, 0.0) / run["tasks"] * 1e6
    ratios = [p["graphs"]["tasks_per_s"] / p["plain"]["tasks_per_s"] for p in pairs]
    extra_per_edge = {part: statistics.median(
        (p["graphs"]["cpu_s"][part] - p["plain"]["cpu_s"][part] * p["graphs"]["tasks"] / p["plain"]["tasks"])
        / p["graphs"]["edges"] * 1e6 for p in pairs) for part in PARTS}
    return {
        "command": command, "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine_facts(stack),
        "pairs": [{k: {kk: vv for kk, vv in v.items() if kk != "graph_ids"} for k, v in p.items()} for p in pairs],
        "ratio_median": statistics.median(ratios), "ratios": ratios,
        "cpu_us_per_task": {kind: {part: statistics.median(per_task(p[kind], part) for p in pairs)
                                   for part in PARTS} for kind in ("plain", "graphs")},
        "extra_cpu_us_per_edge": extra_per_edge, "fan_in": fan_in, "chain": chain, "raw": raw,
    }


def render(r: dict) -> str:
    lines = ["# Graphs: submit and release cost", "", f"`{r['command']}` ({r['at']})", "",
             "CPU µs per task of each process, plain / graphs (executor: the executor processes' sum).", "",
             "| pair | plain tasks/s | graph tasks/s | ratio | " + " | ".join(PARTS) + " |",
             "| --- | ---: | ---: | ---: | " + " | ".join("---:" for _ in PARTS) + " |"]
    for i, p in enumerate(r["pairs"], 1):
        plain, graphs = p["plain"], p["graphs"]
        per_part = " | ".join(f"{plain['cpu_s'][part] / plain['tasks'] * 1e6:.0f} /"
                              f" {graphs['cpu_s'][part] / graphs['tasks'] * 1e6:.0f}" for part in PARTS)
        lines.append(f"| {i} | {plain['tasks_per_s']:,.0f} | {graphs['tasks_per_s']:,.0f} |"
                     f" {graphs['tasks_per_s'] / plain['tasks_per_s']:.2f} | {per_part} |")
    fan, chain = r["fan_in"], r["chain"]
    lines += ["", f"- **graphs / plain tasks/s, median: {r['ratio_median']:.2f}** (target >= 0.5, aiming at 0.6);"
              f" a graph of 1,000 tasks has 1,996 edges",
              "- extra CPU per edge, median: " + ", ".join(f"{part} {r['extra_cpu_us_per_edge'][part]:.1f} µs"
                                                           for part in PARTS)
              + f" = {sum(r['extra_cpu_us_per_edge'].values()):.1f} µs (target <= 25 µs across all processes)",
              f"- fan-in (a sink of 998 parents), last parent's end -> release: p50"
              f" {fan['to_release_ms'].get('p50', 0):.0f} ms, p99 {fan['to_release_ms'].get('p99', 0):.0f} ms;"
              f" -> start: p50 {fan['to_start_ms'].get('p50', 0):.0f} ms, p99 {fan['to_start_ms'].get('p99', 0):.0f} ms"
              f" (n = {fan['to_release_ms'].get('n', 0)})",
              f"- chain of {chain['length']}: each link's release after its parent's end p50"
              f" {chain['link_release_ms'].get('p50', 0):.1f} ms, p99 {chain['link_release_ms'].get('p99', 0):.1f} ms,"
              f" max {chain['link_release_ms'].get('max', 0):.1f} ms; the whole chain {chain['whole_chain_s']:.1f} s"]
    raw = r.get("raw")
    if raw:
        lines += ["", "Raw parts, same run (loadtest/raw_parts.py, node stopped): "
                  + json.dumps({k: v for k, v in raw.items() if k not in ("machine",)}, default=str)[:1500]]
    else:
        lines += ["", "Raw parts not measured in this run (--no-raw)."]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
