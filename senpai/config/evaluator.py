"""What `senpai validate` checks about the evaluator (`holdout.files`): it must be protected, and it
may import no repository file that is not itself protected and listed in `holdout.files`, and
none of its modules may be named like a standard-library module, or an installed one it imports,
which it would shadow.

The verifier runs the evaluator from the base revision with `python -I -P` in a directory holding
only `holdout.files`, so a repository module it imports would be missing there or, worse, be a
file a candidate can edit. A repository module is a top-level `name.py` or directory `name/` of
the repository, or a sibling `name.py` / `name/` of an evaluator file; imports are read with `ast`
(`import x`, `from x import y`, relative imports, and `importlib.import_module("x")` or
`__import__("x")` with a literal name). Imports built at run time cannot be read; the score step's
isolation is what stops those.
"""

import ast
import functools
import importlib.metadata
import sys
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from senpai.config.target import TargetConfig

MAX_FILE_BYTES = 1024 * 1024  # an evaluator source file larger than this is refused, not parsed
MAX_FILES = 200  # Python files under holdout.files that are read
_DYNAMIC = {"import_module", "__import__"}
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


def evaluator_problems(repo: Path, target: TargetConfig) -> list[str]:
    """Problems with `target.holdout.files` in checkout `repo`, one sentence each (empty: fine).

    Each names the file and, for an import, the imported name, the repository path it resolves to,
    whether that path is protected and listed, and the fix.
    """
    files = target.holdout.files
    problems = [
        f"holdout.files: {f} is not protected; add it (or a directory holding it) to `protected`"
        for f in files
        if not target.is_protected(f)
    ]
    problems += [f"holdout.files: {f} does not exist in the repository" for f in files if not (repo / f).exists()]
    sources = list(_python_files(repo, files))
    if len(sources) > MAX_FILES:
        return [*problems, f"holdout.files: more than {MAX_FILES} Python files; list the evaluator's own files only"]
    parsed = {rel: _parse(repo, rel) for rel in sources}  # a tree, or why the file was not read
    trees = [t for t in parsed.values() if isinstance(t, ast.AST)]
    problems += _shadowing(sources, {name.split(".")[0] for t in trees for name, level in _imports(t) if not level})
    for rel, tree in parsed.items():
        problems += _import_problems(repo, rel, tree, target) if isinstance(tree, ast.AST) else [tree]
    return problems


def required_imports(repo: Path, target: TargetConfig) -> dict[str, str]:
    """The installed modules the evaluator files in checkout `repo` import when they load: module ->
    the first file importing it, e.g. `{"safetensors.numpy": "eval/evaluate.py"}` for
    `from safetensors.numpy import load_file`. Only module-level statements count (an import in a
    function may never run), absolute ones, and none in a `try` that catches ImportError (an
    optional import); a repository module is `evaluator_problems`' concern, not an installed one.
    Files that do not parse are left out (`evaluator_problems` names them)."""
    return module_imports(repo, target.holdout.files)


def module_imports(repo: Path, files: list[str]) -> dict[str, str]:
    """`required_imports` of the Python files `files` names in checkout `repo` (the train script's
    for `senpai validate`): installed module -> the first file importing it at module level."""
    found: dict[str, str] = {}
    for rel in list(_python_files(repo, files))[:MAX_FILES]:
        tree = _parse(repo, rel)
        if not isinstance(tree, ast.Module):
            continue
        for name in _loaded(tree.body):
            if not _repo_modules(repo, rel, name, 0):
                found.setdefault(name, rel)
    return found


def _loaded(body: list[ast.stmt]) -> Iterator[str]:
    """Absolute module names that `body` imports when it runs, outside functions and optional `try` blocks."""
    for node in body:
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module
        elif isinstance(node, ast.Try | ast.TryStar):
            optional = any(_catches_import_error(h.type) for h in node.handlers)
            for part in ([] if optional else [node.body]) + [h.body for h in node.handlers] + [node.orelse, node.finalbody]:
                yield from _loaded(part)
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for field in ("body", "orelse", "finalbody"):
                part = getattr(node, field, None)
                if isinstance(part, list):
                    yield from _loaded([n for n in part if isinstance(n, ast.stmt)])
            for case in getattr(node, "cases", []):  # match
                yield from _loaded(case.body)


def _catches_import_error(kind: ast.expr | None) -> bool:
    """Does an `except kind:` catch an ImportError (bare, or naming it, ModuleNotFoundError or Exception)?"""
    names = kind.elts if isinstance(kind, ast.Tuple) else [kind]
    return any(n is None or _dynamic_name(n) in _IMPORT_ERRORS for n in names)


