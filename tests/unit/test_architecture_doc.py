"""docs/architecture.md answers to the code: every repository path it names exists, every
definition its "Where to find it" table names is defined in the module named before it, each
port's section names every method and attribute of its Protocol, every count it gives (the
import contracts, a port's methods and attributes) is the count in the code, the blocks table
lists every record kind, and the errors section names every error with its exit status."""

import ast
import functools
import re
import tomllib
from pathlib import Path

import pytest

from senpai import errors
from senpai.fleet.base import Fleet
from senpai.forge.admin import ForgeAdmin
from senpai.forge.port import Forge
from senpai.forge.read import ForgeReader
from senpai.forge.write import ForgeWriter
from senpai.ledger.blocks import KINDS
from senpai.tracker.base import Tracker

ROOT = Path(__file__).parents[2]
DOC = (ROOT / "docs" / "architecture.md").read_text()
TOP = ("senpai", "tests", "bench", "docs", "charts", "examples", "advisor", "student", "wrapper", "skills", "scripts")
PATH = re.compile(rf"(?<![\w/.~-])(?:{'|'.join(TOP)})/[\w./*-]*")  # not inside /opt/senpai/src
WORDS = dict(zip("one two three four five six seven eight nine ten eleven twelve".split(), range(1, 13), strict=True))
COUNT = rf"(\d+|{'|'.join(WORDS)})"  # a count: "27", "five"
PORTS = {"Forge": Forge, "Tracker": Tracker, "Fleet": Fleet}
FORGE_PARTS = {"ForgeReader": ForgeReader, "ForgeWriter": ForgeWriter, "ForgeAdmin": ForgeAdmin}
REPOSITORIES = {"senpai/digits"}  # forge repositories (owner/name) the page names, not paths


def spans(text: str) -> list[str]:
    """The `code spans` of `text`, in order."""
    return re.findall(r"`([^`\n]+)`", text)


def section(heading: str) -> str:
    """The text under the one heading line `heading` (e.g. "### Fleet (`senpai/fleet/base.py`)"),
    up to the next heading of the same or a higher level."""
    lines = DOC.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == heading]
    assert len(starts) == 1, f"expected one heading {heading!r} in docs/architecture.md, found {len(starts)}"
    level = heading.index(" ")
    body = []
    for line in lines[starts[0] + 1 :]:
        m = re.match(r"(#+) ", line)
        if m and len(m.group(1)) <= level:
            break
        body.append(line)
    return "\n".join(body)


def number(word: str) -> int:
    return int(word) if word.isdigit() else WORDS[word.lower()]


def members(port: type, inherited: bool = True) -> tuple[set[str], set[str]]:
    """A Protocol's public methods and its attributes (annotations), with those of the parts it is
    made of (`Forge` of `ForgeReader`, `ForgeWriter` and `ForgeAdmin`) unless not `inherited`."""
    parts = [c for c in port.__mro__ if c.__module__.startswith("senpai.")] if inherited else [port]
    methods = {k for c in parts for k, v in vars(c).items() if not k.startswith("_") and callable(v)}
    return methods, {k for c in parts for k in vars(c).get("__annotations__", {})}


