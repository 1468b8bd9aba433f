"""What `senpai report` shows, computed from the ledger alone (experiments read from the forge, runs
from the tracker): the baseline over verified merges, each experiment's numbers, what was spent,
and the rejected hypotheses with their reasons.

Every text here comes from the forge or W&B, so it is hostile: `clip` bounds it (one line, at most
`limit` characters) and `safe_url` keeps only http(s) links.  Escaping is the renderer's job
(jinja2's autoescape for HTML, `markdown_cell` for Markdown).
"""

import math
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from senpai.ledger.blocks import Hypothesis, Verification
from senpai.ledger.consistency import seen_bases, verified_merge
from senpai.ledger.experiment import Experiment
from senpai.ledger.labels import ExperimentState

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


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


class Spend(BaseModel):
    """Seconds, tokens and dollars, by role: student (evidence `cost.wall_seconds`, its GPU seconds,
    tokens and dollars), verifier (train-step seconds of each side's seeds, reused baseline seeds
    not counted twice) and advisor (only advisor turns that ran out of budget post what they spent:
    `senpai-budget` records on the PR)."""

    model_config = ConfigDict(frozen=True)
    student_seconds: float = 0.0
    gpu_seconds: float = 0.0
    verifier_seconds: float = 0.0
    advisor_seconds: float = 0.0
    tokens: int = 0
    dollars: float = 0.0

    @property
    def seconds(self) -> float:
        return self.student_seconds + self.verifier_seconds + self.advisor_seconds

    def __add__(self, other: "Spend") -> "Spend":
        return Spend(**{k: getattr(self, k) + getattr(other, k) for k in Spend.model_fields})

    def per(self, n: int) -> "Spend":
        """This spend divided by `n` (> 0)."""
        return Spend(**{k: getattr(self, k) / n for k in Spend.model_fields if k != "tokens"}, tokens=round(self.tokens / n))


class RunLink(BaseModel):
    model_config = ConfigDict(frozen=True)
    id: str
    url: str | None


class Row(BaseModel):
    """One experiment as the report shows it. `value`/`baseline`: the student's latest ok evidence
    (validation), in metric units; `improvement`/`floor`: the PR's last verification that measured
    (not one refused for a conflict), on the sealed holdout, signed so that positive is better, and
    its noise floor (None for the test rules); `params`: `k=v` by name."""

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
    rows: list[Row]
    steps: list[Step]
    counts: dict[str, int]
    total: Spend

    @property
    def better(self) -> str:
        return {"maximize": "higher is better", "minimize": "lower is better"}.get(self.direction or "", "")

    @property
    def best(self) -> Step | None:
        """The current baseline: the last verified merge (each merge beat the one before it)."""
        return self.steps[-1] if self.steps and self.steps[-1].pr is not None else None

    @property
    def merges(self) -> int:
        return len([s for s in self.steps if s.pr is not None])

    @property
    def per_improvement(self) -> Spend | None:
        """Total spend divided by the verified merges; None before the first."""
        return self.total.per(self.merges) if self.merges else None

    @property
    def explored(self) -> list[Row]:
        """The experiments proposed under the diversity alarm (`senpai.ledger.diversity`)."""
        return [r for r in self.rows if r.exploration]

    @property
    def rejected(self) -> list[Row]:
        return [r for r in self.rows if r.outcome in ("closed", "failed")]


def outcome(e: Experiment) -> Outcome:
    """merged; failed (no attempt produced a result); closed; else open."""
    if e.state == ExperimentState.MERGED:
        return "merged"
    if e.evidence and all(ev.outcome == "failed" for ev in e.evidence) and e.state == ExperimentState.CLOSED:
        return "failed"
    return "closed" if e.state == ExperimentState.CLOSED else "open"


