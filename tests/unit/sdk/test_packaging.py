"""The SDK ships its types (PEP 561): py.typed in the package, and in the wheel that
sdk/python builds, with the wire code's stubs beside it."""
from __future__ import annotations

import importlib.resources
import pathlib
import shutil
import subprocess
import sys
import tomllib
import zipfile

SDK = pathlib.Path(__file__).resolve().parents[3] / "sdk" / "python"


def test_the_package_carries_py_typed():
    assert importlib.resources.files("taskring").joinpath("py.typed").is_file()


def test_the_packaging_names_py_typed():
    package_data = tomllib.loads((SDK / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "py.typed" in package_data["taskring"]


def test_the_built_wheel_ships_py_typed_and_the_stubs(tmp_path):
    # Built from a copy: a build writes build/ and *.egg-info next to the sources, and
    # colleagues share this tree. No isolation: setuptools is already in the venv, and
    # a wheel needs nothing else (no network).
    src = tmp_path / "src"
    shutil.copytree(SDK, src, ignore=shutil.ignore_patterns("*.egg-info", "build", "__pycache__"))
    out = tmp_path / "dist"
    out.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", "import sys, setuptools.build_meta as b; print(b.build_wheel(sys.argv[1]))", str(out)],
        cwd=src, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    wheel = out / done.stdout.strip().splitlines()[-1]
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "taskring/py.typed" in names
    assert "taskring/_pb/taskring/v1/taskring_pb2.pyi" in names
