"""The verifier (no LLM): re-measure the candidate head against the baseline before any merge.

It runs the target's holdout evaluation (which students never see) over the declared seeds, once
in a checkout of the candidate head and once in a checkout of the base head, and records the
numbers in a `senpai-verification` block.  The noise floor is calibrated from the baseline's own
repeats: noise_k x their standard deviation, at least min_floor.
"""

import math
import statistics
from pathlib import Path

from senpai.agents.context import TurnContext
from senpai.agents.measure import finite, run_command
from senpai.config.target import Holdout, TargetConfig
from senpai.ledger import transitions
from senpai.ledger.blocks import Verification
from senpai.ledger.gate import protected_touched


def _holdout(target: TargetConfig) -> Holdout:
    """The declared holdout, or the train command re-run per seed (reading its stdout metric)."""
    if target.holdout is not None:
        return target.holdout
    return Holdout(command=target.train, metric=target.metric.name)


def measure(command: str, key: str, checkout: Path, seeds: list[int], timeout: float, logs: Path) -> list[float]:
    """`key` as printed by `command` in `checkout`, once per seed; NaN where it crashed or printed none."""
    values = []
    for seed in seeds:
        env = {"SEED": str(seed), "WANDB_MODE": "disabled"}
        out = run_command(command.replace("{seed}", str(seed)), checkout, env, timeout, logs / f"{checkout.name}-{seed}.log")
        value = out.value(key) if out.returncode == 0 else None
        values.append(float("nan") if value is None else value)
    return values


def _mean(xs: list[float]) -> float | None:
    return statistics.fmean(xs) if xs and all(finite(x) for x in xs) else None


def verify(ctx: TurnContext, number: int) -> Verification:
    """Verify PR `number`'s head against the current base head and record the block."""
    pr = ctx.forge.get_pull(number)
    base_sha = ctx.forge.branch_sha(ctx.base)
    hold = _holdout(ctx.target)
    direction = ctx.target.metric.direction
    common = dict(pr=number, candidate=pr.head_sha, baseline=base_sha, metric=hold.metric, direction=direction, seeds=hold.seeds)
    touched = protected_touched(ctx.target, ctx.forge.pull_files(number))
    if touched:
        v = Verification(
            **common,
            candidate_values=[],
            baseline_values=[],
            candidate_mean=None,
            baseline_mean=None,
            improvement=None,
            noise_floor=None,
            protected_touched=touched,
            passed=False,
            reason=f"refused without running: the diff touches protected paths {', '.join(touched)}",
        )
    else:
        v = _measure_both(ctx, pr.head_sha, base_sha, hold, common)
    transitions.record_verification(ctx.forge, ctx.forge.get_pull(number), v)
    return v


def verdict(metric: str, cm: float | None, bm: float | None, improvement: float | None, floor: float | None) -> tuple[bool, str]:
    """(passed, reason): a candidate passes only if its improvement (in the metric's direction) beats the floor."""
    if (
        cm is None
        or bm is None
        or improvement is None
        or floor is None
        or not math.isfinite(floor)
        or not math.isfinite(improvement)
    ):
        return False, "a holdout metric is NaN, infinite or missing (crash?)"
    if improvement > floor:
        return True, f"{metric} {cm:.4f} vs {bm:.4f}: {improvement:+.4f} beats the noise floor {floor:.4f}"
    if improvement >= -floor:
        return False, f"{metric} {cm:.4f} vs {bm:.4f}: {improvement:+.4f} is within the noise floor {floor:.4f}"
    return (
        False,
        f"{metric} {cm:.4f} vs {bm:.4f}: {improvement:+.4f} is worse than the baseline by more than the noise floor {floor:.4f}",
    )


def _measure_both(ctx: TurnContext, head: str, base: str, hold: Holdout, common: dict) -> Verification:
    ctx.repo.git("fetch", "--quiet", "origin", f"+{head}:refs/senpai/candidate", network=True)
    timeout = float(ctx.target.budget.wall_seconds)
    logs = ctx.workdir / "logs"
    logs.mkdir(exist_ok=True)
    cand = measure(hold.command, hold.metric, ctx.repo.worktree(head, ctx.workdir / "candidate"), hold.seeds, timeout, logs)
    base_vals = measure(hold.command, hold.metric, ctx.repo.worktree(base, ctx.workdir / "baseline"), hold.seeds, timeout, logs)
    cm, bm = _mean(cand), _mean(base_vals)
    floor = max(hold.noise_k * statistics.stdev(base_vals), hold.min_floor) if bm is not None else None
    improvement = ctx.target.metric.better(cm, bm) if cm is not None and bm is not None else None
    passed, reason = verdict(hold.metric, cm, bm, improvement, floor)
    return Verification(
        **common,
        candidate_values=cand,
        baseline_values=base_vals,
        candidate_mean=cm,
        baseline_mean=bm,
        improvement=improvement,
        noise_floor=floor,
        protected_touched=[],
        passed=passed,
        reason=reason,
    )
