"""README.md answers to the code: its command table, config references, exit statuses and slash
commands are checked against the click tree, the pydantic models, `main()` and the command parser."""

import re
import typing
from pathlib import Path

import click
import pytest
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from senpai import errors
from senpai.cli.main import cli, main
from senpai.config.harness import HarnessConfig, OpenHandsRuntimeSettings, SearchRuntimeSettings
from senpai.config.target import TargetConfig
from senpai.ledger import commands
from senpai.ledger.blocks import SteerCommand

README = (Path(__file__).parents[2] / "README.md").read_text()


def table(header: str) -> list[list[str]]:
    """The rows of the one README table whose header line is `header`, as cells (`\\|` unescaped)."""
    lines = README.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == header]
    assert len(starts) == 1, f"expected one table headed {header!r} in README.md, found {len(starts)}"
    rows = []
    for line in lines[starts[0] + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", line.strip()[1:-1])])
    return rows


def code(text: str) -> list[str]:
    """The `code spans` of a cell, in order."""
    return re.findall(r"`([^`]+)`", text)


def options(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])--?[a-z][a-z0-9-]*", text))


def opts(command: click.Command) -> set[str]:
    return {o for p in command.params if isinstance(p, click.Option) for o in (*p.opts, *p.secondary_opts)}


# --- commands ---------------------------------------------------------------------------------


def leaves(group: click.Group, path: tuple[str, ...] = ("senpai",)) -> dict[str, click.Command]:
    """Every runnable command under `group` by its full name, e.g. "senpai job verify"."""
    ctx, out = click.Context(group), {}
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            out |= leaves(command, (*path, name))
        else:
            out[" ".join((*path, name))] = command
    return out


def documented_commands() -> dict[str, str]:
    """README command table: full command name -> its usage cell (name, options, metavars)."""
    out = {}
    for usage, _ in table("| command | what it does |"):
        (text,) = code(usage)
        name = " ".join(re.match(r"senpai(?: [a-z][a-z-]*)*", text).group(0).split())
        assert name not in out, f"{name} is listed twice"
        out[name] = text
    return out


def test_every_command_is_in_the_command_table_and_every_listed_command_exists():
    assert set(documented_commands()) == set(leaves(cli))


@pytest.mark.parametrize("name", sorted(leaves(cli)))
def test_the_command_table_shows_exactly_the_options_of_each_command(name):
    usage = documented_commands()[name]
    assert options(usage) == opts(leaves(cli)[name]), usage


def test_the_global_options_line_shows_exactly_the_options_of_senpai():
    (line,) = [line.split(". ")[0] for line in README.splitlines() if line.startswith("Global options:")]
    shown = options(" ".join(code(line)))
    assert shown <= opts(cli), line
    assert all(set(p.opts + p.secondary_opts) & shown for p in cli.params if isinstance(p, click.Option)), line


# --- config references ------------------------------------------------------------------------


