"""Propose the next points of the search space, seeded, never repeating a point: first a scrambled
Sobol sequence (Optuna's QMCSampler, categoricals included), then Optuna's multivariate TPE; under
the diversity alarm, Optuna's random sampler away from the recent points instead.

- **Startup.** Every turn walks the same Sobol sequence from its start and takes the first untried
  points, so the startup points are spread by construction and ignore the values; each categorical
  is drawn as the index of its choice, so it is spread too.  On digits (7 params) the first 8 points
  hold every activation and every batch size; the earlier start (TPE with 4 random startup trials)
  drew batch size 128 for all four, and TPE then kept it (issue 25).
- **History.** Every point tried (and the current baseline's) is told to the study with its
  validation value: finite makes a COMPLETE trial, anything else a FAIL one.  Holdout values never
  reach the proposer.  A point of an older search space is remembered for deduplication, not fed.
- **Floats** are rounded to 4 significant digits, kept inside their range.
- **Deduplication.** A sample whose canonical JSON matches a point tried, or one already proposed
  in the batch, is told FAIL and drawn again, up to `tries` (50) times; then PermanentError (the
  space is exhausted).  Under the alarm every draw is told FAIL, so TPE learns nothing from it.
"""

import json
import logging
import math
import sys
import warnings

from senpai.config.target import Metric, ParamSpec
from senpai.errors import PermanentError
from senpai.ledger.diversity import distance

# Optuna imports redis, if installed (litellm brings it), for a journal storage senpai never uses:
# half of Optuna's import, 0.1 s of CPU in every proposal. `import redis` fails during Optuna's
# import only (its optional-import guard then leaves that storage unusable); redis is importable after.
_hide_redis = "redis" not in sys.modules
if _hide_redis:
    sys.modules["redis"] = None  # type: ignore[assignment]
try:
    import optuna
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
finally:
    if _hide_redis:
        del sys.modules["redis"]

optuna.logging.set_verbosity(optuna.logging.WARNING)
log = logging.getLogger(__name__)
Point = dict[str, str | int | float | bool]


def startup_size(space: dict[str, ParamSpec]) -> int:
    """Points tried before TPE models the results: Optuna's default 10, or one more than the
    space's dimension where that is larger."""
    return max(10, len(space) + 1)


def distribution(spec: ParamSpec):
    if spec.type == "int":
        return IntDistribution(spec.low, spec.high, log=spec.log)
    if spec.type == "float":
        return FloatDistribution(spec.low, spec.high, log=spec.log)
    return CategoricalDistribution(spec.choices)


def _tidy(value, dist):
    """Round floats to 4 significant digits (kept inside the range) so points read well and dedupe."""
    if isinstance(dist, FloatDistribution) and value != 0:
        rounded = float(f"{value:.4g}")
        return rounded if dist.low <= rounded <= dist.high else value
    return value


def point_key(point: dict) -> str:
    return json.dumps(point, sort_keys=True)


def propose(
    space: dict[str, ParamSpec],
    metric: Metric,
    history: list[tuple[Point, float | None]],
    n: int,
    seed: int,
    tries: int = 50,
    avoid: list[Point] = (),
    radius: float = 0.0,
) -> list[Point]:
    """`n` new points. `history` holds every point tried so far, with its metric (None: no value,
    failed or still running).  While fewer than `startup_size(space)` points of this space are
    known, the points come from the Sobol sequence of `seed` (the first untried ones); after that
    from multivariate TPE, which learns from those values.  The samplers are seeded with `seed` (and
    the history size), so a replayed turn proposes the same points.  With `avoid` (the diversity
    alarm's recent and rejected points), the sampler is Optuna's RandomSampler, which TPE's
    exploitation cannot pull back into the collapsed region, and a point within `radius`
    (`senpai.ledger.diversity.distance`) of one of them is drawn again, up to `tries` times (then
    the farthest draw is kept).  Raises PermanentError if the space has no untried point left."""
    dists = {k: distribution(s) for k, s in space.items()}
    known = [({k: v for k, v in params.items() if k in dists}, value) for params, value in history]
    tried = {point_key(p) for p, _ in known}
    fed = [(p, v) for p, v in known if len(p) == len(dists)]  # a point of an older space: remembered, not fed
    if avoid:
        study, ask = _study(metric, optuna.samplers.RandomSampler(seed=seed + len(history)), dists, fed)
    elif len(fed) < startup_size(space):
        study, ask = _sobol(dists, seed)
    else:
        with warnings.catch_warnings(action="ignore", category=optuna.exceptions.ExperimentalWarning):
            tpe = optuna.samplers.TPESampler(seed=seed + len(history), n_startup_trials=0, multivariate=True)
        study, ask = _study(metric, tpe, dists, fed)
    points: list[Point] = []
    for _ in range(n):
        best: tuple[float, Point] | None = None
        for _ in range(tries):
            trial = study.ask(ask)
            point = {k: _tidy(dists[k].choices[v] if ask[k] is not dists[k] else v, dists[k]) for k, v in trial.params.items()}
            study.tell(trial, state=optuna.trial.TrialState.FAIL)  # a draw, not a result: TPE learns nothing from it
            if point_key(point) in tried:
                continue
            away = min((distance(point, a, space) for a in [*avoid, *points]), default=1.0) if avoid else 1.0
            if best is None or away > best[0]:
                best = (away, point)
            if away > radius:
                break
        if best is None:
            raise PermanentError(f"no untried point found in {tries} samples: the search space looks exhausted")
        tried.add(point_key(best[1]))
        points.append(best[1])
    return points


