"""Measure a PR head and post its evidence: the one way every runtime turns a training run into
a `senpai-evidence` block.

The target program logs its own W&B run; this gives it its identity through wandb's standard env
vars (`senpai.agents.runs.run_identity`: job_type train, the PR head as its git commit), runs the
target's train command in the work copy, reads the run back by id, and posts the evidence
through `transitions.submit_evidence` (which moves the PR to review).
"""

import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from senpai.agents.context import TurnContext
from senpai.agents.environ import train_secrets
from senpai.agents.measure import finite, run_command
from senpai.agents.runs import run_identity
from senpai.config.budgets import StudentBudget
from senpai.errors import NotFound
from senpai.fleet.base import job_deadline, job_gpus
from senpai.ledger import transitions
from senpai.ledger.blocks import Cost, Evidence, Hypothesis, RunRef
from senpai.tracker.base import RunRecord


@dataclass(frozen=True)
class Measured:
    """One training run of a head, read back: its primary metric value (None: not reported), why it
    failed (None: it did not), its run, the run's numbers, its train seconds and its log tail."""

    value: float | None
    failure: str | None
    run: RunRef
    metrics: dict[str, float]
    seconds: float
    tail: str


def measure(
    ctx: TurnContext,
    number: int,
    attempt: int,
    h: Hypothesis,
    head: str,
    params: dict,
    *,
    extra_env: dict[str, str] | None = None,
    arm: str | None = None,
) -> Measured:
    """Train the work copy (at commit `head`, plus any uncommitted params) as attempt `attempt` of PR
    `number` with `SEED=0` and read its W&B run back. An `arm` names the run `<...>-<arm>` (one run
    per arm, all in the PR's W&B group) and goes into its config as `senpai_arm`. Only a run
    started while the train command ran counts (`Tracker.get_run`'s window); none is a missing run."""
    identity = run_identity(ctx, number, attempt, h.student, head, h.id, params)
    if arm is not None:
        config = {**identity.config, "senpai_arm": arm}
        identity = identity.model_copy(update={"id": f"{identity.id}-{arm}", "name": f"{identity.name}/{arm}", "config": config})
    env = {**train_secrets(os.environ), **(extra_env or {}), **ctx.tracker.env_for(identity, ctx.workdir), "SEED": "0"}
    timeout = train_timeout(ctx.budgets.student)
    log = ctx.workdir / (f"train-{arm}.log" if arm else "train.log")
    started = datetime.now(UTC)
    out = run_command(ctx.target.train, ctx.repo.path, env, timeout, log=log)
    record = _read_run(ctx, identity.id, (started, datetime.now(UTC)))
    metric = ctx.target.metric
    value = out.value(metric.name) if metric.source == "stdout" else _summary_value(record, metric.name)
    failure = _failure(out.returncode, timeout, value, metric.name, record)
    run = RunRef(id=identity.id, url=record.url if record else None, state=record.state if record else "missing")
    return Measured(value, failure, run, _numbers(record), out.seconds, out.tail(20))


def measure_and_post(
    ctx: TurnContext,
    number: int,
    attempt: int,
    h: Hypothesis,
    head: str,
    params: dict,
    *,
    tokens: int = 0,
    dollars: float = 0.0,
    interpretation: str | None = None,
    extra_env: dict[str, str] | None = None,
) -> Evidence:
    """Train commit `head` (checked out in `ctx.repo`) as attempt `attempt` of PR `number`, read its
    W&B run back and post the evidence.

    `params` go into the run's config; `tokens`/`dollars` are the agent's spend so far (0 for the
    search runtime); `interpretation` replaces the generated one when the run succeeded (an LLM
    student's reading); `extra_env` is added to the train command's environment (secrets the
    runtime removed from os.environ; the W&B key still in os.environ is added too, since the train
    command's environment is allow-listed). The command's time is `train_timeout`. The attempt
    failed if the command failed, or its W&B run did not end `finished` (a crash after logging),
    or the metric is missing or not finite. Posted text is redacted by the ledger
    (`senpai.ledger.redact`). Raises TransitionError if the PR is not in wip/changes/review.
    """
    m = measure(ctx, number, attempt, h, head, params, extra_env=extra_env)
    return post(ctx, number, attempt, h, head, m, Cost(tokens=tokens, dollars=dollars), interpretation)


