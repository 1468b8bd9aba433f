"""The long tests really start first on every xdist worker: a real `pytest -n 2 --dist worksteal` run
of a small suite whose long tests come last in collection order (the first version of the hook
reordered nothing in the workers, which xdist runs with `dist` set to "no")."""

import json
import os
import subprocess
import sys
from pathlib import Path

SUITE = """
import json, os, pytest

def _ran(name):
    with open(os.environ["RAN_LOG"], "a") as f:
        f.write(json.dumps([os.environ["PYTEST_XDIST_WORKER"], name]) + "\\n")

@pytest.mark.parametrize("n", range(10))
def test_short(n):
    _ran(f"short{n}")

@pytest.mark.long
@pytest.mark.parametrize("n", range(2))
def test_long(n):
    _ran(f"long{n}")
"""
CONFTEST = """
from long_first import pytest_collection_modifyitems, pytest_configure_node  # noqa: F401

def pytest_configure(config):
    config.addinivalue_line("markers", "long: starts first")
"""
TESTS = Path(__file__).parents[1]


def _first_per_worker(tmp_path: Path, *args: str) -> dict[str, str]:
    (tmp_path / "test_suite.py").write_text(SUITE)
    (tmp_path / "conftest.py").write_text(CONFTEST)
    log = tmp_path / "ran.jsonl"
    log.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(TESTS), "RAN_LOG": str(log), "PYTEST_ADDOPTS": ""}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", os.devnull, "--rootdir", str(tmp_path), *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    first: dict[str, str] = {}
    for worker, name in map(json.loads, log.read_text().splitlines()):
        first.setdefault(worker, name)
    assert len(log.read_text().splitlines()) == 12  # every test ran once
    return first


def test_each_worksteal_worker_runs_a_long_test_first(tmp_path):
    assert sorted(_first_per_worker(tmp_path, "-n", "2", "--dist", "worksteal").values()) == ["long0", "long1"]


def test_other_modes_keep_the_collection_order(tmp_path):
    assert set(_first_per_worker(tmp_path, "-n", "2", "--dist", "load").values()) <= {f"short{n}" for n in range(10)}
