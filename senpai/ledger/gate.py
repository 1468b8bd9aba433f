"""The merge gate: pure checks the harness applies before any merge, whoever asked for it.

The verdict of an advisor (LLM or search) never bypasses this; `transitions.decide` calls it.
"""

import math

from senpai.config.target import TargetConfig
from senpai.errors import MergeRefused
from senpai.ledger.blocks import Verification


def protected_touched(target: TargetConfig, files: list[str]) -> list[str]:
    """The subset of repo-relative `files` that are protected by `target` (senpai.yaml always is)."""
    return sorted(f for f in files if target.is_protected(f))


def check_merge(target: TargetConfig, head: str, base: str, files: list[str], verification: Verification | None) -> None:
    """Raise MergeRefused unless a merge of `head` into `base` is allowed.

    `files` is what the PR changes, as read from the forge now (not from any block).  The
    verification must measure exactly (`head`, `base`), have finite numbers, and an improvement
    above its noise floor; the numbers are re-checked here rather than trusting `passed`.
    """
    touched = protected_touched(target, files)
    if touched:
        raise MergeRefused(f"the diff touches protected paths: {', '.join(touched)}")
    if verification is None:
        raise MergeRefused("no verification of this head against the current baseline")
    if verification.candidate != head or verification.baseline != base:
        raise MergeRefused(
            f"verification is stale: it measured {verification.candidate[:8]} vs {verification.baseline[:8]}, "
            f"the PR is {head[:8]} vs {base[:8]}"
        )
    numbers = [*verification.candidate_values, *verification.baseline_values]
    numbers += [verification.improvement, verification.noise_floor]
    if not numbers or any(n is None or not math.isfinite(n) for n in numbers):
        raise MergeRefused("a verification metric is NaN, infinite or missing")
    if not verification.passed or verification.improvement <= verification.noise_floor:
        raise MergeRefused(
            f"improvement {verification.improvement:+.4f} does not beat the noise floor {verification.noise_floor:.4f}"
        )
