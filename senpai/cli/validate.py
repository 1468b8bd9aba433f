"""`senpai validate DIR`: check a target repository's senpai.yaml before pointing senpai at it."""

import os
import shlex
import sys
import tempfile
from pathlib import Path

import click

from senpai.agents.params import params_format, read_params
from senpai.cli.scripts import script_of
from senpai.config.evaluator import evaluator_problems
from senpai.config.target import TargetConfig, budget_problems, direction_problems, load_target, scope_problems
from senpai.errors import ConfigError
from senpai.job.measure import run_command
from senpai.job.walls import bare_walls, train_program, train_python
from senpai.verifier.evaluate import python_problem
from senpai.verifier.imports import train_import_problems
from senpai.verifier.sample import sample_problems


@click.command()
@click.argument("repo", type=click.Path(exists=True, file_okay=False), default=".")
def validate(repo: str) -> None:
    """Validate REPO/senpai.yaml, its params file and its evaluator (holdout.files).

    Exits 2 naming the file, field and expectation if senpai.yaml or the params file is bad, if a
    non-empty scope does not match the params file, if an evaluator file is not protected, if the
    evaluator imports a repository file that is not protected and listed in holdout.files, if an
    evaluator module is named like a standard-library or installed module it would shadow, if
    the holdout metric's (or a guard's) name says the other direction than senpai.yaml judges it by,
    or if holdout.python is set, or the train command starts an interpreter named python by its
    absolute path, but it does not run here as Python 3 (or the train one reports a folder holding the
    home folder, which the wall hides, as its own). Then it imports each module the train script
    imports at module level under the interpreter the train step starts (the train command's own,
    else senpai's; with the command's leading `PYTHONPATH=...` and the train step's environment;
    not checked when another program, torchrun or `uv run`, starts the script), and warns (exit 0)
    naming each that fails; the script itself is not run. Then it
    imports each module the evaluator imports at module level under the score interpreter
    (holdout.python, else senpai's), as the score step starts it, and exits 2 naming each that
    fails; the evaluator itself is not run there.
    Then, with holdout.sample, it runs that (a tiny artifact and holdout), then holdout.command on
    them as the verifier's score step does, and exits 2 if either fails or if the evaluator does not
    print holdout.metric (and each guard) as a finite number; the train command is never run. It
    notes (exit 0) a train command whose program, named by its absolute path, the wall would hide
    from the train step (under /tmp or the home folder): granted there if it is a Python
    interpreter, as holdout.python is; else naming the wall.readable that grants it.

    \b
    Example:
      senpai validate examples/digits
    """
    root = Path(repo)
    if not (root / "senpai.yaml").exists():
        here = " (the current folder)" if repo == "." else ""
        raise ConfigError(
            f"no senpai.yaml in {root.resolve()}{here}: give the target repository's folder, e.g. "
            "`senpai validate examples/digits`, or write one (docs/target-contract.md)"
        )
    check_target(root)


def compute_rule(t: TargetConfig) -> str:
    """How the gate judges a candidate's compute, in a sentence."""
    c = t.holdout.compute
    if c.budget is not None:
        fit = f"; params.space.{c.param} fits it" if c.param else ""
        return f"{c.key} within a fixed budget of {c.budget:g} per training{fit}"
    figures = " and ".join([*(["training seconds"] if c.seconds else []), *([c.key] if c.key else [])])
    return f"{figures} at most {1 + c.tolerance:g} x the baseline's" if figures else "not compared"


