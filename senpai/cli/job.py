"""`senpai job ...`: one bounded turn, run by the fleet in an empty work dir (the cwd)."""

import json
import os
import tempfile
from pathlib import Path

import click

from senpai import phases
from senpai.agents.attempt import Attempt
from senpai.agents.secrets import scrub_environment
from senpai.cli.main import end_quickly
from senpai.cli.options import config_option
from senpai.cli.wiring import hold_secrets, make_forge, make_runtime, make_tracker, secret_envs
from senpai.config.harness import HarnessConfig, LocalFleetSettings, load_harness
from senpai.config.roles import Role
from senpai.fleet.disk import check_room
from senpai.forge.mirror import handed_base
from senpai.forge.write import ForgeWriter
from senpai.job.context import prepare_turn
from senpai.job.walls import walls_of
from senpai.ledger.blocks import Evidence
from senpai.ledger.events import ENV_EVENTS, EventBatch
from senpai.ledger.redact import redact_own_output
from senpai.ledger.table import handed_snapshot

# the port's writing part, read off its Protocol (a hand-kept list had missed two), and the admin's one write
FORGE_WRITES = frozenset(name for name in vars(ForgeWriter) if not name.startswith("_")) | {"ensure_labels"}


def _forge_phase(method: str) -> str:
    return "forge write" if method in FORGE_WRITES else "forge read"


def _context(config_path: str, role: Role, workdir: Path | None = None):
    with phases.phase("config"):
        cfg = load_harness(config_path)
    # a job on a full volume fails at once (exit 6), not after its clone or its training
    check_room([workdir or Path.cwd(), cfg.tracker.dir], f"the {role} job cannot start")
    with phases.phase("redaction filter"):
        hold_secrets(cfg)  # out of os.environ: nothing the job starts inherits them
        redact_own_output(secret_envs(cfg))  # before anything prints; registers them for the job's posts too
    with phases.phase("adapters"):
        forge = phases.timed(make_forge(cfg, role), _forge_phase)
        tracker = phases.timed(make_tracker(cfg), lambda _: "tracker")
    return prepare_turn(cfg, forge, tracker, workdir or Path.cwd(), handed_base(), handed_snapshot())


def _events() -> EventBatch:
    """The turn's events from $SENPAI_EVENTS (JSON EventBatch); none if unset."""
    return EventBatch.model_validate_json(os.environ.get(ENV_EVENTS) or '{"events": []}')


@click.group()
@click.pass_context
def job(ctx: click.Context) -> None:
    """Run one job turn (the wrapper launches these through the fleet).

    Each job ends its log (stderr) with one `senpai-phases:` line: where its time went (`senpai.phases`).

    \b
    Example (what the wrapper launches; by hand only to debug a turn):
      SENPAI_EVENTS='{"events": []}' senpai job advisor --config harness.yaml
    """
    phases.start(ctx.invoked_subcommand or "job")
    ctx.call_on_close(phases.emit)
    end_quickly()  # `python -m senpai` skips the interpreter's teardown once the turn is done


@job.command()
@config_option
def advisor(config_path: str) -> None:
    """Advisor turn over the events in $SENPAI_EVENTS (JSON EventBatch), with runtime.advisor.kind.

    \b
    Example:
      SENPAI_EVENTS='{"events": []}' senpai job advisor --config harness.yaml
    """
    from senpai.agents.tries import open_requested

    ctx = _context(config_path, Role.ADVISOR)
    opened, events = open_requested(ctx, _events().events)  # human `/senpai try`s go before any proposal
    for line in opened:  # printed before the turn, which may end in an error (NoEffect: exit 7)
        click.echo(line)
    for line in make_runtime(ctx.harness.runtime.advisor).advisor_turn(ctx, events):
        click.echo(line)


