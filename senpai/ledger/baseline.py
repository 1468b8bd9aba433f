"""The current baseline: the base branch head and what the ledger knows about its metric; the
verified merges in merge order, and the best of them on the holdout (the current best)."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from senpai.ledger.consistency import seen_bases, verified_merge
from senpai.ledger.experiment import Experiment, finite_or_none


class Baseline(BaseModel):
    model_config = ConfigDict(frozen=True)
    commit: str
    pr: int | None
    run_id: str | None
    value: float | None
    params: dict | None


def current_baseline(exps: list[Experiment], base_sha: str) -> Baseline:
    """The verified merge (see `consistency.verified_merge`) whose merge commit is the base head, if any.

    Merges are the only way the base moves during research, so the base head is the merge commit
    of the last merge.  Else, the validation value of the oldest experiment that measured this
    base itself (`Hypothesis.measures_base`, the measured start: pr None), as the advisor's closing
    decision recorded it (`candidate`: it takes none from a head whose tree is not the base's). A base moved by hand,
    or by a merge made by hand (no merge decision or no passing verification), and not measured,
    has no value (None) until the next verified merge: its code is not what any verification measured.
    """
    bases = seen_bases(exps)
    for e in exps:
        if e.merge_commit == base_sha and verified_merge(e, bases):
            params = e.hypothesis.params if e.hypothesis else None
            return Baseline(commit=base_sha, pr=e.pr, run_id=_run_of(e), value=e.primary_value(), params=params)
    measured = [e for e in exps if e.hypothesis and e.hypothesis.measures_base and e.hypothesis.baseline.commit == base_sha]
    for e in sorted(measured, key=lambda e: e.pr):
        d = e.decision  # the advisor's, who took the value only from a head with the base's tree
        if d is not None and d.verdict == "close" and (value := finite_or_none(d.candidate)) is not None:
            return Baseline(commit=base_sha, pr=None, run_id=_run_of(e), value=value, params=e.hypothesis.params)
    return Baseline(commit=base_sha, pr=None, run_id=None, value=None, params=None)


def measuring_base(exps: list[Experiment], base_sha: str, resolved: frozenset[int] = frozenset()) -> bool:
    """True if an experiment measuring the base `base_sha` on validation was opened (any state),
    other than the PRs in `resolved`: failed measurements whose humans' issue was closed
    (`basefails.resolved`), after which the same base is measured again. A failed measurement
    otherwise blocks its base (`basefails.blocking`) until the base moves."""
    return any(
        e.hypothesis and e.hypothesis.measures_base and e.hypothesis.baseline.commit == base_sha and e.pr not in resolved
        for e in exps
    )


def _run_of(e: Experiment) -> str | None:
    ok = [ev for ev in e.evidence if ev.outcome == "ok"]
    return ok[-1].runs[-1].id if ok and ok[-1].runs else None


class Merge(BaseModel):
    """A verified merge as the verifier measured it on the sealed holdout: the last passing
    verification of the merged head, in that verification's metric and direction."""

    model_config = ConfigDict(frozen=True)
    pr: int
    url: str
    metric: str
    direction: Literal["maximize", "minimize"]
    value: float | None = Field(description="Holdout mean of the merged head; None: not finite.")
    base_value: float | None = Field(description="Holdout mean of the base it was measured against; None: not finite.")


def merges(exps: list[Experiment]) -> list[Merge]:
    """Every verified merge (`consistency.verified_merge`: a hand merge has no measured value and is
    left out), in merge order. Merge order follows the decisions: a merge that landed on another's
    merge commit comes after it (ties by PR number)."""
    bases = seen_bases(exps)
    merged = {e.merge_commit: e for e in exps if verified_merge(e, bases)}

    def depth(e: Experiment, seen: int = 0) -> int:
        onto = next((d.merged_onto or d.base for d in reversed(e.decisions) if d.verdict == "merge"), None)
        parent = merged.get(onto)
        return 0 if parent is None or seen > len(merged) else 1 + depth(parent, seen + 1)

    out = []
    for e in sorted(merged.values(), key=lambda e: (depth(e), e.pr)):
        v = next(v for v in reversed(e.verifications) if v.passed and v.candidate == e.head)
        out.append(
            Merge(
                pr=e.pr, url=e.url, metric=v.metric, direction=v.direction,
                value=finite_or_none(v.candidate_mean), base_value=finite_or_none(v.baseline_mean),
            )
        )  # fmt: skip
    return out


def best_merge(exps: list[Experiment]) -> Merge | None:
    """The current best: the verified merge (`merges`) whose holdout value is best in its metric's
    direction, the later merge on a tie; None if no merge was measured. Holdout values of different
    merges are comparable (one sealed holdout); their improvements are not (each is against the
    base of its time), so the best is usually, not always, the last merge."""
    measured = [m for m in reversed(merges(exps)) if m.value is not None]
    return max(measured, key=lambda m: m.value if m.direction == "maximize" else -m.value, default=None)  # type: ignore[operator]
