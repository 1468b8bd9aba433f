"""The diversity alarm: are the recent hypotheses collapsing into one small region?

Read from the ledger alone (every experiment's hypothesis block and decision), so it is the same
after a restart.  Three measures over the newest `window` hypotheses, in PR order:

- `spread`: the mean pairwise distance of their params points (`distance`, fraction 0..1);
- `near_rejected`: the fraction of them within `radius` of a point that an earlier experiment
  was closed on (re-proposing what was rejected);
- `change_similarity`: the mean pairwise similarity of their code-change texts (difflib ratio,
  0..1), for LLM hypotheses that change code rather than params.

`collapsed` when any measure crosses its threshold (`DiversitySettings`).  Then the search runtime
samples at random away from the recent points (`senpai.agents.search.propose`), the LLM advisor's
turn gets `directive` as an explicit instruction, and each hypothesis opened under the alarm
records its reading (`Hypothesis.exploration`), so the event is in the ledger.
"""

import difflib
import itertools
import math

from pydantic import BaseModel, ConfigDict, Field

from senpai.config.harness import DiversitySettings
from senpai.config.target import ParamSpec
from senpai.ledger.experiment import Experiment
from senpai.ledger.labels import ExperimentState

MAX_CHANGE_CHARS = 2_000  # of one change text compared (difflib is quadratic)


class DiversityReading(BaseModel):
    """The alarm's reading over the newest `window` hypotheses; a measure is None when fewer than two
    hypotheses (one, for `near_rejected`) have what it compares."""

    model_config = ConfigDict(frozen=True)
    window: int = Field(description="Hypotheses measured: the newest, at most `DiversitySettings.window`.")
    spread: float | None = Field(description="Mean pairwise params distance, fraction 0..1.")
    near_rejected: float | None = Field(description="Fraction 0..1 within `radius` of an earlier rejected point.")
    change_similarity: float | None = Field(description="Mean pairwise similarity of code-change texts, 0..1.")
    collapsed: bool
    reason: str = Field("", description="Which thresholds were crossed, for people; empty when not collapsed.")

    def directive(self) -> str:
        """The exploration directive for the advisor's next turn (empty when not collapsed)."""
        if not self.collapsed:
            return ""
        return (
            f"Diversity alarm: {self.reason}. Your recent hypotheses sit in one small region. Propose something "
            "different this turn: params far from the recent points and from the rejected ones, or a different "
            "kind of change, and say in the rationale how it explores."
        )


def _unit(value: object, spec: ParamSpec) -> float | None:
    """`value` mapped to 0..1 on `spec`'s scale (log scale when `spec.log`); None if it is not on it."""
    if spec.type == "categorical" or isinstance(value, bool) or not isinstance(value, int | float):
        return None
    low, high, v = float(spec.low), float(spec.high), float(value)
    if spec.log:
        if min(low, v) <= 0:
            return None
        low, high, v = math.log(low), math.log(high), math.log(v)
    return 0.0 if high == low else min(max((v - low) / (high - low), 0.0), 1.0)


def distance(a: dict, b: dict, space: dict[str, ParamSpec]) -> float:
    """Distance between two params points over `space`'s keys, fraction 0..1: the root mean square of
    the per-param distances (numbers on their range's scale, categoricals 0 when equal else 1; a
    value missing from one point or off its scale counts 1 unless both are equal)."""
    if not space:
        return 0.0
    total = 0.0
    for key, spec in space.items():
        x, y = a.get(key), b.get(key)
        ux, uy = _unit(x, spec), _unit(y, spec)
        d = abs(ux - uy) if ux is not None and uy is not None else float(x != y)
        total += d * d
    return math.sqrt(total / len(space))


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _rejected(e: Experiment) -> bool:
    return e.state == ExperimentState.CLOSED and e.decision is not None and e.decision.verdict == "close"


def _ordered(exps: list[Experiment]) -> list[Experiment]:
    """The proposed hypotheses in PR order; a human's `/senpai try` is no proposal of the advisor's."""
    return sorted((e for e in exps if e.hypothesis is not None and e.hypothesis.request is None), key=lambda e: e.pr)


def recent_points(exps: list[Experiment], settings: DiversitySettings) -> list[dict]:
    """The params points a proposal under the alarm keeps away from: the newest `window` hypotheses'
    and every rejected one's."""
    ordered = _ordered(exps)
    recent = ordered[-settings.window :]
    rejected = [e for e in ordered[: len(ordered) - len(recent)] if _rejected(e)]
    return [e.hypothesis.params for e in [*rejected, *recent] if e.hypothesis.params]


def read(exps: list[Experiment], space: dict[str, ParamSpec], settings: DiversitySettings) -> DiversityReading:
    """The reading over `exps` (the ledger's experiments, any order); not collapsed until the window
    holds `settings.window` hypotheses."""
    ordered = _ordered(exps)
    recent = ordered[-settings.window :]
    points = [e.hypothesis.params for e in recent if e.hypothesis.params]
    spread = _mean([distance(a, b, space) for a, b in itertools.combinations(points, 2)])
    older_rejected = [e.hypothesis.params for e in ordered[: len(ordered) - len(recent)] if _rejected(e) and e.hypothesis.params]
    rejected_in_window = [e for e in recent if _rejected(e)]
    near = []
    for e in recent:
        if not e.hypothesis.params:
            continue
        before = older_rejected + [x.hypothesis.params for x in rejected_in_window if x.pr < e.pr and x.hypothesis.params]
        near.append(float(any(distance(e.hypothesis.params, r, space) <= settings.radius for r in before)))
    near_rejected = _mean(near) if older_rejected or rejected_in_window else None
    changes = [e.hypothesis.change[:MAX_CHANGE_CHARS] for e in recent if e.hypothesis.change]
    similarity = _mean([difflib.SequenceMatcher(None, a, b).ratio() for a, b in itertools.combinations(changes, 2)])
    why = []
    if len(recent) >= settings.window:
        if spread is not None and len(points) >= settings.window // 2 + 1 and spread < settings.min_spread:
            why.append(f"params spread {spread:.3f} < {settings.min_spread} over the last {len(points)} points")
        if near_rejected is not None and near_rejected > settings.max_near_rejected:
            why.append(f"{near_rejected:.0%} of the last {len(near)} points within {settings.radius} of a rejected one")
        if similarity is not None and len(changes) >= 2 and similarity > settings.max_change_similarity:
            why.append(f"code changes {similarity:.0%} alike over the last {len(changes)}")
    return DiversityReading(
        window=len(recent),
        spread=spread,
        near_rejected=near_rejected,
        change_similarity=similarity,
        collapsed=bool(why),
        reason="; ".join(why),
    )