def _study(metric: Metric, sampler, dists: dict, fed: list[tuple[dict, float | None]]):
    """An in-memory study of `sampler` that knows every point of `fed` (a value that is None or not
    finite: a failed trial); the distributions to ask with."""
    study = optuna.create_study(direction="maximize" if metric.direction == "maximize" else "minimize", sampler=sampler)
    for params, value in fed:
        ok = value is not None and math.isfinite(value)
        state = optuna.trial.TrialState.COMPLETE if ok else optuna.trial.TrialState.FAIL
        study.add_trial(optuna.trial.create_trial(params=params, distributions=dists, value=value if ok else None, state=state))
    return study, dists


def _sobol(dists: dict, seed: int):
    """A study that draws the scrambled Sobol sequence of `seed` from its start, every categorical as
    the index of its choice (QMCSampler alone would draw categoricals at random): the same sequence
    every turn, so the points already tried are skipped and the startup points are spread by
    construction.  Needs no history."""
    ask = {k: IntDistribution(0, len(d.choices) - 1) if isinstance(d, CategoricalDistribution) else d for k, d in dists.items()}
    with warnings.catch_warnings(action="ignore", category=optuna.exceptions.ExperimentalWarning):
        sampler = optuna.samplers.QMCSampler(qmc_type="sobol", scramble=True, seed=seed, warn_independent_sampling=False)
    return optuna.create_study(sampler=sampler), ask


def neighbours(space: dict[str, ParamSpec], point: Point, n: int, tried: list[Point] = ()) -> list[Point]:
    """Up to `n` points next to `point`, each one step away in one param (params in name order, up
    then down: a tenth of the range, of its log range for a log param, at least 1 for an int; the
    next or previous choice of a categorical), kept inside the space, never `point`, a point in
    `tried` or each other; each holds only the param it moves.  Fewer if the space has no more."""
    seen = {point_key({k: v for k, v in p.items() if k in space}) for p in [*tried, point]}
    out: list[Point] = []
    for name in sorted(k for k in space if k in point):
        for sign in (1, -1):
            moved = {**point, name: _step(space[name], point[name], sign)}
            key = point_key({k: v for k, v in moved.items() if k in space})
            if len(out) < n and key not in seen:
                seen.add(key)
                out.append({name: moved[name]})
    return out


def _step(spec: ParamSpec, value, sign: int):
    """`value` moved one step in direction `sign` (see `neighbours`), clipped to the range."""
    if spec.type == "categorical":
        i = spec.choices.index(value) if value in spec.choices else 0
        return spec.choices[min(max(i + sign, 0), len(spec.choices) - 1)]
    if spec.log:
        moved = value * (spec.high / spec.low) ** (sign / 10)
    else:
        moved = value + sign * (spec.high - spec.low) / 10
    if spec.type == "int":
        moved = value + sign * max(1, abs(round(moved) - value))
    moved = min(max(moved, spec.low), spec.high)
    return moved if spec.type == "int" else _tidy(moved, distribution(spec))
