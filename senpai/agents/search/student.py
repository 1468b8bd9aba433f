"""The `search` student turn: apply the hypothesis params on the PR branch, train, post evidence.

The target program logs its own W&B run; the student only gives it its identity through wandb's
standard env vars and reads the run back by id for the evidence.
"""

import json
import logging
import os
import re
from collections.abc import Sequence

from senpai.agents.context import TurnContext
from senpai.agents.measure import finite, run_command
from senpai.agents.search.advisor import answer_free_text
from senpai.errors import NotFound, PermanentError
from senpai.ledger import transitions
from senpai.ledger.blocks import Cost, Evidence, PrimaryResult, RunRef
from senpai.ledger.events import Event
from senpai.tracker.base import RunIdentity, RunRecord

log = logging.getLogger(__name__)


def run_identity(repo: str, pr: int, attempt: int, student: str, head: str, hypothesis: str, params: dict) -> RunIdentity:
    """W&B identity of attempt `attempt` on PR `pr` (design §2)."""
    slug = re.sub(r"[^a-z0-9]+", "-", repo.split("/")[-1].lower()).strip("-")[:30]
    config = {"senpai_pr": pr, "senpai_head": head, "senpai_hypothesis": hypothesis, **params}
    return RunIdentity(
        id=f"{slug}-pr{pr}-a{attempt}",
        group=f"pr-{pr}",
        name=f"{student}/pr-{pr}/{attempt}",
        tags=["senpai", f"student:{student}", f"pr-{pr}"],
        config=config,
    )


def student_turn(ctx: TurnContext, number: int, attempt: int, events: Sequence[Event] = ()) -> Evidence:
    """One attempt on PR `number`; `events` are the humans' messages routed to it (answered first,
    the search runtime cannot act on them).  Raises PermanentError if the PR has no hypothesis."""
    for ev in events:
        if ev.kind == "message" and ev.message:
            log.info(answer_free_text(ctx.forge, ev.message))
    pr = ctx.forge.get_pull(number)
    exp = ctx.ledger.experiment(pr)
    h = exp.hypothesis
    if h is None:
        raise PermanentError(f"PR #{number} has no readable senpai-hypothesis block: {exp.error}")
    transitions.start_work(ctx.forge, pr)
    repo = ctx.repo
    repo.checkout_remote_branch(pr.head_ref)
    repo.git("merge", "--quiet", "--no-edit", "-X", "ours", f"origin/{ctx.base}")
    params_file = repo.path / ctx.target.params.file
    params = {**json.loads(params_file.read_text()), **h.params}
    params_file.write_text(json.dumps(params, indent=2, sort_keys=True) + "\n")
    head = repo.commit_all(f"{h.id}: apply params (attempt {attempt})")
    repo.push(pr.head_ref)

    identity = run_identity(ctx.harness.forge.repo, number, attempt, h.student, head, h.id, h.params)
    env = {**ctx.tracker.env_for(identity), "SEED": "0"}
    timeout = max(1.0, ctx.target.budget.wall_seconds * 0.9)
    out = run_command(ctx.target.train, repo.path, env, timeout, log=ctx.workdir / "train.log")
    record = _read_run(ctx, identity.id)
    metric = ctx.target.metric
    value = out.value(metric.name) if metric.source == "stdout" else _summary_value(record, metric.name)
    failure = _failure(out.returncode, timeout, value, metric.name, record)
    base = h.baseline.value
    ev = Evidence(
        pr=number,
        attempt=attempt,
        student=h.student,
        head=head,
        command=ctx.target.train,
        outcome="failed" if failure else "ok",
        failure=failure,
        runs=[RunRef(id=identity.id, url=record.url if record else None, state=record.state if record else "missing")],
        metrics=_numbers(record),
        primary=PrimaryResult(
            name=metric.name,
            value=value,
            baseline=base,
            delta=value - base if finite(value) and base is not None else None,
        ),
        interpretation=_interpret(value, base, metric, failure),
        cost=Cost(gpu_seconds=out.seconds * max(0, len(_gpus())), wall_seconds=round(out.seconds, 3)),
        log_tail=out.tail(20) if failure else None,
    )
    transitions.submit_evidence(ctx.forge, ctx.forge.get_pull(number), ev)
    return ev


def _gpus() -> list[str]:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    return [g for g in visible.split(",") if g.strip()]


def _read_run(ctx: TurnContext, run_id: str) -> RunRecord | None:
    try:
        return ctx.tracker.get_run(run_id)
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
        return f"train command killed after {timeout:.0f} s (budget)"
    if returncode != 0:
        return f"train command exited with status {returncode}"
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