@functools.cache
def defined(module: str) -> frozenset[str]:
    """Every name a Python file defines, at any depth: functions, classes, assigned names."""
    names = set()
    for node in ast.walk(ast.parse((ROOT / module).read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return frozenset(names)


def test_every_repository_path_the_page_names_exists():
    missing = []
    for span in spans(DOC):
        for path in PATH.findall(span):
            path = path.rstrip("./")
            if path in REPOSITORIES:
                continue
            # `wrapper/rounds.py` under a heading of the package's own: senpai/wrapper/rounds.py
            if not any(list(top.glob(path)) if "*" in path else (top / path).exists() for top in (ROOT, ROOT / "senpai")):
                missing.append(path)
    assert not missing, f"docs/architecture.md names paths that do not exist: {sorted(set(missing))}"


def where_rows() -> list[tuple[str, list[str]]]:
    table = section("## Where to find it").splitlines()
    rows = [line for line in table if line.startswith("| ") and not line.startswith(("| question", "| ---"))]
    assert len(rows) > 10, "the 'Where to find it' table is gone"
    return [(row.split("|")[1].strip(), spans(row)) for row in rows]


@pytest.mark.parametrize(("question", "names"), where_rows(), ids=[q for q, _ in where_rows()])
def test_each_definition_in_where_to_find_it_is_in_the_module_named_before_it(question, names):
    module, wrong = None, []
    for span in names:
        if PATH.fullmatch(span):
            module = span if span.endswith(".py") else None
            continue
        name = re.fullmatch(r"([A-Za-z_]\w*|[A-Z]\w*\.\w+)(\(.*\))?", span)  # `check_merge`, `plan(World)`, `Status.markdown`
        if module is None or name is None:
            continue  # a command (`senpai ledger`), a setting (`forge.trusted`)
        if not all(part in defined(module) for part in name.group(1).split(".")):
            wrong.append(f"{span} in {module}")
    assert not wrong, f"named in 'Where to find it' but not defined there: {wrong}"


@pytest.mark.parametrize("name", sorted(PORTS))
def test_each_ports_section_names_every_method_and_attribute_and_counts_them(name):
    text = section(next(line.strip() for line in DOC.splitlines() if line.startswith(f"### {name} (`")))
    methods, attributes = members(PORTS[name])
    named = {re.match(r"\w+", s).group(0) for s in spans(text) if re.match(r"\w+", s)}
    assert not (methods | attributes) - named, f"the {name} section does not name {sorted((methods | attributes) - named)}"
    counts = re.findall(rf"(?:has|have) {COUNT} (methods|attributes)", text, re.I)
    assert counts or name == "Tracker", f"the {name} section gives no count"
    for word, what in counts:
        assert number(word) == len(methods if what == "methods" else attributes), f"{name}: '{word} {what}'"


def test_the_deviations_count_the_forge_ports_methods_and_attributes():
    bullet = next(b for b in section("### Differs from the design").split("\n- ") if b.startswith("**The forge port"))
    methods, attributes = members(Forge)
    assert re.search(rf"\b{len(methods)} methods\b", bullet) and re.search(rf"\b{len(attributes)} attributes\b", bullet), bullet


def test_the_import_contracts_are_counted_as_pyproject_declares_them():
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (word,) = re.findall(rf"{COUNT} import-linter contracts", DOC, re.I)
    assert number(word) == len(contracts)
    layers = section("## Layers")
    listed = re.findall(r"^\d+\. \*\*", layers, re.M)
    assert len(listed) == len(contracts), f"'## Layers' lists {len(listed)} contracts, pyproject declares {len(contracts)}"


def test_the_forge_sections_parts_are_counted_as_the_code_declares_them():
    text = section(next(line.strip() for line in DOC.splitlines() if line.startswith("### Forge (`")))
    parts = re.findall(rf"`(Forge[A-Z]\w+)`\s+\({COUNT} methods", text, re.I)
    assert {name for name, _ in parts} == set(FORGE_PARTS), parts
    for name, word in parts:
        methods, _ = members(FORGE_PARTS[name], inherited=False)
        assert number(word) == len(methods), f"`{name}` ({word} methods): the code has {len(methods)}"


def test_the_blocks_table_lists_every_record_kind():
    listed = re.findall(r"^\| `senpai-([a-z]+)` \|", section("### Blocks"), re.M)
    assert sorted(listed) == sorted(KINDS), f"'### Blocks' lists {sorted(listed)}, blocks.KINDS has {sorted(KINDS)}"


def test_the_errors_section_names_every_error_and_its_exit_status():
    text = section("## Errors")
    tree = {n: c for n, c in vars(errors).items() if isinstance(c, type) and issubclass(c, errors.SenpaiError)}
    assert not set(tree) - set(spans(text)), f"'## Errors' does not name {sorted(set(tree) - set(spans(text)))}"
    stated = re.findall(r"`(\w+)` (\d)\b", text)
    assert {n for n, _ in stated} == {n for n, c in tree.items() if "exit_code" in vars(c)}, stated
    for name, code in stated:
        assert tree[name].exit_code == int(code), f"`{name}` exits {tree[name].exit_code}, the page says {code}"
