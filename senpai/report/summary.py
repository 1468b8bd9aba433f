"""What `senpai report` shows, computed from the ledger alone (experiments read from the forge, runs
from the tracker): the baseline over verified merges, each experiment's numbers, what was spent,
and the rejected hypotheses with their reasons.

Every text here comes from the forge or W&B, so it is hostile: `clip` bounds it (one line, at most
`limit` characters) and `safe_url` keeps only http(s) links.  Escaping is the renderer's job
(jinja2's autoescape for HTML, `comments.cell` for Markdown).
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from senpai.ledger.baseline import best_merge, merges
from senpai.ledger.blocks import Hypothesis, Scalar, TurnCost, Verification
from senpai.ledger.deltas import base_names, base_params, change, delta, measured
from senpai.ledger.experiment import Experiment, finite_or_none, holdout_verdicts
from senpai.ledger.labels import ExperimentState
from senpai.ledger.spend import Spend, experiment_spend, spend

TITLE_CHARS = 120  # a PR title in a table cell
TEXT_CHARS = 400  # a hypothesis or a decision's reason
URL_CHARS = 500

Outcome = Literal["merged", "closed", "failed", "open"]


def clip(text: str | None, limit: int) -> str:
    """`text` on one line, at most `limit` characters (a cut ends with "…"); "" for None."""
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def safe_url(url: str | None) -> str | None:
    """`url` if it is an http(s) URL of at most URL_CHARS characters with no space, quote or angle
    bracket (a forge or W&B link), else None: a `javascript:` link never reaches a page."""
    if not url or len(url) > URL_CHARS or not url.startswith(("https://", "http://")):
        return None
    return None if any(c in url for c in " \t\r\n\"'<>`()\\") else url


@dataclass(frozen=True)
class Bases:
    """What the rows need to know of the bases: `deltas.base_names`, `deltas.base_params` and the
    base branch head now (`current`; None: unknown)."""

    names: dict[str, str] = field(default_factory=dict)
    params: dict[str, dict[str, Scalar]] = field(default_factory=dict)
    current: str | None = None

    @classmethod
    def of(cls, exps: list[Experiment], current: str | None) -> "Bases":
        return cls(base_names(exps), base_params(exps), current)


class RunLink(BaseModel):
    model_config = ConfigDict(frozen=True)
    id: str
    url: str | None


class Row(BaseModel):
    """One experiment as the report shows it. `value`/`baseline`: the student's latest ok evidence
    (validation), in metric units; `improvement`/`floor`: the PR's last verification that measured
    (not one refused for a conflict: `deltas.measured`), on the sealed holdout, signed so that
    positive is better, and its noise floor (None for the test rules), the base it was measured
    against (`vs`: `Delta.label`) and whether that base is an old one (`stale`), and both sides'
    mean compute figure per seed (`holdout.compute.key`, e.g. epochs; None where not counted on
    every seed); `params`: `k=v` by name; `change`: what it changed against its base (`deltas.change`)."""

    model_config = ConfigDict(frozen=True)
    pr: int
    url: str | None
    title: str
    student: str
    outcome: Outcome
    state: str
    hypothesis: str
    params: str
    value: float | None
    baseline: float | None
    improvement: float | None
    floor: float | None
    vs: str = ""  # the base of `improvement`: "vs #2", "vs old base #1"; "" before a verification
    stale: bool = False  # `improvement` is against a base that is no longer the current one (PR not merged)
    change: str = ""
    compute: float | None = None  # that verification's mean compute figure per candidate seed (holdout.compute.key)
    base_compute: float | None = None  # ... and per baseline seed
    passed: bool | None
    verdict: str | None
    reason: str
    failure: str
    exploration: str = ""  # the diversity alarm's reading when it was proposed under the alarm
    runs: list[RunLink]
    spend: Spend


class Step(BaseModel):
    """The baseline after a verified merge (`pr`; None: the base before the first merge), as the
    verifier measured it on the holdout (mean over seeds)."""

    model_config = ConfigDict(frozen=True)
    pr: int | None
    value: float
    url: str | None = None


class Summary(BaseModel):
    """The whole report: `rows` oldest PR first, `steps` in merge order."""

    model_config = ConfigDict(frozen=True)
    repo: str
    generated_at: str
    metric: str | None
    holdout_metric: str | None
    direction: Literal["maximize", "minimize"] | None
    holdout_direction: Literal["maximize", "minimize"] | None = None  # the newest verification's; None: none yet
    rows: list[Row]
    steps: list[Step]
    best: Step | None = None  # the current best (`senpai.ledger.baseline.best_merge`); None: no merge measured
    counts: dict[str, int]
    total: Spend

    @property
    def better(self) -> str:
        """Which way the (validation) metric is better, in words."""
        return _better(self.direction)

    @property
    def holdout_better(self) -> str:
        """Which way the holdout metric is better, in words (the metric's way before any verification)."""
        return _better(self.holdout_direction or self.direction)

    @property
    def merges(self) -> int:
        return len([s for s in self.steps if s.pr is not None])

    @property
    def per_improvement(self) -> Spend | None:
        """Total spend divided by the verified merges; None before the first."""
        return self.total.per(self.merges) if self.merges else None

    @property
    def per_compute(self) -> float | None:
        """Holdout improvement per unit of compute (`holdout.compute.key`) over the verified
        merges: the sum of the merged rows' verified improvements over the sum of their mean
        compute figures per seed (signed: positive is better); None before a merge, or when a
        merge's compute was not counted."""
        merged = [r for r in self.rows if r.outcome == "merged" and r.improvement is not None]
        if not merged or any(r.compute is None for r in merged) or not sum(r.compute for r in merged):  # type: ignore[misc]
            return None
        return sum(r.improvement for r in merged) / sum(r.compute for r in merged)  # type: ignore[misc]

    @property
    def explored(self) -> list[Row]:
        """The experiments proposed under the diversity alarm (`senpai.ledger.diversity`)."""
        return [r for r in self.rows if r.exploration]

    @property
    def rejected(self) -> list[Row]:
        return [r for r in self.rows if r.outcome in ("closed", "failed")]

    @property
    def stale(self) -> list[Row]:
        """The rows whose holdout delta is against an old base: named in the tables, left out of the chart."""
        return [r for r in self.rows if r.stale and r.improvement is not None]


def outcome(e: Experiment) -> Outcome:
    """merged; failed (no attempt produced a result); closed; else open."""
    if e.state == ExperimentState.MERGED:
        return "merged"
    if e.evidence and all(ev.outcome == "failed" for ev in e.evidence) and e.state == ExperimentState.CLOSED:
        return "failed"
    return "closed" if e.state == ExperimentState.CLOSED else "open"


def _params(h: Hypothesis | None) -> str:
    if h is None:
        return ""
    return " ".join(f"{k}={v}" for k, v in sorted(h.params.items())) if h.params else h.change or ""


def _reason(e: Experiment, v: Verification | None) -> str:
    """The decision's reason (naming the human approval a merge consumed), else why it waits: for a
    human's approval, or the verifier's refusal."""
    d = e.decision
    if d is not None:
        return d.reason + (f" (approved by a human: fingerprint {d.approval})" if d.approval else "")
    if (r := e.pending_approval()) is not None:
        return f"waiting for a human's `/senpai approve {r.fingerprint}`: {'; '.join(r.reasons)}"
    return v.reason if v and not v.passed else ""


def row(e: Experiment, cores: int = 1, bases: Bases | None = None) -> Row:
    """`e` as the report shows it; `cores`: the CPU cores of each job of its student (`experiment_spend`);
    `bases`: what names its delta's base and tells its change (`Bases.of` the whole ledger)."""
    bases = bases or Bases()
    ok = [ev for ev in e.evidence if ev.outcome == "ok"]
    failed = [ev for ev in e.evidence if ev.outcome == "failed"]
    v = measured(e)
    dv = delta(e, bases.names, bases.current)
    d = e.decision
    urls = {r.id: r.url for r in e.runs}
    runs = [RunLink(id=clip(r.id, 64), url=safe_url(urls.get(r.id) or r.url)) for ev in e.evidence for r in ev.runs]
    h = e.hypothesis
    return Row(
        pr=e.pr,
        url=safe_url(e.url),
        title=clip(e.title, TITLE_CHARS),
        student=clip(e.student, 40),
        outcome=outcome(e),
        state=str(e.state),
        hypothesis=clip(h.hypothesis if h else e.error, TEXT_CHARS),
        params=clip(_params(h), TITLE_CHARS),
        value=e.primary_value(),
        baseline=finite_or_none(ok[-1].primary.baseline) if ok else None,
        improvement=dv.improvement if dv else None,
        floor=dv.noise_floor if dv else None,
        vs=dv.label if dv else "",
        stale=dv.stale if dv else False,
        change=clip(change(e, bases.params).text(), TITLE_CHARS),
        compute=_mean_compute(v.candidate_compute, v.candidate_values) if v else None,
        base_compute=_mean_compute(v.baseline_compute, v.baseline_values) if v else None,
        passed=v.passed if v else None,
        verdict=d.verdict if d else None,
        reason=clip(_reason(e, v), TEXT_CHARS),
        failure=clip(failed[-1].failure if failed and not ok else "", TEXT_CHARS),
        exploration=clip(h.exploration if h else "", TEXT_CHARS),
        runs=runs[-5:],
        spend=experiment_spend(e, cores),
    )


def _mean_compute(figures: list[float], values: list[float]) -> float | None:
    """The mean compute figure per seed, if one was counted for every seed measured; else None."""
    if not figures or len(figures) != len(values):
        return None
    return finite_or_none(sum(figures) / len(figures))


def _better(direction: str | None) -> str:
    return {"maximize": "higher is better", "minimize": "lower is better"}.get(direction or "", "")


def steps(exps: list[Experiment]) -> list[Step]:
    """The baseline over time: the base before the first verified merge (the baseline mean of that
    merge's verification), then each verified merge's candidate mean, in merge order
    (`senpai.ledger.baseline.merges`: hand merges have no measured value and are left out)."""
    out: list[Step] = []
    for m in merges(exps):
        if not out and m.base_value is not None:
            out.append(Step(pr=None, value=m.base_value))
        if m.value is not None:
            out.append(Step(pr=m.pr, value=m.value, url=safe_url(m.url)))
    if not out:  # no merge yet: the base as the first verification measured it
        first = next((v for e in exps for v in e.verifications if finite_or_none(v.baseline_mean) is not None), None)
        out = [Step(pr=None, value=first.baseline_mean)] if first else []
    return out


def summarise(
    exps: list[Experiment],
    repo: str,
    now: datetime | None = None,
    cpus: Mapping[str, int] | None = None,
    turns: Iterable[TurnCost] = (),
    base: str | None = None,
) -> Summary:
    """The report of `exps` (`LedgerReader.experiments()`, oldest PR first) of repository `repo`;
    `cpus`: student name -> CPU cores of each of its jobs (harness `students`; absent: 1); `turns`:
    the advisor's turn records on the steering issues (`SteerState.advisor_turns`), in the total;
    `base`: the base branch head now (None: unknown, no delta is marked stale). The metric and its
    direction are the newest hypothesis's, the holdout metric and its direction the newest
    verification's; the best is `best_merge`'s, on the holdout."""
    cpus = cpus or {}
    bases = Bases.of(exps, base)
    rows = [row(e, cpus.get(e.student or "", 1), bases) for e in exps]
    hyps = [e.hypothesis for e in exps if e.hypothesis]
    verifs = [v for e in exps for v in e.verifications]
    counts = {k: sum(r.outcome == k for r in rows) for k in ("merged", "closed", "failed", "open")}
    best = best_merge(exps)
    return Summary(
        repo=clip(repo, 100),
        generated_at=(now or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC"),
        metric=clip(hyps[-1].metric.name, 60) if hyps else None,
        holdout_metric=clip(verifs[-1].metric, 60) if verifs else None,
        direction=hyps[-1].metric.direction if hyps else None,
        holdout_direction=verifs[-1].direction if verifs else None,
        rows=rows,
        steps=steps(exps),
        best=Step(pr=best.pr, value=best.value, url=safe_url(best.url)) if best else None,
        counts={"experiments": len(rows), **counts, "holdout_verdicts": holdout_verdicts(exps)},
        total=spend(exps, cpus, turns),
    )
