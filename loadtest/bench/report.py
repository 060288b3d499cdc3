"""The one writer of a benchmark's reports: `<name>.json` with every figure and
`<name>.md` to read, both opening with the command line that made them.

The JSON is written first, so that a bug in the markdown does not lose the run; the
markdown can be made again from it (`rerender`). Numbers are formatted here too, so
that every report writes them the same way.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

REPORTS_DIR = pathlib.Path(__file__).resolve().parents[1] / "reports"

Render = Callable[[dict[str, Any], str], str]
"""(result, command line) -> the markdown."""


def add_report_options(parser: argparse.ArgumentParser, default_name: str) -> None:
    """--report-name, --report-dir and --no-report."""
    parser.add_argument("--report-name", default=default_name,
                        help=f"<report-dir>/<name>.md and .json (default {default_name})")
    parser.add_argument("--report-dir", type=pathlib.Path, default=REPORTS_DIR,
                        help="where the reports go (default loadtest/reports)")
    parser.add_argument("--no-report", action="store_true", help="print only")


def command_line(script: str, argv: Sequence[str] | None = None) -> str:
    """`python loadtest/<script> <arguments>`: how the report was made, for its first lines."""
    return " ".join(["python", f"loadtest/{script}", *(sys.argv[1:] if argv is None else argv)]).strip()


def heading(title: str, result: dict[str, Any], command: str, seconds: float | None = None) -> list[str]:
    """The report's first lines: its title, when and with what command it ran, the machine."""
    took = f" ({seconds:.0f} s)" if seconds is not None else ""
    return [f"# {title}", "", f"Run {result.get('started_at', '?')} with `{command}`{took}.", "",
            "Machine: " + ", ".join(f"{k} {v}" for k, v in result.get("machine", {}).items()) + "."]


def write(result: dict[str, Any], command: str, directory: pathlib.Path, name: str,
          render: Render) -> list[pathlib.Path]:
    """<directory>/<name>.json (the result and the command), then <name>.md (render's)."""
    directory.mkdir(parents=True, exist_ok=True)
    js, md = directory / f"{name}.json", directory / f"{name}.md"
    js.write_text(json.dumps({**result, "command": command}, indent=1, default=str) + "\n")
    md.write_text(render(result, command))
    return [md, js]


def rerender(directory: pathlib.Path, name: str, render: Render) -> pathlib.Path:
    """<name>.md again from <name>.json, running nothing."""
    result = json.loads((directory / f"{name}.json").read_text())
    md = directory / f"{name}.md"
    md.write_text(render(result, result.get("command", "?")))
    return md


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
