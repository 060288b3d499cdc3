"""The one writer of a benchmark's reports: `<name>.json` with every figure and
`<name>.md` to read (and `<name>.png` for a benchmark that draws a chart), the JSON
holding the command line that made them and the markdown opening with it.

The JSON is written first, so that a bug in the markdown does not lose the run; the
markdown can be made again from it (`rerender`). Numbers are formatted here too, so
that every report writes them the same way.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import shlex
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

REPORTS_DIR = pathlib.Path(__file__).resolve().parents[1] / "reports"

Render = Callable[[dict[str, Any], str], str]
"""(result, command line) -> the markdown."""

Chart = Callable[[dict[str, Any], pathlib.Path], None]
"""(result, where to write the PNG)."""


def add_report_options(parser: argparse.ArgumentParser, default_name: str | None, rerender: bool = False) -> None:
    """--report-name, --report-dir and --no-report (and --rerender, for a report that can be
    made again from its JSON). A default_name of None: the benchmark names it by the run."""
    parser.add_argument("--report-name", default=default_name,
                        help=f"<report-dir>/<name>.md and .json (default {default_name or 'by the run'})")
    parser.add_argument("--report-dir", type=pathlib.Path, default=REPORTS_DIR,
                        help="where the reports go (default loadtest/reports)")
    parser.add_argument("--no-report", action="store_true", help="print only")
    if rerender:
        parser.add_argument("--rerender", action="store_true",
                            help="run nothing: make <name>.md (and any chart) again from <name>.json")


def command_line(module: str, argv: Sequence[str] | None = None) -> str:
    """`python -m <module> <arguments>`: how the report was made, for its first lines."""
    return shlex.join(["python", "-m", module, *(sys.argv[1:] if argv is None else argv)])


def heading(title: str, result: dict[str, Any], command: str, seconds: float | None = None) -> list[str]:
    """The report's first lines: its title, when and with what command it ran, the machine."""
    took = f" ({seconds:.0f} s)" if seconds is not None else ""
    return [f"# {title}", "", f"Run {result.get('started_at', '?')} with `{command}`{took}.", "",
            "Machine: " + ", ".join(f"{k} {v}" for k, v in result.get("machine", {}).items()) + "."]


def write(result: dict[str, Any], command: str, directory: pathlib.Path, name: str,
          render: Render, chart: Chart | None = None) -> list[pathlib.Path]:
    """<directory>/<name>.json (the result and the command), then <name>.md (render's),
    then <name>.png (chart's, when given)."""
    directory.mkdir(parents=True, exist_ok=True)
    js = directory / f"{name}.json"
    js.write_text(json.dumps({**result, "command": command}, indent=1, default=str) + "\n")
    return [*_render(result, command, directory, name, render, chart), js]


def rerender(directory: pathlib.Path, name: str, render: Render, chart: Chart | None = None) -> list[pathlib.Path]:
    """<name>.md (and .png) again from <name>.json, running nothing."""
    result = json.loads((directory / f"{name}.json").read_text())
    return _render(result, result.get("command", "?"), directory, name, render, chart)


def publish(args: argparse.Namespace, result: dict[str, Any], command: str, render: Render,
            chart: Chart | None = None, name: str | None = None) -> None:
    """write() to add_report_options' --report-dir and --report-name (or `name`), saying
    what it wrote; nothing with --no-report."""
    if args.no_report:
        return
    for path in write(result, command, args.report_dir, name or args.report_name, render, chart):
        print(f"wrote {path}")


def print_and_publish(args: argparse.Namespace, result: dict[str, Any], command: str, text: str,
                      name: str | None = None) -> None:
    """The markdown the run made once (from more than its result: no --rerender), printed and
    then published with the result."""
    print(text)
    publish(args, result, command, lambda result, command: text, name=name)


def rerender_if_asked(args: argparse.Namespace, render: Render, chart: Chart | None = None) -> bool:
    """With --rerender: the report made again from its JSON (saying so), and True."""
    if not getattr(args, "rerender", False):
        return False
    for path in rerender(args.report_dir, args.report_name, render, chart):
        print(f"rewrote {path}")
    return True


def _render(result: dict[str, Any], command: str, directory: pathlib.Path, name: str, render: Render,
            chart: Chart | None) -> list[pathlib.Path]:
    md = directory / f"{name}.md"
    md.write_text(render(result, command))
    if chart is None:
        return [md]
    png = directory / f"{name}.png"
    chart(result, png)
    return [md, png]


# ---------------------------------------------------------------- numbers and tables

def fmt(value: float | None, digits: int = 0, unit: str = "") -> str:
    """1,234.5 style; "-" for None."""
    return "-" if value is None else f"{value:,.{digits}f}{unit}"


def fmt_pct(share: float | None, digits: int = 0) -> str:
    """A share (0.42) as a percentage (42%); "-" for None."""
    return "-" if share is None else f"{share:.{digits}%}"


def fmt_range(d: dict[str, Any], digits: int = 2) -> str:
    """stats.min_median_max's figures as "min / median / max"."""
    return " / ".join(fmt(d[k], digits) for k in ("min", "median", "max"))


def table(rows: Iterable[tuple[str, str]], head: tuple[str, str] = ("figure", "value")) -> list[str]:
    """A two-column markdown table, the value right-aligned."""
    return [f"| {head[0]} | {head[1]} |", "| --- | ---: |", *(f"| {k} | {v} |" for k, v in rows)]
