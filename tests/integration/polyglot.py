"""Helpers for the cross-language test: build the Go, Java and Node SDK CLIs, run
them as processes whose output goes to files, and stop them by PID.

The CLIs (see each SDK's README):
- `taskring-go submit|executor` (built here with `go build ./cmd/taskring-go`);
- `node sdk/node/dist/cli.js executor` (`npm ci` when node_modules is missing, `npm run build`
  when dist/cli.js is missing or older than a source);
- `java -cp <target/classpath.txt>:target/classes io.taskring.cli.Main get|cancel`
  (`mvn -q -B -DskipTests compile`, which also writes target/classpath.txt, when missing or
  older than a source).
A missing toolchain fails the test, naming it: CI has them all, so it is never skipped.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness.processes import REPO, ChildProcess, display_command, tail

SDK = REPO / "sdk"
GO_DIR = SDK / "go"
NODE_DIR = SDK / "node"
JAVA_DIR = SDK / "java"
NODE_CLI = NODE_DIR / "dist" / "cli.js"
JAVA_CLASSPATH_FILE = JAVA_DIR / "target" / "classpath.txt"
JAVA_CLASSES = JAVA_DIR / "target" / "classes"
JAVA_MAIN_CLASS = JAVA_CLASSES / "io" / "taskring" / "cli" / "Main.class"


def _require(tool: str) -> str:
    found = shutil.which(tool)
    if not found:
        pytest.fail(f"toolchain missing: `{tool}` is not on PATH; the cross-language test needs go, node, npm, "
                    f"java and mvn (CI has them)", pytrace=False)
    return found


def _build_step(what: str, args: Sequence[str], cwd: Path, log: Path, timeout_s: float) -> None:
    t0 = time.monotonic()
    with open(log, "ab") as out:
        out.write(f"$ (cd {cwd} && {' '.join(args)})\n".encode())
        out.flush()
        try:
            proc = subprocess.run(list(args), cwd=cwd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            pytest.fail(f"building {what} timed out after {timeout_s:.0f}s: `{' '.join(args)}` in {cwd}; "
                        f"log {log}:\n{tail(log)}", pytrace=False)
    if proc.returncode != 0:
        pytest.fail(f"building {what} failed (exit {proc.returncode}): `{' '.join(args)}` in {cwd}; "
                    f"log {log}:\n{tail(log)}", pytrace=False)
    print(f"polyglot: built {what} in {time.monotonic() - t0:.1f}s")


@dataclasses.dataclass(frozen=True)
class Tools:
    go_cli: Path
    node_cli: Path
    java_classpath: str
    build_log: Path

    def java(self, *args: str) -> list[str]:
        return ["java", "-cp", self.java_classpath, "io.taskring.cli.Main", *args]

    def cli(self, language: str, *args: str) -> list[str]:
        """The command line of `language`'s CLI (go, java, node) with `args`."""
        if language == "go":
            return [str(self.go_cli), *args]
        if language == "node":
            return ["node", str(self.node_cli), *args]
        if language == "java":
            return self.java(*args)
        raise ValueError(f"no CLI for {language!r}")

    def node_executor(self, zk: str, namespace: str, types: str, behavior: str, *extra: str) -> list[str]:
        return ["node", str(self.node_cli), "executor", *executor_args(zk, namespace, types, behavior), *extra]

    def go_executor(self, zk: str, namespace: str, types: str, behavior: str, *extra: str) -> list[str]:
        return [str(self.go_cli), "executor", *executor_args(zk, namespace, types, behavior), *extra]

    def java_executor(self, zk: str, namespace: str, types: str, behavior: str, *extra: str) -> list[str]:
        return self.java("executor", *executor_args(zk, namespace, types, behavior), *extra)


def executor_args(zk: str, namespace: str, types: str, behavior: str) -> list[str]:
    """The flags every SDK's `executor` mode takes alike."""
    return ["--zk", zk, "--namespace", namespace, "--types", types, "--behavior", behavior]


def _stale(built: Path, sources: Path) -> bool:
    """Missing, or older than a source file: a checkout that pulled new SDK code must not run
    the CLIs built before it."""
    if not built.exists():
        return True
    newest = max((f.stat().st_mtime for f in sources.rglob("*") if f.is_file()), default=0.0)
    return newest > built.stat().st_mtime