def post(
    ctx: TurnContext,
    number: int,
    attempt: int,
    h: Hypothesis,
    head: str,
    m: Measured,
    spent: Cost | None = None,
    interpretation: str | None = None,
    *,
    runs: list[RunRef] | None = None,
    **fields,
) -> Evidence:
    """Post the evidence of measurement `m` of `head`: `spent` gives the agent's tokens and dollars,
    the train seconds are `m`'s unless `spent` has some (a multi-arm attempt's sum); `runs` default
    to `m`'s run; `fields` are the multi-arm rows (`arms`, `arm`)."""
    metric, spent = ctx.target.metric, spent or Cost()
    seconds = spent.wall_seconds or m.seconds
    ev = Evidence.of(
        h,
        metric=metric.name,
        value=m.value,
        failure=m.failure,
        interpretation=(interpretation if interpretation and not m.failure else None)
        or _interpret(m.value, h.baseline.value, metric, m.failure),
        pr=number,
        attempt=attempt,
        student=h.student,
        head=head,
        command=ctx.target.train,
        runs=runs or [m.run],
        metrics=m.metrics,
        cost=Cost(gpu_seconds=seconds * job_gpus(), wall_seconds=round(seconds, 3), tokens=spent.tokens, dollars=spent.dollars),
        log_tail=m.tail if m.failure else None,
        **fields,
    )
    transitions.submit_evidence(ctx.forge, ctx.forge.get_pull(number), ev)
    return ev


def train_timeout(budget: StudentBudget, now: float | None = None) -> float:
    """Seconds the train command may run: `budget.train`, cut so that it ends `budget.post` before
    the job's own deadline (`senpai.fleet.base.job_deadline`, counted by the fleet from the job's
    start, so clone, checkout and an agent's turn are already spent), leaving the job time to read
    the run and post evidence. At least 1 second."""
    timeout = budget.train
    if (deadline := job_deadline()) is not None:
        now = time.time() if now is None else now
        timeout = min(timeout, deadline - now - budget.post)
    return max(1.0, timeout)


def _read_run(ctx: TurnContext, run_id: str, window: tuple[datetime, datetime]) -> RunRecord | None:
    """The run the train command logged in `window` (its start and end), None if none: a copy of
    the run id stamped at another time (planted by a PR's code) does not count."""
    try:
        return ctx.tracker.get_run(run_id, window)
    except NotFound:
        return None


def _summary_value(record: RunRecord | None, key: str) -> float | None:
    value = record.summary.get(key) if record else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _numbers(record: RunRecord | None) -> dict[str, float]:
    if record is None:
        return {}
    return {
        k: float(v)
        for k, v in sorted(record.summary.items())
        if isinstance(v, (int, float)) and not isinstance(v, bool) and not k.startswith("_")
    }


def _failure(returncode, timeout, value, name, record) -> str | None:
    if returncode is None:
        return f"train command killed after {timeout:.0f} s (budget or job deadline)"
    if returncode != 0:
        return f"train command exited with status {returncode}"
    if record is not None and record.state != "finished":
        return f"W&B run {record.id} ended {record.state}, not finished: it crashed or was killed before wandb.finish"
    if value is None:
        return f"no {name} reported" + ("" if record else " (no W&B run found)")
    if not finite(value):
        return f"{name} is {value} (not finite)"
    return None


def _interpret(value, base, metric, failure) -> str:
    if failure:
        return f"attempt failed: {failure}"
    if base is None:
        return f"{metric.name} = {value:.4f}; no measured baseline yet, the verifier will compare."
    gain = metric.better(value, base)
    word = "better" if gain > 0 else "not better"
    return f"{metric.name} = {value:.4f} vs baseline {base:.4f} ({gain:+.4f}, {word} on validation)."
