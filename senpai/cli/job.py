"""`senpai job ...`: one bounded turn, run by the fleet in an empty work dir (the cwd)."""

import json
import os
from pathlib import Path

import click

from senpai.agents.context import prepare_turn
from senpai.cli.options import config_option
from senpai.cli.wiring import make_forge, make_tracker
from senpai.config.harness import load_harness
from senpai.ledger.events import EventBatch
from senpai.ledger.redact import redact_own_output
from senpai.wrapper.dispatch import ENV_EVENTS


def _context(config_path: str):
    cfg = load_harness(config_path)
    keys = [cfg.forge.token_env, *(r.llm.api_key_env for r in (cfg.runtime.advisor, cfg.runtime.student) if r.llm)]
    redact_own_output([*keys, *(s.env for s in getattr(cfg.fleet, "secret_env", []))])  # before anything prints
    return prepare_turn(cfg, make_forge(cfg), make_tracker(cfg), Path.cwd())


def _events() -> EventBatch:
    """The turn's events from $SENPAI_EVENTS (JSON EventBatch); none if unset."""
    return EventBatch.model_validate_json(os.environ.get(ENV_EVENTS) or '{"events": []}')


@click.group()
def job() -> None:
    """Run one job turn (the wrapper launches these through the fleet)."""


@job.command()
@config_option
def advisor(config_path: str) -> None:
    """Advisor turn over the events in $SENPAI_EVENTS (JSON EventBatch), with runtime.advisor.kind."""
    from senpai.agents.steer import open_requested

    ctx = _context(config_path)
    opened, events = open_requested(ctx, _events().events)  # human `/senpai try`s go before any proposal
    if ctx.harness.runtime.advisor.kind == "openhands":
        from senpai.agents.openhands.advisor import advisor_turn
    else:
        from senpai.agents.search.advisor import advisor_turn
    for line in opened + advisor_turn(ctx, events):
        click.echo(line)


@job.command()
@config_option
@click.option("--pr", type=int, required=True)
@click.option("--attempt", type=int, required=True)
def student(config_path: str, pr: int, attempt: int) -> None:
    """Student turn: attempt ATTEMPT on PR with runtime.student.kind (messages in $SENPAI_EVENTS)."""
    ctx = _context(config_path)
    if ctx.harness.runtime.student.kind == "openhands":
        from senpai.agents.openhands.student import student_turn
    else:
        from senpai.agents.search.student import student_turn
    ev = student_turn(ctx, pr, attempt, _events().events)
    click.echo(
        f"outcome: {ev.outcome}\n{ev.primary.name}: {ev.primary.value}\ntokens: {ev.cost.tokens}\ndollars: {ev.cost.dollars}"
    )


@job.command()
@config_option
@click.option("--pr", type=int, required=True)
def verify(config_path: str, pr: int) -> None:
    """Verifier run: holdout for the PR head and the baseline; records the numbers."""
    from senpai.agents.verifier import verify as run_verify

    v = run_verify(_context(config_path), pr)
    click.echo(json.dumps({"passed": v.passed, "improvement": v.improvement, "noise_floor": v.noise_floor}))