def spend(e: Experiment) -> Spend:
    """What experiment `e` spent, by role (see `Spend`)."""
    verifier = 0.0
    for v in e.verifications:
        reused = set(v.baseline_reused)
        verifier += sum(v.candidate_seconds)
        verifier += sum(s for seed, s in zip(v.seeds, v.baseline_seconds, strict=False) if seed not in reused)
    advisor = [b.spent for b in e.budget_reports if b.role == "advisor"]
    return Spend(
        student_seconds=sum(ev.cost.wall_seconds for ev in e.evidence),
        gpu_seconds=sum(ev.cost.gpu_seconds for ev in e.evidence),
        verifier_seconds=verifier,
        advisor_seconds=sum(u.wall_seconds for u in advisor),
        tokens=sum(ev.cost.tokens for ev in e.evidence) + sum(u.tokens for u in advisor),
        dollars=sum(ev.cost.dollars for ev in e.evidence) + sum(u.dollars for u in advisor),
    )


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


def row(e: Experiment) -> Row:
    ok = [ev for ev in e.evidence if ev.outcome == "ok"]
    failed = [ev for ev in e.evidence if ev.outcome == "failed"]
    # the latest verification that measured something (a refusal for a conflict with a moved base has no numbers)
    measured = [v for v in e.verifications if v.improvement is not None and not v.conflict]
    v = measured[-1] if measured else (e.verifications[-1] if e.verifications else None)
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
        baseline=_finite(ok[-1].primary.baseline) if ok else None,
        improvement=_finite(v.improvement) if v else None,
        floor=_finite(v.noise_floor) if v else None,
        passed=v.passed if v else None,
        verdict=d.verdict if d else None,
        reason=clip(_reason(e, v), TEXT_CHARS),
        failure=clip(failed[-1].failure if failed and not ok else "", TEXT_CHARS),
        exploration=clip(h.exploration if h else "", TEXT_CHARS),
        runs=runs[-5:],
        spend=spend(e),
    )


def steps(exps: list[Experiment]) -> list[Step]:
    """The baseline over time: the base before the first verified merge (the baseline mean of that
    merge's verification), then each verified merge's candidate mean, in merge order.  Merge order
    follows the decisions: a merge that landed on another's merge commit comes after it (ties by
    PR number).  Hand merges (`consistency.verified_merge` false) have no measured value: left out."""
    bases = seen_bases(exps)
    merged = {e.merge_commit: e for e in exps if verified_merge(e, bases)}

    def depth(e: Experiment, seen: int = 0) -> int:
        onto = next((d.merged_onto or d.base for d in reversed(e.decisions) if d.verdict == "merge"), None)
        parent = merged.get(onto)
        return 0 if parent is None or seen > len(merged) else 1 + depth(parent, seen + 1)

    out: list[Step] = []
    for e in sorted(merged.values(), key=lambda e: (depth(e), e.pr)):
        v = next(v for v in reversed(e.verifications) if v.passed and v.candidate == e.head)
        if not out and _finite(v.baseline_mean) is not None:
            out.append(Step(pr=None, value=v.baseline_mean))
        if _finite(v.candidate_mean) is not None:
            out.append(Step(pr=e.pr, value=v.candidate_mean, url=safe_url(e.url)))
    if not out:  # no merge yet: the base as the first verification measured it
        first = next((v for e in exps for v in e.verifications if _finite(v.baseline_mean) is not None), None)
        out = [Step(pr=None, value=first.baseline_mean)] if first else []
    return out


def summarise(exps: list[Experiment], repo: str, now: datetime | None = None) -> Summary:
    """The report of `exps` (`LedgerReader.experiments()`, oldest PR first) of repository `repo`.
    The metric and its direction are the newest hypothesis's."""
    rows = [row(e) for e in exps]
    hyps = [e.hypothesis for e in exps if e.hypothesis]
    verifs = [v for e in exps for v in e.verifications]
    counts = {k: sum(r.outcome == k for r in rows) for k in ("merged", "closed", "failed", "open")}
    total = sum((r.spend for r in rows), Spend())
    return Summary(
        repo=clip(repo, 100),
        generated_at=(now or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC"),
        metric=clip(hyps[-1].metric.name, 60) if hyps else None,
        holdout_metric=clip(verifs[-1].metric, 60) if verifs else None,
        direction=hyps[-1].metric.direction if hyps else None,
        rows=rows,
        steps=steps(exps),
        counts={"experiments": len(rows), **counts},
        total=total,
    )
