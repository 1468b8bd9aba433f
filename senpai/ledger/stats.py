"""TEMPORARY (branch i9-verify): a minimal noise-floor `judge` so the verifier can be tested before
branch i9-stats lands. The merger takes i9-stats' version of this file; the signature is the one in
the issue 9 brief.
"""

import statistics
from dataclasses import dataclass

from senpai.config.target import Holdout


@dataclass(frozen=True)
class Judgement:
    passed: bool
    inconclusive: bool
    improvement: float | None
    noise_floor: float | None
    statistic: float | None
    p_value: float | None
    reason: str


def judge(
    hold: Holdout, direction: str, candidate: list[float], baseline: list[float], look: int = 1, looks: int = 1
) -> Judgement:
    """Noise-floor rule only: passed if mean improvement > max(noise_k x stdev(baseline), min_floor);
    inconclusive while within the floor and looks remain."""
    cm, bm = statistics.fmean(candidate), statistics.fmean(baseline)
    improvement = cm - bm if direction == "maximize" else bm - cm
    floor = max(hold.noise_k * statistics.stdev(baseline), hold.min_floor or 0.0)
    passed = improvement > floor
    within = -floor <= improvement <= floor
    reason = f"{hold.metric} {cm:.4f} vs {bm:.4f}: {improvement:+.4f} vs noise floor {floor:.4f}"
    return Judgement(passed, within and look < looks, improvement, floor, None, None, reason)
