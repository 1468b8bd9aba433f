"""The layout rules are checked by machines: import-linter contracts and ruff."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def test_import_layers_hold():
    proc = subprocess.run([str(BIN / "lint-imports")], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def test_ruff_is_clean():
    proc = subprocess.run([str(BIN / "ruff"), "check", "senpai", "tests", "examples"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_no_library_is_patched_in_tests():
    needle = "patch(" + '"github'  # built so this file does not match itself
    offenders = [p.name for p in (ROOT / "tests").rglob("*.py") if needle in p.read_text().replace("'", '"')]
    assert offenders == []
