"""Every name a bench/ script imports from senpai or from a tests/ helper is defined where it is
imported from. bench/ runs only under `make bench`, so a rename elsewhere would otherwise break a
figure at its first import, found only on the next bench run. Read with `ast`, never imported: a
bench script's imports include the OpenHands SDK, which unit tests do not load."""

import ast
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
    """Names bound at the top level of `tree`, inside top-level `if` and `try` blocks too."""
    names: set[str] = set()
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.If | ast.Try | ast.With):
            todo += [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
            todo += [s for h in getattr(node, "handlers", []) for s in h.body]
    return names


def _ours(module: str) -> bool:
    return module.split(".")[0] == "senpai" or _source(module) is not None


SCRIPTS = sorted((ROOT / "bench").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_every_name_a_bench_script_imports_from_senpai_or_tests_is_defined_there(script: Path) -> None:
    missing = []
    for node in ast.walk(ast.parse(script.read_text())):
        if not isinstance(node, ast.ImportFrom) or node.level or not node.module or not _ours(node.module):
            continue
        source = _source(node.module)
        if source is None:
            missing.append(f"line {node.lineno}: no module {node.module}")
            continue
        defined = _defined(ast.parse(source.read_text()))
        for alias in node.names:
            submodule = _source(f"{node.module}.{alias.name}")
            if alias.name not in defined and submodule is None:
                missing.append(f"line {node.lineno}: {node.module} defines no {alias.name}")
    assert not missing, f"{script.name}: " + "; ".join(missing)


def test_the_check_finds_a_name_that_is_gone(tmp_path: Path) -> None:
    assert "IDENTITY" in _defined(ast.parse(_source("senpai.job.workcopy").read_text()))
    assert "IDENTITY" not in _defined(ast.parse(_source("senpai.cli.demo").read_text()))  # the regression it guards
    assert _source("senpai.no_such_module") is None and _source("forge_fixtures") is not None
