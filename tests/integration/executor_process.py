"""A RecordingExecutor in a process of its own, for the executor faults of the fault
matrix (kill -9 mid-task, a hung process, a dropped connection): every execution is
appended to a JSON-lines file as it starts, so what the process ran before it died is
still counted.

    python -m tests.integration.executor_process --zk HOSTS --record FILE [--port N] [--advertise-port N]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import subprocess
import sys
import threading
from pathlib import Path

from tests.integration.harness import REPO, Execution, ProcessFaults, RecordingExecutor, free_port, wait_until


class FileRecordingExecutor(RecordingExecutor):
    def __init__(self, zk_hosts: str, record: Path, **options):
        super().__init__(zk_hosts, **options)
        self._file = open(record, "a", buffering=1, encoding="utf-8")

    def _appended(self, execution: Execution) -> None:
        self._file.write(json.dumps(dataclasses.asdict(execution)) + "\n")


class ExecutorProcess(ProcessFaults):
    """The executor above as a child process, with the fault helpers."""

    def __init__(self, zk_hosts: str, logs: Path, name: str = "executor-b", advertise_port: int | None = None):
        self.zk_hosts = zk_hosts
        self.port = free_port()
        self.advertise_port = advertise_port
        self.record = logs / f"{name}.jsonl"
        self.log_path = logs / f"{name}.log"
        self.proc: subprocess.Popen | None = None

    def start(self) -> "ExecutorProcess":
        args = [sys.executable, "-m", "tests.integration.executor_process", "--zk", self.zk_hosts,
                "--record", str(self.record), "--port", str(self.port)]
        if self.advertise_port:
            args += ["--advertise-port", str(self.advertise_port)]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(args, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        wait_until(lambda: b"executor ready" in self.log_path.read_bytes() or self.proc.poll() is not None, 30,
                   f"the executor process to register (log {self.log_path})")
        assert self.proc.poll() is None, self.log_path.read_text(errors="replace")
        return self

    def executions(self) -> list[Execution]:
        if not self.record.exists():
            return []
        out = []
        for line in self.record.read_text().splitlines():
            try:
                out.append(Execution(**json.loads(line)))
            except (ValueError, TypeError):
                continue  # a line cut by kill -9
        return out

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.resume()
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--zk", required=True)
    parser.add_argument("--record", required=True, type=Path)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--advertise-port", type=int)
    args = parser.parse_args()
    executor = FileRecordingExecutor(args.zk, args.record, port=args.port, advertise_port=args.advertise_port,
                                     zk_session_timeout_s=3.0)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    executor.start()
    print(f"executor ready at {executor.executor.address}", flush=True)
    stop.wait()
    executor.stop()


if __name__ == "__main__":
    main()