def _shadowing(sources: list[str], imported: set[str]) -> list[str]:
    """One problem per evaluator module that would shadow a standard-library module, or an
    installed module that an evaluator file imports (the score step runs this interpreter, so
    what is installed here is what the evaluator would get; a name nothing imports shadows nothing
    a target author chose, so an `evaluate.py` beside an installed `evaluate` package is fine).

    `sources` are the laid-out `.py` files. A directory holding one (other than a package) is where
    an evaluator script runs from, and the script puts it first on `sys.path`; each `.py` file and
    package (a directory with `__init__.py`) directly in it is then a top-level module.
    """
    py = [PurePosixPath(rel) for rel in sources]
    packages = {p.parent for p in py if p.name == "__init__.py"}
    script_dirs = {p.parent for p in py} - packages
    modules = [(p.as_posix(), p.stem) for p in py if p.parent in script_dirs]
    modules += sorted((f"{d.as_posix()}/", d.name) for d in packages if d.parent in script_dirs)
    # the scan of installed distributions (seconds) only matters for a module named like one the evaluator imports
    installed = _installed() if any(name in imported for _, name in modules) else {}
    problems = []
    for path, name in modules:
        if name in sys.stdlib_module_names:
            what = f"the standard-library module {name!r}"
        elif name in installed and name in imported:
            what = f"the installed module {name!r} (of {', '.join(sorted(set(installed[name])))})"
        else:
            continue
        problems.append(f"holdout.files: {path} would shadow {what} once the evaluator puts its directory on sys.path; rename it")
    return problems


@functools.cache
def _installed() -> dict[str, list[str]]:
    """Top-level module -> distributions installed here; read once a process (a scan of every
    distribution's metadata takes seconds in a large environment)."""
    return importlib.metadata.packages_distributions()


def _python_files(repo: Path, files: list[str]) -> Iterator[str]:
    """Repo-relative paths of the `.py` files that `files` names (directories are walked)."""
    for f in files:
        path = repo / f
        if path.is_file() and path.suffix == ".py":
            yield f
        elif path.is_dir():
            yield from sorted(p.relative_to(repo).as_posix() for p in path.rglob("*.py") if p.is_file())


def _parse(repo: Path, rel: str) -> ast.AST | str:
    """The syntax tree of evaluator file `rel`, or the problem sentence saying why it was not read."""
    path = repo / rel
    if path.stat().st_size > MAX_FILE_BYTES:
        return f"{rel}: larger than {MAX_FILE_BYTES} bytes, not read; an evaluator is a small script"
    try:
        return ast.parse(path.read_bytes(), filename=rel)
    except (SyntaxError, ValueError, RecursionError) as e:
        return f"{rel}: cannot be parsed as Python ({type(e).__name__}: {str(e)[:200]})"


def _import_problems(repo: Path, rel: str, tree: ast.AST, target: TargetConfig) -> list[str]:
    """One problem per repository module that `tree` (evaluator file `rel`) may not import."""
    problems = []
    for name, level in _imports(tree):
        for module in _repo_modules(repo, rel, name, level):
            if why := _import_problem(module, target):
                problems.append(f"{rel}: imports {'.' * level + name!r}, and {why}")
    return problems


def _import_problem(module: str, target: TargetConfig) -> str | None:
    """Why the evaluator may not import repo path `module` (the end of a sentence), or None if it may:
    it must be protected (a candidate cannot edit it) and within an entry of holdout.files (the
    score step lays out nothing else)."""
    path = module.rstrip("/")
    listed = any(path == f.rstrip("/") or path.startswith(f.rstrip("/") + "/") for f in target.holdout.files)
    if target.is_protected(path):
        return None if listed else f"{module} is protected but not listed in holdout.files; add it there"
    if listed:
        return f"{module} is listed in holdout.files but not protected; add it to `protected`"
    return (
        f"{module} is neither protected nor listed in holdout.files, so a candidate can edit it and the score step "
        "does not lay it out; protect and list it, or rename it"
    )


def _imports(tree: ast.AST) -> Iterator[tuple[str, int]]:
    """(dotted module name, relative level) of every import statement and literal dynamic import."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((alias.name, 0) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.module:
                yield node.module, node.level
            elif node.level:  # `from . import x`: x is a sibling module
                yield from ((alias.name, node.level) for alias in node.names)
        elif isinstance(node, ast.Call) and _dynamic_name(node.func) in _DYNAMIC and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                yield arg.value.lstrip("."), len(arg.value) - len(arg.value.lstrip("."))


def _dynamic_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def _repo_modules(repo: Path, rel: str, name: str, level: int) -> list[str]:
    """Repo-relative paths (`x.py` or `x/`) that module `name` (relative `level`) would load from `rel`."""
    top, parents = name.split(".")[0], PurePosixPath(rel).parents
    if level > len(parents):
        return []  # above the repository root: no file of the repository
    roots = [parents[level - 1]] if level else [PurePosixPath("."), parents[0]]
    found = []
    for root in dict.fromkeys(roots):
        for candidate in (root / f"{top}.py", root / top):
            if top and (repo / candidate).exists():
                found.append(candidate.as_posix() + ("/" if (repo / candidate).is_dir() else ""))
    return found
