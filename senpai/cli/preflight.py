"""`senpai preflight`: check the forge, W&B, the LLMs and the cluster before launching the wrapper."""

import json
import sys

import click
from rich.console import Console
from rich.table import Table

from senpai.cli.options import config_option
from senpai.cli.wiring import hold_secrets, make_cluster_probe, make_forge, make_tracker
from senpai.config.harness import HarnessConfig, LocalFleetSettings, load_harness
from senpai.config.load import parse_yaml_model
from senpai.config.target import CONFIG_FILE, TargetConfig
from senpai.errors import ConfigError, PermanentError, SenpaiError
from senpai.forge.read import ForgeReader
from senpai.job.walls import ask_python, train_python, trial, walls_of
from senpai.preflight import CheckResult, failed, passed, skipped
from senpai.preflight.checks import run_preflight
from senpai.verifier.evaluate import python_problem

STYLE = {"pass": "green", "warn": "bold yellow", "fail": "bold red", "skip": "yellow"}


@click.command()
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print the results as a JSON list instead of a table.")
def preflight(config_path: str, as_json: bool) -> None:
    """Check everything the harness config needs; exit 0 if no check fails (each passes, warns or skips), 1 otherwise.

    Creates the missing senpai labels on the repository; makes no other change.
    A bad config exits 2.

    \b
    Example:
      senpai preflight --config harness.yaml
    """
    cfg = load_harness(config_path)
    hold_secrets(cfg)  # from the errors it reports
    forge = make_forge(cfg)
    results = run_preflight(cfg, forge, make_tracker(cfg), make_cluster_probe(cfg))
    if isinstance(cfg.fleet, LocalFleetSettings):  # on Kubernetes the target's code runs in containers of its own
        results += [wall_check(cfg), *interpreter_checks(cfg, forge)]
    if as_json:
        click.echo(json.dumps([r.model_dump() for r in results], indent=1))
    else:
        print_report(results)
    if any(r.outcome == "fail" for r in results):
        raise click.exceptions.Exit(1)


def wall_check(cfg: HarnessConfig) -> CheckResult:
    """The local fleet's wall: the one code from a PR runs behind here (`walls.trial`): failed if it cannot run, or if it
    has neither Landlock nor a view of its own (then it reads and writes whatever senpai's user can)."""
    fix = "see docs/target-contract.md#the-wall: Linux 5.13+ with Landlock, user namespaces, wall.uid, or the Kubernetes fleet"
    try:
        what = trial(cfg)
    except PermanentError as e:
        return failed("local", "wall", str(e), fix)
    if what.startswith("no Landlock; no view"):
        return failed("local", "wall", f"{what}: code from a PR can read and write every file senpai's user can", fix)
    return passed("local", "wall", what)


def interpreter_checks(cfg: HarnessConfig, forge: ForgeReader) -> list[CheckResult]:
    """The interpreters the base's senpai.yaml (at `forge.base_branch`) names, run here as the local
    fleet's steps run them: `holdout.python` (the score step's: `evaluate.python_problem`) and the
    train command's (`walls.train_python`), each passed with the Python version it reports, failed
    with why it does not run (or, the train one, why this wall would not grant it), or skipped where
    none is named. One skipped row if senpai.yaml cannot
    be read there."""
    where = f"{CONFIG_FILE} at {cfg.forge.base_branch}"
    try:
        target = parse_yaml_model(forge.read_file(CONFIG_FILE, cfg.forge.base_branch), where, TargetConfig)
    except SenpaiError as e:
        return [skipped("local", "interpreters", f"{where} cannot be read ({e}): holdout.python and train not checked")]
    rows, hold = [], target.holdout.python
    if hold is None:
        rows.append(skipped("local", "holdout.python", f"unset: the score step runs under senpai's {sys.executable}"))
    elif why := python_problem(target.holdout) or _ungranted(cfg, hold):
        rows.append(failed("local", "holdout.python", why, "fix holdout.python in senpai.yaml, or unset it"))
    else:
        rows.append(passed("local", "holdout.python", f"{hold} runs as Python {ask_python(hold)[0]}; the wall grants it"))
    try:
        python = train_python(target.train)
    except ConfigError as e:
        return [*rows, failed("local", "train interpreter", str(e), "fix train in senpai.yaml")]
    if python and (why := _ungranted(cfg, python)):
        return [*rows, failed("local", "train interpreter", why, "fix train in senpai.yaml")]
    if python is None:
        detail = f"train (`{target.train}`) starts no Python interpreter by its absolute path: nothing to grant"
        return [*rows, skipped("local", "train interpreter", detail)]
    detail = f"{python} runs as Python {ask_python(python)[0]}; the train step's wall grants it"
    return [*rows, passed("local", "train interpreter", detail)]


def _ungranted(cfg: HarnessConfig, python: str) -> str | None:
    """Why the wall of `cfg` would not grant interpreter `python` (a folder it reports holds one the
    wall hides: `~/python3` reports the home folder; or no wall can be built here, which the wall
    row says too), or None."""
    try:
        walls_of(cfg)([], [], python)
    except (ConfigError, PermanentError) as e:
        return str(e)
    return None


def print_report(results: list[CheckResult]) -> None:
    table = Table(title="senpai preflight")
    for col in ("area", "check", "result", "detail", "fix"):
        table.add_column(col, overflow="fold")
    for r in results:
        table.add_row(r.area, r.check, f"[{STYLE[r.outcome]}]{r.outcome}[/]", r.detail, r.fix or "")
    console = Console()
    console.print(table)
    counts = {o: sum(r.outcome == o for r in results) for o in STYLE}
    console.print(f"passed: {counts['pass']}  warned: {counts['warn']}  failed: {counts['fail']}  skipped: {counts['skip']}")
