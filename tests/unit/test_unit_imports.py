"""Unit tests import no agent SDK: every module a unit test imports (at its top or inside a test)
is imported in one fresh interpreter, and neither the OpenHands SDK nor LiteLLM may come with it
(each costs seconds of every unit run; a test that needs them is an integration test)."""

import ast
import json
import subprocess
import sys
from pathlib import Path

UNIT = Path(__file__).parent
HEAVY = ("openhands.sdk", "openhands.tools", "litellm")


def imported(path: Path) -> set[str]:
    """The modules a test file imports, anywhere in it (`from x import y` may name a module y)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
    return names


def test_no_module_a_unit_test_imports_brings_the_agent_sdk():
    modules = sorted({m for f in UNIT.glob("*.py") for m in imported(f)})
    probe = (
        "import importlib, json, sys\n"
        f"sys.path[:0] = [{str(UNIT.parent)!r}, {str(UNIT)!r}]\n"
        "brought = {}\n"
        f"for m in {modules!r}:\n"
        "    before = set(sys.modules)\n"
        "    try:\n"
        "        importlib.import_module(m)\n"
        "    except ImportError:\n"
        "        continue  # a name imported from a module, not a module\n"
        f"    new = [n for n in set(sys.modules) - before if n.startswith({HEAVY!r})]\n"
        "    if new:\n"
        "        brought[m] = sorted(new)[:3]\n"
        "print(json.dumps(brought))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=True)
    brought = json.loads(out.stdout.strip().splitlines()[-1])
    assert brought == {}, f"unit tests import modules that bring the agent SDK (move those tests to tests/integration): {brought}"
