"""What a proposer may learn of the sealed holdout: its numbers rounded to the gate's resolution.

Every verdict tells the search a little about the holdout, and a search that reads it adaptively
overfits it. The Ladder (Blum & Hardt, 2015, "The Ladder: A Reliable Leaderboard for Machine
Learning Competitions") keeps a leaderboard honest by releasing a score only to a fixed resolution:
a proposer that cannot see differences below what the gate tells apart cannot climb on the
holdout's noise. senpai's verifier records the exact values (`Verification`: per seed, the
statistic, the p-value) because the gate, the rounds and the reuse of seeds compute from them; every
text senpai renders from them, on a PR and to an agent, shows `for_proposer`'s view instead: the
means and the improvement rounded to a step no finer than the verdict's `resolution`, no per-seed
value, no statistic and no p-value. The per-seed record stays in the collapsed block on the PR, for
humans; no agent tool renders it.
"""

import math

from senpai.ledger.blocks import Block, Decision, Verification

STEPS = (1.0, 2.0, 5.0)  # a rounding step is one of these times a power of ten


def resolution(
    rule: str, noise_floor: float | None, min_delta: float, candidate: list[float], baseline: list[float]
) -> float | None:
    """The smallest holdout difference a verdict tells apart, in metric units: the noise floor of the
    noise_floor rule; for the test rules, the standard error of the difference of the means (at
    least `min_delta`). None where it cannot be computed (fewer than 2 finite values a side)."""
    if rule == "noise_floor":
        return noise_floor if noise_floor is not None and math.isfinite(noise_floor) and noise_floor > 0 else None
    import numpy as np  # here: reading the ledger imports no numpy

    c, b = np.asarray(candidate, float), np.asarray(baseline, float)
    if len(c) < 2 or len(b) < 2 or not (np.isfinite(c).all() and np.isfinite(b).all()):
        return None
    se = float(math.sqrt(c.var(ddof=1) / len(c) + b.var(ddof=1) / len(b)))
    return max(se, min_delta) or None


def step(res: float | None) -> float | None:
    """The largest 1, 2 or 5 times a power of ten that is at most `res` (the numbers shown stay
    readable and never finer than the gate); None for no resolution or one that is not positive."""
    if res is None or not math.isfinite(res) or res <= 0:
        return None
    power = 10.0 ** math.floor(math.log10(res))
    return max(m * power for m in STEPS if m * power <= res * (1 + 1e-12))


def coarse(x: float | None, by: float | None) -> float | None:
    """`x` rounded to a multiple of `by` (as many decimals as `by` has); None and non-finite `x` as they are."""
    if x is None or by is None or not math.isfinite(x):
        return x
    decimals = max(0, -math.floor(math.log10(by)))
    return round(round(x / by) * by, decimals)


def for_proposer[B: Block](block: B) -> B:
    """`block` as a proposer may read it: a verification, or a decision made from one (its
    `resolution` set), with the holdout means, improvement and floor rounded to `step(resolution)`,
    and the per-seed values, guard values, statistic and p-value dropped; the reason is rewritten
    from the rounded numbers. Any other block, and one with no resolution, as it is."""
    by = step(getattr(block, "resolution", None))
    if by is None:
        return block
    if isinstance(block, Verification):
        cand, base, gain = (coarse(x, by) for x in (block.candidate_mean, block.baseline_mean, block.improvement))
        verdict = "passed" if block.passed else "not passed"
        return block.model_copy(
            update=dict(
                candidate_mean=cand,
                baseline_mean=base,
                improvement=gain,
                noise_floor=coarse(block.noise_floor, by),
                candidate_values=[],
                baseline_values=[],
                candidate_guards={},
                baseline_guards={},
                guards={},
                statistic=None,
                holdout=None,
                p_value=None,
                reason=_said(block.metric, cand, base, gain, by, verdict),
            )  # fmt: skip
        )
    if isinstance(block, Decision):
        cand, base, gain = (coarse(x, by) for x in (block.candidate, block.baseline, block.improvement))
        head = block.reason.split(":", 1)[0] if ":" in block.reason else block.verdict
        return block.model_copy(
            update=dict(
                candidate=cand,
                baseline=base,
                improvement=gain,
                noise_floor=coarse(block.noise_floor, by),
                reason=_said(block.metric or "holdout", cand, base, gain, by, head),
            )  # fmt: skip
        )
    return block


def _said(metric: str, cand: float | None, base: float | None, gain: float | None, by: float, verdict: str) -> str:
    shown = lambda x: "n/a" if x is None else f"{x:g}"  # noqa: E731
    change = "n/a" if gain is None else f"{gain:+g}"
    return f"{verdict}: holdout {metric} {shown(cand)} vs {shown(base)}: {change} (rounded to {by:g}, the gate's resolution)"
