"""`senpai init [REPO]`: scaffold a senpai target (senpai.yaml, program.md, an evaluator) from an
existing training repository, check it as `senpai validate` does, and print what to run next."""

import shlex
import sys
from pathlib import Path

import click

from senpai.cli.confine import write_inside
from senpai.cli.quantities import QUANTITIES, guess, unclear
from senpai.cli.scaffold import Answers, Detected, advice, detect, guess_direction, render
from senpai.cli.validate import check_target
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
@click.option("--force", is_flag=True, help="Overwrite senpai.yaml, program.md and eval/evaluate.py if they exist.")
def init(repo: str, train_cmd, metric, direction, params_file, holdout_metric, no_input: bool, force: bool) -> None:
    """Scaffold senpai.yaml, program.md and eval/evaluate.py in REPO from what its train script does.

    Detects the train command, the metric, the params file and what the evaluator prints on the
    holdout (the same kind of quantity as the metric, e.g. a log loss for a classifier's loss: its
    direction goes into holdout.direction), asks to confirm each (or takes the flags), writes the
    files, validates them as `senpai validate` does (running the evaluator on a sample), and says
    what the script must add to fit the target contract.

    \b
    Example:
      senpai init ./my-project --train-cmd "python train.py" --metric val_accuracy --yes

    Writes only inside REPO. Exits 2 before writing anything if a path it would write, or a folder
    above it, is a symlink, if the params file is outside REPO, if a file exists (without --force),
    or if something is missing with --yes (each missing answer is listed with its flag); exits 2
    after writing if the written target does not validate.
    """
    root = Path(repo)
    found = detect(root)
    answers = _ask(found, train_cmd, metric, direction, params_file, holdout_metric, no_input)
    files = render(root, answers, found)
    write_inside(root, files, force)
    click.echo("\n".join(f"wrote {root / rel}" for rel in files))
    check_target(root)
    _explain(root, answers, found)


def _ask(found: Detected, train_cmd, metric, direction, params_file, quantity, no_input: bool) -> Answers:
    """The answers: each flag, else a prompt defaulting to what was detected (no prompt with `no_input`).
    Raises ConfigError listing every answer that is still missing with `no_input`."""
    default_params = found.params_file or ("params.json" if found.argparse_defaults else None)
    if no_input:
        train_cmd, metric, params_file = train_cmd or found.train_cmd, metric or found.metric, params_file or default_params
        quantity = quantity or (guess(metric, found.model) if metric else None)
        missing = []
        if not train_cmd:
            missing.append("the train command (--train-cmd): no train.py, main.py, run.py, Makefile `train` or pyproject script")
        if not metric:
            missing.append("the metric (--metric): the script reports no metric init recognises")
        if not params_file:
            missing.append("the params file (--params-file): no params/hparams/config.{json,yaml,toml}, no argparse defaults")
        if metric and not quantity:
            missing.append(f"the holdout metric (--holdout-metric): {unclear(metric, found.model)}")
        if missing:
            raise ConfigError("senpai init --yes cannot guess:\n" + "\n".join(f"  - {m}" for m in missing))
        return Answers(train_cmd, metric, direction or guess_direction(metric), params_file, quantity)
    train_cmd = train_cmd or click.prompt("Train command", default=found.train_cmd)
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
    return Answers(train_cmd, metric, direction, params_file, quantity)


def _explain(root: Path, answers: Answers, found: Detected) -> None:
    """Print what the script must add to fit the contract, then the next commands (absolute, quoted)."""
    todo = advice(answers, found)
    if todo:
        click.echo(f"\nTo fit the target contract (docs/target-contract.md), {found.script or 'the train script'} needs:")
    for i, a in enumerate(todo, start=1):
        click.echo(f"\n{i}. {a.why}:\n\n" + "\n".join(f"    {line}" for line in a.snippet.splitlines()))
    senpai = Path(sys.executable).with_name("senpai")  # the venv's, when senpai is not on PATH
    command = shlex.quote(str(senpai)) if senpai.exists() else "senpai"
    target = root.resolve()
    holdout = target.parent / f"{found.name}-holdout"
    click.echo(
        "\nNext: fill in the TODOs of program.md, review the search space in senpai.yaml, then\n\n"
        f"    {command} validate {shlex.quote(str(target))}\n"
        f"    mkdir -p {shlex.quote(str(holdout))}   # put holdout.csv there: a header, the features, the label last\n"
        f"    {command} demo --example {shlex.quote(str(target))} --holdout {shlex.quote(str(holdout))} --experiments 2"
    )
