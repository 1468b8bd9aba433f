"""A training run's measurement and its evidence: the one way every runtime turns a training run
into a `senpai-evidence` block.

The target program logs its own W&B run under the identity `senpai.agents.student_steps` gives it
(wandb's standard env vars, `senpai.job.runs.run_identity`: job_type train, the PR head as its
git commit); what it measured is a `Measured`, and `post` records it through
`transitions.submit_evidence` (which moves the PR to review).
"""

import time
from dataclasses import dataclass

from senpai.fleet.base import job_deadline, train_gpus
from senpai.job.context import TurnContext
from senpai.job.measure import finite
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
    the train seconds are `m`'s unless `spent` has some (a multi-arm attempt's sum), times the GPUs
    the train step held (`train_gpus`: on Kubernetes the report step holds none); `runs` default to
    `m`'s run; `fields` are the multi-arm rows (`arms`, `arm`)."""
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
        cost=Cost(gpu_seconds=seconds * train_gpus(), wall_seconds=round(seconds, 3), tokens=spent.tokens, dollars=spent.dollars),
        log_tail=m.tail if m.failure else None,
        **fields,
    )
    transitions.submit_evidence(ctx.forge, ctx.forge.get_pull(number), ev)
    return ev


def train_timeout(train: float, post: float, now: float | None = None) -> float:
    """Seconds a train command may run: `train` (TRAIN_SHARE of the compute budget), cut so that it ends `post` seconds
    before the job's own deadline (`senpai.fleet.base.job_deadline`, counted by the fleet from the
    job's start, so clone, checkout and an agent's turn are already spent), leaving the job time to
    read the run and post evidence. At least 1 second."""
    timeout = train
    if (deadline := job_deadline()) is not None:
        now = time.time() if now is None else now
        timeout = min(timeout, deadline - now - post)
    return max(1.0, timeout)


def summary_value(record: RunRecord | None, key: str) -> float | None:
    value = record.summary.get(key) if record else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def numbers(record: RunRecord | None) -> dict[str, float]:
    if record is None:
        return {}
    return {
        k: float(v)
        for k, v in sorted(record.summary.items())
        if isinstance(v, (int, float)) and not isinstance(v, bool) and not k.startswith("_")
    }


def failure(returncode: int | None, timeout: float, value: float | None, name: str, record: RunRecord | None) -> str | None:
    """Why a training run failed, or None: killed at `timeout`, a non-zero exit, a W&B run that did
    not finish, or the metric `name` missing or not finite."""
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
