"""`senpai init [REPO]`: scaffold a senpai target (senpai.yaml, program.md, an evaluator) from an
existing training repository, check it as `senpai validate` does, and print what to run next."""

import ast
import os
import shlex
import sys
from dataclasses import replace
from pathlib import Path

import click
from pydantic import ValidationError

from senpai.cli.confine import inside, write_inside
from senpai.cli.interpreter import score_python
from senpai.cli.quantities import QUANTITIES, guess, unclear
from senpai.cli.rerun import plan, previous
from senpai.cli.run_length import warnings
from senpai.cli.scaffold import (
    EVALUATOR,
    MAX_SOURCE_BYTES,
    Answers,
    Detected,
    advice,
    detect,
    guess_direction,
    params_of,
    render,
    render_skipped,
)
from senpai.cli.validate import check_target
from senpai.config import safe_yaml
from senpai.config.load import read_bounded
from senpai.config.target import CONFIG_FILE, TargetConfig
from senpai.errors import ConfigError


@click.command()
@click.argument("repo", type=click.Path(exists=True, file_okay=False), default=".")
@click.option("--train-cmd", help="Shell command that trains and reports the metric [detected].")
@click.option("--metric", help="Name of the primary (validation) metric the command reports [detected].")
@click.option("--direction", type=click.Choice(["maximize", "minimize"]), help="Which way the metric is better [from its name].")
@click.option("--params-file", help="The params file the command reads [detected; params.json from argparse defaults].")
@click.option(
    "--holdout-metric",
    type=click.Choice(list(QUANTITIES)),
    help="What the evaluator prints on the holdout, of the same kind as the metric [from the metric and the model].",
)
@click.option("-y", "--yes", "--no-input", "no_input", is_flag=True, help="Ask nothing: the flags, else the detected defaults.")
@click.option(
    "--force",
    is_flag=True,
    help="Replace the files whose edits init cannot merge with its changes, after their diff (asked; --yes: yes).",
)
def init(repo: str, train_cmd, metric, direction, params_file, holdout_metric, no_input: bool, force: bool) -> None:
    """Scaffold senpai.yaml, program.md and eval/evaluate.py in REPO from what its train script does.

    Detects the train command, the metric, the params file and what the evaluator prints on the
    holdout (the same kind of quantity as the metric, e.g. a log loss for a classifier's loss: its
    direction goes into holdout.direction), asks to confirm each (or takes the flags), writes the
    files, says what the script must add to fit the target contract, and validates them as
    `senpai validate` does (running the evaluator on a sample). A train command that starts with
    another Python (`/home/me/venv/bin/python lm.py`) gets it as holdout.python, so the evaluator
    runs where the target's packages are; a flag like `--max-steps -1` that the command leaves at
    "no limit", and a metric printed only every N steps, are named.

    \b
    Example:
      senpai init ./my-project --train-cmd "python train.py" --metric val_accuracy --yes

    A re-run reuses the answers of the senpai.yaml there (holdout.python too; a flag changes one)
    and keeps your edits: a file only you changed is kept, one still as init wrote it is replaced,
    and one you both changed, in lines apart, is merged (its diff shown). --force replaces the
    others after their diff, asking first (--yes: replaced, except a senpai.yaml that would lose a
    field you set, which is kept).

    Writes only inside REPO. Exits 2 before writing anything if a path it would write, or a folder
    above it, is a symlink, if the params file is outside REPO, if your edits to a file do not merge
    with init's changes (without --force), if there is nothing to search, or if something is missing
    with --yes (each missing answer is listed with its flag); exits 2 after writing if the written
    target does not validate.
    """
    root = Path(repo)
    before_answers = previous(root)
    if before_answers:
        said = ", ".join(f"{k} {v!r}" for k, v in before_answers.items())
        click.echo(f"Reusing the answers in {root / CONFIG_FILE} ({said}); a flag changes one.")
    flags = dict(train_cmd=train_cmd, metric=metric, direction=direction, params_file=params_file, quantity=holdout_metric)
    given = before_answers | {k: v for k, v in flags.items() if v}
    answers, found = _ask(root, given, no_input)
    answers = replace(answers, python=score_python(before_answers, answers.train_cmd))
    files = render(root, answers, found)
    _loads(files[CONFIG_FILE])
    write, said = plan(root, files, _rendered_before(root, before_answers), force, _confirm(no_input))
    write_inside(root, write, force=any(os.path.lexists(root / rel) for rel in write))  # `plan` chose what to replace
    click.echo("\n".join(said.values()))
    skipped = render_skipped(root, answers, found)
    if skipped:
        click.echo("not searched (see senpai.yaml): " + ", ".join(f"{k} ({why})" for k, why in skipped.items()))
    params = params_of(root, answers, found)[0]
    every = found.every(answers.metric)
    for line in warnings(answers.train_cmd, found.script, found.endless, params, answers.params_file, every, answers.metric):
        click.echo(line)
    _advise(answers, found)
    try:
        check_target(root)
    except ConfigError as e:
        raise ConfigError(
            f"{e}\nFix that, then run `senpai init` again: it reuses the answers in {CONFIG_FILE} and keeps your edits"
        ) from None
    _next(root, found)


