"""What each holdout delta was measured against, and what each experiment changed.

A verifier's delta (`Verification.improvement`) is a difference against one base commit, and the
base moves with every merge. An open PR verified before a merge still carries its gain over the old
base, often larger than the merged one's, yet not comparable with it (issue 27: +0.175 to +0.216
shown beside a merge's +0.143; one re-checked against the new base gave +0.032). So every view that
shows a delta names its base (`Delta.label`), and marks a delta stale when it was measured against
a base that is no longer the current one, on a PR not merged. A merged PR's delta is the gain its
merge made over the base of its time: named, never stale.

`change` says what an experiment changed: its params against its base's (keys changed, old -> new),
or, for a code change, the files its verification measured. All of it is read from the ledger alone.
"""

from pydantic import BaseModel, ConfigDict, Field

from senpai.ledger.blocks import Scalar, Verification
from senpai.ledger.experiment import Experiment, finite_or_none
from senpai.ledger.labels import ExperimentState

SHA_CHARS = 8  # of a base no merge made, as its name
VALUE_CHARS = 24  # of a param's value in `Change.text`
CODE_CHARS = 60  # of a code change's prose in `Change.text`
PATH_CHARS = 48  # of a changed file's path in `Change.text`


class Delta(BaseModel):
    """An experiment's holdout delta and the base it was measured against."""

    model_config = ConfigDict(frozen=True)
    improvement: float | None = Field(description="Signed so that positive is better; None: not finite.")
    noise_floor: float | None
    passed: bool
    base: str = Field(description="The base commit the verifier measured it against (`Verification.baseline`).")
    base_name: str = Field(description="`#N` where PR #N's merge made that base, else its first 8 hex digits.")
    stale: bool = Field(description="Against a base that is no longer the current one, on a PR not merged.")

    @property
    def label(self) -> str:
        """`vs #2`, or `vs old base #1` for a stale delta."""
        return f"vs old base {self.base_name}" if self.stale else f"vs {self.base_name}"


def measured(e: Experiment) -> Verification | None:
    """The verification whose numbers `e` shows: its latest that measured something (a refusal for
    a conflict with a moved base has no numbers), else its latest; None before any."""
    numbers = [v for v in e.verifications if v.improvement is not None and not v.conflict]
    return numbers[-1] if numbers else (e.verifications[-1] if e.verifications else None)


def base_names(exps: list[Experiment]) -> dict[str, str]:
    """Merge commit -> `#N`, for every merged PR of `exps`."""
    return {e.merge_commit: f"#{e.pr}" for e in exps if e.state == ExperimentState.MERGED and e.merge_commit}


def base_name(commit: str, names: dict[str, str]) -> str:
    """`names`' name of `commit` (`base_names`), else its first SHA_CHARS hex digits."""
    return names.get(commit, commit[:SHA_CHARS])


def delta(e: Experiment, names: dict[str, str], current: str | None) -> Delta | None:
    """`e`'s holdout delta (`measured`) against its base; `names`: `base_names` of the ledger;
    `current`: the base branch head now (None: unknown, so nothing is marked stale). None if `e`
    was never verified."""
    v = measured(e)
    if v is None:
        return None
    stale = current is not None and v.baseline != current and e.state != ExperimentState.MERGED
    return Delta(
        improvement=finite_or_none(v.improvement),
        noise_floor=finite_or_none(v.noise_floor),
        passed=v.passed,
        base=v.baseline,
        base_name=base_name(v.baseline, names),
        stale=stale,
    )


def base_params(exps: list[Experiment]) -> dict[str, dict[str, Scalar]]:
    """Base commit -> its params as far as the ledger tells them: the measured start's (an
    experiment that `measures_base` runs the base's own params), and each merge commit's, the params
    of the base it landed on with the merged PR's own written over them. A base the ledger says
    nothing about is absent."""
    known = {h.baseline.commit: h.params for e in exps if (h := e.hypothesis) and h.measures_base}
    merged = {e.merge_commit: e for e in exps if e.state == ExperimentState.MERGED and e.merge_commit}

    def at(commit: str, seen: frozenset[str]) -> dict[str, Scalar] | None:
        e = merged.get(commit)
        if e is None or commit in seen:
            return known.get(commit)
        onto = next((d.merged_onto or d.base for d in reversed(e.decisions) if d.verdict == "merge"), None)
        onto = onto or (e.hypothesis.baseline.commit if e.hypothesis else None)
        below = at(onto, seen | {commit}) if onto else None
        return {**(below or {}), **params_of(e)}

    return {c: p for c in {*known, *merged} if (p := at(c, frozenset())) is not None}


def params_of(e: Experiment) -> dict[str, Scalar]:
    """The params `e` sets: its hypothesis's, with the winning arm's over them (`Evidence.arm`)."""
    h = e.hypothesis
    if h is None:
        return {}
    won = next((ev.arm for ev in reversed(e.evidence) if ev.outcome == "ok" and ev.arm), None)
    arm = next((a for a in h.arms or [] if a.name == won), None)
    return h.arm_params(arm) if arm else dict(h.params)


class Change(BaseModel):
    """What an experiment changed against its base: params (key, old value or None where the
    ledger does not know the base's, new value) in name order, or the files of a code change."""

    model_config = ConfigDict(frozen=True)
    params: list[tuple[str, Scalar | None, Scalar]] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)
    code: str = Field("", description="A code change with no file list yet: the hypothesis's `change`, in prose.")
    base: str | None = Field(None, description="The base commit the params are compared with.")
    measures_base: bool = False
    same: bool = Field(False, description="It sets params, each to its base's value.")

    def text(self, limit: int = 3) -> str:
        """One line for a table: at most `limit` items, then how many more (`lr 0.001 -> 0.01, width=64,
        +2 more`; a param whose old value is unknown shows as `key=new`)."""
        if self.measures_base:
            return "the base itself"
        items = [f"{k} {_show(old)} -> {_show(new)}" if old is not None else f"{k}={_show(new)}" for k, old, new in self.params]
        items = items or [_clip(f"files: {f}" if i == 0 else f, PATH_CHARS) for i, f in enumerate(self.files)]
        if not items:
            return f"code: {_clip(self.code, CODE_CHARS)}" if self.code else "no param changed" if self.same else ""
        more = len(items) - limit
        return ", ".join(items[:limit]) + (f", +{more} more" if more > 0 else "")


def change(e: Experiment, params_by_base: dict[str, dict[str, Scalar]]) -> Change:
    """What `e` changed (`Change`): its params (`params_of`) against those of its base (the base its
    delta names, else the one it was re-applied onto, else the one it was cut from), taken from
    `params_by_base` (`base_params`); else the files its verification measured."""
    h = e.hypothesis
    if h is None:
        return Change()
    v = measured(e)
    base = v.baseline if v else e.reapplies[-1].base if e.reapplies else h.baseline.commit
    if h.measures_base:
        return Change(base=base, measures_base=True)
    mine, theirs = params_of(e), params_by_base.get(base, {})
    diff = [(k, theirs.get(k), mine[k]) for k in sorted(mine) if k not in theirs or theirs[k] != mine[k]]
    files = list(v.files) if v and not mine else []
    code = h.change or "" if not mine and not files else ""
    return Change(params=diff, files=files, code=code, base=base, same=bool(mine) and not diff)


def _show(value: Scalar) -> str:
    return _clip(f"{value:.4g}" if isinstance(value, float) else str(value), VALUE_CHARS)


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