def model_in(annotation: object) -> type[BaseModel] | None:
    """The first pydantic model in a field's type (through Optional, list, Annotated and unions)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next(filter(None, map(model_in, typing.get_args(annotation))), None)


def field(model: type[BaseModel], dotted: str) -> FieldInfo:
    """The field `dotted` names under `model` ("fleet.dir": the local fleet's `dir`)."""
    for name in dotted.split("."):
        assert model is not None and name in model.model_fields, f"{dotted}: no field {name!r}"
        info = model.model_fields[name]
        model = model_in(info.annotation)
    return info


def shown_default(info: FieldInfo) -> str:
    """A field's default as the harness table writes it."""
    if info.is_required():
        return "(required"
    default = info.get_default(call_default_factory=True)
    if default is None:
        return "none"
    if isinstance(default, list):
        return ", ".join(map(str, default))
    if isinstance(default, SearchRuntimeSettings | OpenHandsRuntimeSettings):
        return default.kind  # written in its shorthand, `advisor: search`
    return str(default)


def harness_rows() -> list[tuple[str, str]]:
    """(dotted field, its documented default; "" where none is shown) per name of the harness table."""
    out = []
    for names, defaults, _ in table("| field | default | meaning |"):
        fields = [code(part)[0] for part in names.split(" / ")]
        shown = [part.strip("`") for part in defaults.split(" / ")] if defaults else [""] * len(fields)
        assert len(shown) == len(fields), f"{names}: {len(fields)} fields but defaults {defaults!r}"
        out += zip(fields, shown, strict=True)
    return out


@pytest.mark.parametrize(("dotted", "default"), harness_rows())
def test_every_documented_harness_field_exists_with_its_default(dotted, default):
    info = field(HarnessConfig, dotted)
    if default:
        assert default.startswith(shown_default(info)), f"{dotted}: README says {default!r}, the code {shown_default(info)!r}"


def test_every_harness_field_is_documented():
    documented = {dotted for dotted, _ in harness_rows()}
    tops = {d.split(".")[0] for d in documented}
    assert set(HarnessConfig.model_fields) <= tops, set(HarnessConfig.model_fields) - tops
    # a section documented field by field (forge.repo, ...) documents all of its fields
    for top in {d.split(".")[0] for d in documented if "." in d}:
        inner = model_in(HarnessConfig.model_fields[top].annotation)
        # ...itself, or each of its own fields (runtime.diversity.window, ...)
        missing = {
            f"{top}.{n}"
            for n in inner.model_fields
            if not any(d == f"{top}.{n}" or d.startswith(f"{top}.{n}.") for d in documented)
        }
        assert not missing, missing


def test_the_target_table_documents_exactly_the_fields_of_senpai_yaml():
    rows = {code(names)[0]: meaning for names, meaning in table("| field | meaning |")}
    assert set(rows) == set(TargetConfig.model_fields)
    for name, meaning in rows.items():
        inner = model_in(TargetConfig.model_fields[name].annotation)
        if inner is not None:  # a section names each of its own fields
            assert set(inner.model_fields) <= set(code(meaning)), f"{name}: {set(inner.model_fields) - set(code(meaning))}"


# --- exit statuses ----------------------------------------------------------------------------


def documented_errors() -> dict[str, int]:
    """Error class named in the exit-status table -> the status the table gives it."""
    return {
        name: int(status)
        for status, meaning in table("| status | meaning |")
        for name in code(meaning)
        if isinstance(getattr(errors, name, None), type)
    }


def test_every_exit_status_of_the_error_tree_is_documented():
    own = {cls.__name__ for cls in vars(errors).values() if isinstance(cls, type) and "exit_code" in vars(cls)}
    missing = own - {"SenpaiError"} - set(documented_errors())  # SenpaiError's 1 is for the uncategorised
    assert not missing, missing


@pytest.mark.parametrize(("name", "status"), sorted(documented_errors().items()))
def test_senpai_exits_with_the_documented_status_for_each_error(name, status, monkeypatch, capsys):
    @click.command("raise-documented-error")
    def boom() -> None:
        raise getattr(errors, name)("documented")

    cli.add_command(boom)
    monkeypatch.setattr("sys.argv", ["senpai", "raise-documented-error"])
    try:
        with pytest.raises(SystemExit) as exc:
            main()
    finally:
        cli.commands.pop("raise-documented-error")
    assert exc.value.code == status and "documented" in capsys.readouterr().err


# --- slash commands ---------------------------------------------------------------------------


def test_the_slash_command_table_and_syntax_reply_name_exactly_the_verbs_the_parser_accepts():
    recorded = set(typing.get_args(SteerCommand.model_fields["verb"].annotation))  # `budget`: the record's name of `caps`
    verbs = {commands.RENAMED.get(v, v) for v in recorded} | set(commands.QUERIES)
    documented = {commands.parse_line(code(line)[0])[0] for line, _, _ in table("| command | where | what it does |")}
    replied = {commands.parse_line(line[3:].split("`")[0])[0] for line in commands.SYNTAX.splitlines()[1:]}
    assert documented == verbs == replied