def hidden_program(t: TargetConfig) -> str | None:
    """What the train step's wall does with the program the train command starts by its absolute
    path (`/tmp/venv/bin/python x.py`) where that wall would hide it (a fresh /tmp, the home folder
    hidden: the wall of `bare_walls`, with no harness config), in a sentence; None if it is not
    hidden, or if the command does not start with an absolute path. A Python interpreter
    (`walls.train_python`, which `check_target` has asked) is granted; any other program is not:
    the harness config's `wall.readable` may grant its folder. A note, not a refusal."""
    program = train_program(t.train)
    if program is None or not os.access(program, os.X_OK):
        return None
    with tempfile.TemporaryDirectory(prefix="senpai-validate-") as work:
        out = run_command(f"test -x {shlex.quote(program)}", Path(work), {}, 30, wall=bare_walls()([Path(work)], []))
    if out.returncode == 0:
        return None
    hidden = f"the train command starts {program}, which the wall would hide (each command gets a fresh /tmp and no home folder)"
    if train_python(t.train):
        return (
            f"{hidden}: senpai grants it to every step that runs the train command, as it grants holdout.python (its "
            "folders, prefixes and site-packages; a package installed editable from a hidden folder is not among them)"
        )
    folder = os.path.dirname(os.path.dirname(program)) or "/"
    return (
        f"{hidden}, and it is not a Python interpreter, which senpai would grant: every training would fail with exit "
        f"127. Grant its folder in the harness config (wall: {{readable: [{folder}]}}) or install it elsewhere"
    )


def train_problem(t: TargetConfig) -> str | None:
    """Why the interpreter the train command starts (`walls.train_python`) cannot run here, or cannot
    be granted (it reports a folder holding one the wall hides: the home folder), or None."""
    try:
        if python := train_python(t.train):
            bare_walls()([], [], python)
    except ConfigError as e:
        return str(e)
    return None


def check_target(root: Path) -> None:
    """What `senpai validate` checks and prints (`senpai init` checks what it wrote with it).
    Raises ConfigError (exit 2) listing every problem, each prefixed by the file: first what
    reading finds, then, if that is fine, what importing the evaluator's modules and running the
    evaluator on its sample finds (`sample.sample_problems`). A module the train script imports that
    its interpreter lacks (`imports.train_import_problems`) is a warning on stderr, not a problem."""
    t = load_target(root)
    params = read_params(root / t.params.file)
    problems, scored = scope_problems(t) + evaluator_problems(root, t) + direction_problems(t) + budget_problems(t), None
    problems += [why] if (why := python_problem(t.holdout)) else []
    problems += [why] if (why := train_problem(t)) else []
    if not problems:  # an interpreter that does not run has been named: its imports say nothing more
        # a warning, not a refusal: a script may find a module by means no reading sees (its own sys.path)
        for why in train_import_problems(root, t, script_of(t.train, lambda rel: (root / rel).is_file())):
            click.echo(f"warning: {why}; every training would fail with it, unless the script finds it by itself", err=True)
    if not problems:
        with tempfile.TemporaryDirectory(prefix="senpai-validate-") as work:
            problems, scored = sample_problems(root, t, Path(work), bare_walls())
    if problems:
        raise ConfigError("\n".join(f"{root / 'senpai.yaml'}: {p}" for p in problems))
    if note := hidden_program(t):
        click.echo(f"note: {note}", err=True)
    click.echo(f"name: {t.name}\nmetric: {t.metric.name} ({t.metric.direction})\nparams: {', '.join(t.params.space)}")
    click.echo(f"params file: {t.params.file} ({params_format(t.params.file)}, {len(params)} keys)")
    if params_format(t.params.file) == "toml":
        click.echo("note: senpai reads TOML params but cannot write them: hypotheses that set params will fail", err=True)
    click.echo(f"protected: {', '.join(t.protected) or '(none)'}\nscope: {', '.join(t.scope) or t.params.file}")
    click.echo(f"holdout: {t.holdout.command}\nholdout metric: {t.holdout.metric} ({t.holdout_direction})")
    python = f"{t.holdout.python} (holdout.python)" if t.holdout.python else f"{sys.executable} (senpai's; holdout.python unset)"
    click.echo(f"evaluator: {', '.join(t.holdout.files)} (imports checked under the score interpreter)")
    click.echo(f"score interpreter: {python}")
    click.echo(f"compute: {compute_rule(t)}")
    if scored is None:
        click.echo("evaluator run: no (no holdout.sample to run it on; see docs/target-contract.md)")
    else:
        printed = ", ".join(f"{k} {scored.values[k]}" for k in [t.holdout.metric, *t.holdout.guards])
        click.echo(f"evaluator run: on the sample holdout.sample wrote, it printed {printed}")