def build_tools(out_dir: Path) -> Tools:
    """Build what is missing (once per module: call from a module-scoped fixture)."""
    for tool in ("go", "node", "npm", "java", "mvn"):
        _require(tool)
    out_dir.mkdir(parents=True, exist_ok=True)
    log = out_dir / "build.log"
    if _stale(NODE_CLI, NODE_DIR / "src"):
        if not (NODE_DIR / "node_modules").is_dir():
            _build_step("the Node SDK's dependencies", ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                        NODE_DIR, log, 600)
        _build_step("the Node SDK (dist/cli.js)", ["npm", "run", "--silent", "build"], NODE_DIR, log, 600)
        if not NODE_CLI.exists():
            pytest.fail(f"`npm run build` in {NODE_DIR} left no {NODE_CLI}; log {log}:\n{tail(log)}", pytrace=False)
    if not JAVA_CLASSPATH_FILE.exists() or _stale(JAVA_MAIN_CLASS, JAVA_DIR / "src" / "main"):
        # sdk/java/README.md: `mvn -q -B -DskipTests compile` also writes target/classpath.txt
        # (maven-dependency-plugin build-classpath, bound to generate-resources in the pom).
        _build_step("the Java SDK (target/classes, target/classpath.txt)",
                    ["mvn", "-q", "-B", "-Dstyle.color=never", "-DskipTests", "compile"], JAVA_DIR, log, 900)
        if not (JAVA_CLASSPATH_FILE.exists() and JAVA_MAIN_CLASS.exists()):
            pytest.fail(f"mvn compile in {JAVA_DIR} left no {JAVA_CLASSPATH_FILE} or {JAVA_MAIN_CLASS}; "
                        f"log {log}:\n{tail(log)}", pytrace=False)
    go_cli = out_dir / "taskring-go"
    _build_step("the Go CLI (cmd/taskring-go)", ["go", "build", "-o", str(go_cli), "./cmd/taskring-go"],
                GO_DIR, log, 600)
    classpath = JAVA_CLASSPATH_FILE.read_text().strip()
    return Tools(go_cli=go_cli, node_cli=NODE_CLI,
                 java_classpath=f"{classpath}{os.pathsep}{JAVA_CLASSES}" if classpath else str(JAVA_CLASSES),
                 build_log=log)


@dataclasses.dataclass
class CliResult:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    def command(self) -> str:
        return display_command(self.args)

    def describe(self) -> str:
        return (f"`{self.command()}` exited {self.returncode}\n--- stdout:\n{self.stdout[-3000:]}"
                f"\n--- stderr:\n{self.stderr[-3000:]}")

    def line(self) -> str:
        """The one stdout line a CLI prints on success."""
        assert self.returncode == 0, self.describe()
        lines = [ln for ln in self.stdout.splitlines() if ln.strip()]
        assert len(lines) == 1, f"expected one stdout line; {self.describe()}"
        return lines[0].strip()

    def json(self) -> dict:
        line = self.line()
        try:
            return json.loads(line)
        except ValueError:
            raise AssertionError(f"not one JSON line; {self.describe()}") from None


def run_cli(args: Sequence[str], log: Path, timeout_s: float = 60.0, cwd: Path = REPO,
            env: dict[str, str] | None = None) -> CliResult:
    """Run a CLI to completion; its command line and output are appended to `log` (never
    `env`, which may hold a token). env None: this process's environment."""
    args = list(args)
    try:
        proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout_s, env=env)
        result = CliResult(args, proc.returncode, proc.stdout, proc.stderr)
    except subprocess.TimeoutExpired as exc:
        def text(b):
            return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
        result = CliResult(args, -1, text(exc.stdout), text(exc.stderr) + f"\n(timed out after {timeout_s:.0f}s)")
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"$ {result.command()}\n[exit {result.returncode}]\n{result.stdout}{result.stderr}\n")
    if result.returncode == -1:
        raise AssertionError(result.describe())
    return result


class ServiceProcess(ChildProcess):
    """A long-running CLI process (an executor): stdout to <logs>/<name>.out, stderr to
    <logs>/<name>.err; stopped by its PID (SIGTERM, then SIGKILL after a deadline)."""

    def __init__(self, name: str, args: Sequence[str], logs: Path, cwd: Path = REPO,
                 env: dict[str, str] | None = None):
        super().__init__(name, args, logs / f"{name}.out", err_path=logs / f"{name}.err", cwd=cwd, env=env)
        self.out_path = self.log_path

    def stdout_lines(self) -> list[str]:
        try:
            return self.out_path.read_text(errors="replace").splitlines()
        except OSError:
            return []

    def logs(self, lines: int = 30) -> str:
        return self.describe(lines)

    def stop(self, timeout_s: float = 15.0) -> bool:
        killed = super().stop(timeout_s)
        if killed:
            print(f"polyglot: {self.name} (pid {self.pid}) ignored SIGTERM for {timeout_s:.0f}s; killed it")
        return killed


GRPCURL_VERSION = "v1.9.4"


def build_grpcurl(log: Path) -> Path:
    """grpcurl, built from the Go module proxy once per machine into the user's cache (the test of
    reflection and health needs a real gRPC tool that has no proto file)."""
    _require("go")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "taskring" / f"grpcurl-{GRPCURL_VERSION}"
    binary = cache / "grpcurl"
    if not binary.exists():
        cache.mkdir(parents=True, exist_ok=True)
        env_args = ["env", f"GOBIN={cache}", "go", "install",
                    f"github.com/fullstorydev/grpcurl/cmd/grpcurl@{GRPCURL_VERSION}"]
        _build_step(f"grpcurl {GRPCURL_VERSION}", env_args, REPO, log, 900)
    return binary