def _ask(root: Path, given: dict[str, str], no_input: bool) -> tuple[Answers, Detected]:
    """The answers and what was detected for them: each of `given` (flags, then a senpai.yaml init
    wrote before), else a prompt defaulting to what was detected (no prompt with `no_input`).
    The script read is the one the train command runs. Raises ConfigError listing every answer
    that is still missing with `no_input`."""
    found = detect(root, given.get("train_cmd"))
    default_params = found.params_file or ("params.json" if found.argparse_defaults else None)
    train_cmd, metric, params_file, quantity = (given.get(k) for k in ("train_cmd", "metric", "params_file", "quantity"))
    direction = given.get("direction")
    tied = ", ".join([found.script or "", *found.others])
    if no_input:
        metric, params_file = metric or found.metric, params_file or default_params
        quantity = quantity or (guess(metric, found.model) if metric else None)
        missing = []
        if not train_cmd and found.others:
            missing.append(f"the train command (--train-cmd): {tied} all look like training scripts; name the one that trains")
        elif not (train_cmd or found.train_cmd):
            missing.append(
                "the train command (--train-cmd): no script with a __main__ block that trains, "
                "no Makefile `train` target and no pyproject train script"
            )
        if not metric:
            missing.append(
                "the metric (--metric): the script reports no metric init recognises "
                "(`name: value` or `name=value` printed, JSON printed, wandb.log)"
            )
        if not params_file:
            missing.append("the params file (--params-file): no params/hparams/config.{json,yaml,toml}, no argparse defaults")
        if metric and not quantity:
            missing.append(f"the holdout metric (--holdout-metric): {unclear(metric, found.model)}")
        if missing:
            raise ConfigError("senpai init --yes cannot guess:\n" + "\n".join(f"  - {m}" for m in missing))
        return Answers(train_cmd or found.train_cmd, metric, direction or guess_direction(metric), params_file, quantity), found
    if not train_cmd:
        if found.others:
            click.echo(f"Several scripts look like training: {tied}.")
        train_cmd = click.prompt("Train command", default=found.train_cmd)
        if train_cmd != found.train_cmd:  # read the script the answer runs, not the one detected
            found = detect(root, train_cmd)
            default_params = found.params_file or ("params.json" if found.argparse_defaults else None)
    metric = metric or click.prompt("Primary metric (a validation metric)", default=found.metric)
    direction = direction or click.prompt(
        "Direction", type=click.Choice(["maximize", "minimize"]), default=guess_direction(metric)
    )
    params_file = params_file or click.prompt("Params file", default=default_params)
    if not quantity:
        guessed = guess(metric, found.model)
        if not guessed:
            click.echo(f"The evaluator prints the same kind of quantity as {metric}, but {unclear(metric, found.model)}.")
        quantity = click.prompt("Holdout metric the evaluator prints", type=click.Choice(list(QUANTITIES)), default=guessed)
    return Answers(train_cmd, metric, direction, params_file, quantity), found


def _rendered_before(root: Path, before: dict[str, str]) -> dict[str, str]:
    """What init wrote last time: the earlier answers rendered again ({} if they are incomplete or no longer render)."""
    if not {"train_cmd", "metric", "direction", "params_file", "quantity"} <= set(before):
        return {}
    try:
        return render(root, Answers(**before), detect(root, before["train_cmd"]))
    except ConfigError:
        return {}


def _confirm(no_input: bool):
    """Whether to replace a file the user changed, after its diff (`lost`: the senpai.yaml fields of
    the user's it drops): asked, or with --yes (which --force asked for) yes unless it drops any."""
    if no_input:
        return lambda rel, lost: not lost
    return lambda rel, lost: click.confirm(f"Replace {rel}?", default=False)


def _loads(text: str) -> None:
    """Raise ConfigError, in one sentence naming the answers to fix, if senpai.yaml `text` would not load."""
    try:
        TargetConfig.model_validate(safe_yaml.load(text))
    except ValidationError as e:
        fields = sorted({".".join(str(p) for p in err["loc"][:2]) for err in e.errors()})
        raise ConfigError(
            f"senpai init would write a senpai.yaml senpai cannot load ({', '.join(fields)} are not valid); "
            "nothing was written: check the answers behind them (--train-cmd, --metric, --params-file, or holdout.python "
            "in the senpai.yaml there) and run init again"
        ) from None


def _advise(answers: Answers, found: Detected) -> None:
    """Print what the script must add to fit the contract (before the check: a failed one still shows it)."""
    todo = advice(answers, found)
    if todo:
        click.echo(f"\nTo fit the target contract (docs/target-contract.md), {found.script or 'the train script'} needs:")
    for i, a in enumerate(todo, start=1):
        click.echo(f"\n{i}. {a.why}:\n\n" + "\n".join(f"    {line}" for line in a.snippet.splitlines()))


def _next(root: Path, found: Detected) -> None:
    """Print the next commands (absolute, quoted), naming the file the evaluator reads from the holdout folder."""
    senpai = Path(sys.executable).with_name("senpai")  # the venv's, when senpai is not on PATH
    command = shlex.quote(str(senpai)) if senpai.exists() else "senpai"
    target = root.resolve()
    holdout = target.parent / f"{found.name}-holdout"
    click.echo(
        "\nNext: fill in the TODOs of program.md, review the search space in senpai.yaml, then\n\n"
        f"    {command} validate {shlex.quote(str(target))}\n"
        f"    mkdir -p {shlex.quote(str(holdout))}   # {_holdout_files(root)}\n"
        f"    {command} demo --example {shlex.quote(str(target))} --holdout {shlex.quote(str(holdout))} --experiments 2"
    )


def _holdout_files(root: Path) -> str:
    """What to put in the holdout folder: the file the evaluator there reads (its module-level
    `HOLDOUT = "..."`, as init writes it; a generated one reads holdout.csv), else what it reads."""
    try:
        tree = ast.parse(read_bounded(inside(root, EVALUATOR), MAX_SOURCE_BYTES))
    except (ConfigError, OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    for node in tree.body if tree else []:
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["HOLDOUT"]:
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                return f"put {node.value.value} there, as {EVALUATOR} reads it (its docstring says the format)"
    return f"put there what {EVALUATOR} reads from --holdout"
