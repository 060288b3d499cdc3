"""A CPU cap for processes, to simulate machines of equal size on one box.

cgroup v1's `cpu` controller (mounted at /sys/fs/cgroup/cpu here, see FIELD-NOTES):
a folder is a cgroup, cpu.cfs_quota_us / cpu.cfs_period_us is the share of one core
its processes may use together, and writing a PID to cgroup.procs moves that process
with all its threads (a child it forked earlier stays where it was). cpu.stat counts
the periods in which the cap bit (nr_throttled), which shows the cap was what held a
process back. Needs root.
"""
from __future__ import annotations

import contextlib
import os
import pathlib

CPU_ROOT = pathlib.Path("/sys/fs/cgroup/cpu")
_PERIOD_US = 100_000


class CpuCap:
    """One cgroup holding its processes to `cores` of CPU (0.5: half of one core)."""

    def __init__(self, name: str, cores: float, root: pathlib.Path = CPU_ROOT):
        if cores <= 0:
            raise ValueError(f"CpuCap.cores must be > 0, got {cores!r}")
        self.cores = cores
        self._root = root
        self.path = root / name

    @staticmethod
    def available(root: pathlib.Path = CPU_ROOT) -> bool:
        return (root / "cgroup.procs").exists() and os.access(root, os.W_OK)

    def start(self) -> CpuCap:
        self.path.mkdir(exist_ok=True)
        (self.path / "cpu.cfs_period_us").write_text(str(_PERIOD_US))
        (self.path / "cpu.cfs_quota_us").write_text(str(int(self.cores * _PERIOD_US)))
        return self

    def add(self, pid: int) -> None:
        (self.path / "cgroup.procs").write_text(str(pid))

    def stat(self) -> dict[str, int]:
        """cpu.stat: nr_periods, nr_throttled, throttled_time (ns)."""
        out = {}
        for line in (self.path / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            out[key] = int(value)
        return out

    def stop(self) -> None:
        """Move any process still inside back to the root group, then remove the folder.
        Safe twice and before start."""
        if not self.path.exists():
            return
        with contextlib.suppress(OSError):
            for pid in (self.path / "cgroup.procs").read_text().split():
                with contextlib.suppress(OSError):
                    (self._root / "cgroup.procs").write_text(pid)
        with contextlib.suppress(OSError):
            self.path.rmdir()