@job.command()
@config_option
@click.option("--pr", type=int, required=True)
@click.option("--attempt", type=int, required=True)
@click.option(
    "--step",
    type=click.Choice(["all", "prepare", "train", "report"]),
    default="all",
    show_default=True,
    help="all: everything in one process (local fleet); prepare/train/report: one container each (Kubernetes).",
)
@click.option("--work", type=click.Path(file_okay=False), default=None, help="Work dir the steps share [cwd].")
def student(config_path: str, pr: int, attempt: int, step: str, work: str | None) -> None:
    """Student turn: attempt ATTEMPT on PR with runtime.student.kind (messages in $SENPAI_EVENTS).

    prepare runs the runtime's turn (params written, or the agent's change) and pushes it, then writes
    WORK/plan.json and WORK/train/ (a clone per arm, train/job.json); train (no secret, no forge, reads
    and writes only WORK/train) runs the target's train command per arm behind its wall and writes
    WORK/train/train.json; report takes the W&B runs in and posts the evidence. A train command whose
    own Python interpreter (named by its absolute path) does not run here stops prepare before the
    turn, and the train step before any arm, with exit 3: senpai's failure, no attempt spent.

    \b
    Example:
      senpai job student --config harness.yaml --pr 3 --attempt 1
    """
    from senpai.agents import student_steps as steps

    root = Path(work or Path.cwd()).resolve()
    if step == "train":
        log = steps.train(root / steps.TRAIN, walls_of(load_harness(config_path)))
        click.echo(json.dumps({"trained": len(log.arms)}))
        return
    root.mkdir(parents=True, exist_ok=True)
    if step == "report":
        ctx = _context(config_path, Role.STUDENT, Path(tempfile.mkdtemp(prefix="report-", dir=root)))
        ev = steps.report(ctx, steps.read_plan(root), root)
    else:
        ctx = _context(config_path, Role.STUDENT, root)
        steps.train_interpreter(
            ctx.target.train, walls_of(ctx.harness)
        )  # before the turn: exit 3, no attempt spent, if it cannot run
        result = make_runtime(ctx.harness.runtime.student).student_turn(ctx, pr, attempt, _events().events)
        if step == "prepare":
            steps.plan(ctx, result if isinstance(result, Attempt) else None, root)
            ev = result if isinstance(result, Evidence) else None
        else:
            ev = steps.run_attempt(ctx, result, walls_of(ctx.harness)) if isinstance(result, Attempt) else result
    if ev is not None:
        click.echo(f"outcome: {ev.outcome}\n{ev.primary.name}: {ev.primary.value}")
        click.echo(f"tokens: {ev.cost.tokens}\ndollars: {ev.cost.dollars}")


@job.command()
@config_option
@click.option("--pr", type=int, required=True)
@click.option(
    "--step",
    type=click.Choice(["all", "checkout", "train", "score"]),
    default="all",
    show_default=True,
    help="all: everything in one process (local fleet); checkout/train/score: one container each (Kubernetes).",
)
@click.option(
    "--side", type=click.Choice(["baseline", "candidate"]), default=None, help="The side --step train trains (required there)."
)
@click.option("--work", type=click.Path(file_okay=False), default=None, help="Work dir the steps share [cwd].")
@click.option(
    "--baseline-from", "sources", type=click.IntRange(min=1), multiple=True,
    help="A PR whose verifications may have measured this base: their baseline seeds are reused (repeatable).",
)  # fmt: skip
def verify(config_path: str, pr: int, step: str, side: str | None, work: str | None, sources: tuple[int, ...]) -> None:
    """Verifier run: train then score the PR head and the base head per seed; records the numbers.

    checkout writes WORK/plan.json and, per side, a clone at WORK/SIDE/checkout and WORK/SIDE/job.json;
    train --side SIDE (no secret, no forge, reads and writes only WORK/SIDE) writes WORK/SIDE/train.json
    and WORK/SIDE/artifacts; score re-reads the PR from the forge, scores each side's artifacts on the
    sealed holdout and records the verification. A baseline seed a verification with the same
    baseline key measured (on PR or a --baseline-from PR) is reused, not trained again.

    \b
    Example:
      senpai job verify --config harness.yaml --pr 3
    """
    from senpai.verifier import judge, steps

    if (step == "train") != (side is not None):
        raise click.UsageError("--side is required with --step train" if step == "train" else "--side is only for --step train")
    root = Path(work or Path.cwd()).resolve()
    if step == "train":
        log = steps.train_side(root, side, walls_of(load_harness(config_path)))
        click.echo(json.dumps({"side": side, "trained": len(log.runs), "test_passed": log.test_passed}))
        return
    root.mkdir(parents=True, exist_ok=True)
    if step == "checkout":
        ctx = _context(config_path, Role.VERIFIER, root)
        plan = steps.checkout_step(ctx, pr, root, _holdout_dir(ctx.harness) or steps.empty_dir(root / "holdout"), sources)
        click.echo(plan.model_dump_json())
        return
    ctx = _context(config_path, Role.VERIFIER, Path(tempfile.mkdtemp(prefix="score-", dir=root)) if step == "score" else root)
    scrub_environment(ctx.harness, [])  # train steps (all) and the evaluator loading an artifact are our children
    holdout = _holdout_dir(ctx.harness) or steps.empty_dir(ctx.workdir / "holdout")
    if step == "score":
        v = judge.score_from_work(ctx, pr, root, holdout, sources)
    else:
        v = judge.verify_all(ctx, pr, holdout, sources)
    reused = {"baseline": sorted(v.baseline_reused), "candidate": sorted(v.candidate_reused)}  # seeds not trained here
    click.echo(
        json.dumps(
            {"passed": v.passed, "improvement": v.improvement, "noise_floor": v.noise_floor, "seeds": v.seeds, "reused": reused}
        )
    )


def _holdout_dir(cfg: HarnessConfig) -> Path | None:
    """The sealed holdout: the local fleet's `holdout_dir`, or the verifier Job's mount path."""
    if isinstance(cfg.fleet, LocalFleetSettings):
        return Path(cfg.fleet.holdout_dir) if cfg.fleet.holdout_dir else None
    holdout = getattr(cfg.fleet, "holdout", None)
    return Path(holdout.mount_path) if holdout else None
