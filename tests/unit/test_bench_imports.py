"""Every module a bench/ script imports exists (senpai's and tests/ helpers' as files, others as
installed packages), and every name it imports from senpai or a tests/ helper is defined there.
bench/ runs only under `make bench`, so a rename elsewhere would otherwise break a figure at its
first import, found only on the next bench run. Read with `ast`, never imported: a bench script's
imports include the OpenHands SDK, which unit tests do not load. Not checked: attributes read off
an imported module (`import x as m; m.NAME`), and imports inside strings a child process runs."""

import ast
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HELPERS = [ROOT / "tests", ROOT / "tests" / "e2e", ROOT / "bench"]  # where a bench script's sys.path finds them


def _source(module: str) -> Path | None:
    """The file that defines `module` (a package's __init__.py), or None if senpai, tests/ and bench/ hold none."""
    parts = module.split(".")
    roots = [ROOT] if parts[0] == "senpai" else HELPERS
    for root in roots:
        for path in (root.joinpath(*parts).with_suffix(".py"), root.joinpath(*parts, "__init__.py")):
            if path.is_file():
                return path
    return None


def _defined(tree: ast.Module) -> set[str]:
    """Names bound at the top level of `tree`, inside top-level `if`, `try`, `with` and `for` blocks too."""
    names: set[str] = set()
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        targets: list[ast.AST] = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and node.value is not None:  # `X: int` binds nothing
            targets = [node.target]
        elif isinstance(node, ast.TypeAlias):
            targets = [node.name]
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.If | ast.Try | ast.With | ast.For):
            targets = [i.optional_vars for i in getattr(node, "items", []) if i.optional_vars] + (
                [node.target] if isinstance(node, ast.For) else []
            )
            todo += [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
            todo += [s for h in getattr(node, "handlers", []) for s in h.body]
        names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def _missing_module(module: str) -> str | None:
    """Why `module` cannot be imported by a bench script (None: it can): a senpai or tests/ module must
    be one of their files; any other must be installed (its top package found, never imported)."""
    if _source(module) is not None:
        return None
    top = module.split(".")[0]
    if top == "senpai" or _source(top) is not None or importlib.util.find_spec(top) is None:
        return f"no module {module}"
    return None


SCRIPTS = sorted((ROOT / "bench").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_every_module_and_name_a_bench_script_imports_exists(script: Path) -> None:
    missing = []
    for node in ast.walk(ast.parse(script.read_text())):
        if isinstance(node, ast.Import):
            missing += [f"line {node.lineno}: {why}" for a in node.names if (why := _missing_module(a.name))]
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level or not node.module:
            missing.append(f"line {node.lineno}: a relative import (bench scripts run as scripts)")
            continue
        if why := _missing_module(node.module):
            missing.append(f"line {node.lineno}: {why}")
            continue
        source = _source(node.module)
        if source is None:  # an installed package: its names are its own business
            continue
        defined = _defined(ast.parse(source.read_text()))
        for alias in node.names:
            if alias.name != "*" and alias.name not in defined and _source(f"{node.module}.{alias.name}") is None:
                missing.append(f"line {node.lineno}: {node.module} defines no {alias.name}")
    assert not missing, f"{script.name}: " + "; ".join(missing)


def test_the_check_finds_a_name_or_a_module_that_is_gone() -> None:
    assert "IDENTITY" in _defined(ast.parse(_source("senpai.job.workcopy").read_text()))
    assert "IDENTITY" not in _defined(ast.parse(_source("senpai.cli.demo").read_text()))  # the regression it guards
    assert _missing_module("senpai.no_such_module") and _missing_module("forge_fixturez") == "no module forge_fixturez"
    assert _missing_module("log_flod") == "no module log_flod" and _missing_module("forge_fixtures") is None
    assert _missing_module("click") is None and _missing_module("senpai.job.measure") is None
    tree = ast.parse("X: int\nwith open('f') as F:\n    pass\nfor I in []:\n    pass\ntype T = int\n")
    assert _defined(tree) == {"F", "I", "T"}
