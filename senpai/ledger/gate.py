"""The merge gate: pure checks the harness applies before any merge, whoever asked for it.

The verdict of an advisor (LLM or search) never bypasses this; `transitions.decide` calls it.  The
gate re-derives the verdict from the numbers in the verification block with `stats.judge` and the
target's senpai.yaml at the base; the block's `passed` can only make it stricter.
"""

import fnmatch
import hashlib
import math

from senpai.config.target import Compute, Holdout, Metric, TargetConfig
from senpai.errors import ApprovalRequired, MergeRefused
from senpai.ledger import stats
from senpai.ledger.blocks import Verification
from senpai.ledger.experiment import Experiment

ALLOW_COMPUTE = "/senpai allow compute"


def protected_touched(target: TargetConfig, files: list[str]) -> list[str]:
    """The subset of repo-relative `files` that are protected by `target` (senpai.yaml always is)."""
    return sorted(f for f in files if target.is_protected(f))


def out_of_scope(target: TargetConfig, files: list[str]) -> list[str]:
    """The subset of repo-relative `files` outside `target.scope` (and not protected: reported apart)."""
    return sorted(f for f in files if not target.is_protected(f) and not target.in_scope(f))


def check_merge(
    target: TargetConfig,
    head: str,
    base: str,
    files: list[str],
    verification: Verification | None,
    *,
    rivals: dict[int, float] | None = None,
    compute_allowed_by: str | None = None,
    approved: dict[str, str] | None = None,
    arms: int = 1,
) -> str | None:
    """Raise MergeRefused (reason names the files or metrics) unless a merge of `head` into `base` is
    allowed; returns the fingerprint of the human approval the merge consumes (None if none is needed).

    `files` is what the PR changes, as read from the forge now; the verification's own `files` (git's
    list for exactly the pair it measured) are checked with them, so a file list raced by a push between
    the verifier's reads cannot hide a path. The verification must measure exactly (`head`, `base`) with
    the holdout metric, judged in the holdout's direction (`TargetConfig.holdout_direction`), have
    finite numbers, and pass `target.holdout.rule` when re-judged here in that direction at the
    sequential test's last look (alpha / `stats.looks`). Then: compute within `1 +
    holdout.compute.tolerance` of the baseline's unless `compute_allowed_by` (the trusted login that
    posted `/senpai allow compute` on the PR) is set, no guard regressing beyond its tolerance, the
    target's test passed if it declares one, and the p-value still below alpha after Benjamini–Hochberg
    over `rivals` (PR -> one-sided p-value of the latest verification of each other PR against the same
    `base`). Last, if senpai.yaml's `approval` rules name the merge (`approval_reasons`): `approved`
    (fingerprint -> trusted login, the PR's acknowledged `/senpai approve`s) must hold the
    fingerprint of exactly (`head`, `base`, the verification), else ApprovalRequired. An approval is
    single-use because the merge it allows ends the PR, and an approval counts only on its own PR.
    `arms` is how many variants the hypothesis ran (its `arm_count`): the rule is then judged
    corrected for them (`stats.for_arms`).
    """
    files = sorted({*files, *(verification.files if verification else [])})
    touched = protected_touched(target, files)
    if touched:
        raise MergeRefused(f"the diff touches protected paths: {', '.join(touched)}")
    outside = out_of_scope(target, files)
    if outside:
        allowed = ", ".join(target.scope or [target.params.file])
        raise MergeRefused(f"the diff changes files outside the experiment's scope ({allowed}): {', '.join(outside)}")
    if verification is None:
        raise MergeRefused("no verification of this head against the current baseline")
    v, hold = verification, stats.for_arms(target.holdout, arms)
    if v.candidate != head or v.baseline != base:
        raise MergeRefused(
            f"verification is stale: it measured {v.candidate[:8]} vs {v.baseline[:8]}, the PR is {head[:8]} vs {base[:8]}"
        )
    try:
        judgement = _verdict(hold, target.holdout_direction, v)
    except MergeRefused as e:
        said = lambda x: f"{x} (the rule corrected for {arms} arms)" if arms > 1 else x  # noqa: E731
        raise MergeRefused(said(str(e)), said(e.shown)) from None
    problems = [compute_problem(hold, v, compute_allowed_by), *guard_problems(hold, v), _test(target, v)]
    problems = [p for p in problems if p]
    if problems:
        raise MergeRefused("; ".join(problems))
    _multiple(hold, judgement, rivals or {}, base)
    return _approval(target, head, base, files, v, approved or {})


def fingerprint(head: str, base: str, v: Verification) -> str:
    """12 hex digits naming one merge: the head and base shas and every field of the verification
    (its record), so a push, a moved base or a new verification makes a new fingerprint."""
    return hashlib.sha256(f"{head}\n{base}\n{v.model_dump_json()}".encode()).hexdigest()[:12]


def listed(paths: list[str], limit: int = 10) -> str:
    """Paths a candidate named, for a text people read: each an inline code span (a file named
    `[Approve](https://...)` is no link there), at most `limit`, then how many more: a list cut
    silently would let harmless names hide the one that matters."""
    shown = ", ".join(f"`{p[:200].replace('`', "'")}`" for p in paths[:limit])
    return shown + (f" and {len(paths) - limit} more (see the diff)" if len(paths) > limit else "")


def approval_reasons(target: TargetConfig, files: list[str], v: Verification) -> list[str]:
    """The senpai.yaml `approval` rules that name this merge, one sentence each (empty: none)."""
    rules, out = target.approval, []
    if rules.always:
        out.append("senpai.yaml asks for an approval of every merge")
    if rules.outside_params and (other := [f for f in files if f != target.params.file]):
        out.append(f"the diff changes files other than {target.params.file}: {listed(other)}")
    if rules.improvement_over is not None and v.improvement is not None and v.improvement > rules.improvement_over:
        out.append(f"the verified improvement {v.improvement:.4g} is over {rules.improvement_over:g}")
    if matched := [f for f in files if any(fnmatch.fnmatchcase(f, g) for g in rules.paths)]:
        out.append(f"the diff changes paths that need an approval: {listed(matched)}")
    return out


def _approval(
    target: TargetConfig, head: str, base: str, files: list[str], v: Verification, approved: dict[str, str]
) -> str | None:
    """The fingerprint a valid approval gives (None: no rule names the merge). Raises ApprovalRequired."""
    reasons = approval_reasons(target, files, v)
    if not reasons:
        return None
    fp = fingerprint(head, base, v)
    if fp not in approved:
        raise ApprovalRequired(fp, reasons)
    return fp


def _verdict(hold: Holdout, direction: stats.Direction, v: Verification) -> stats.Judgement:
    """The rule's verdict, re-derived from the block's values in the holdout's `direction`. Raises MergeRefused."""
    if v.metric != hold.metric:
        raise MergeRefused(f"verification measured {v.metric!r}, but senpai.yaml's holdout metric is {hold.metric!r}")
    if v.direction != direction:
        raise MergeRefused(f"verification judged {v.metric} as {v.direction}, but senpai.yaml's holdout direction is {direction}")
    numbers = [*v.candidate_values, *v.baseline_values, *(x for x in (v.improvement, v.noise_floor) if x is not None)]
    if not v.candidate_values or not v.baseline_values or not all(math.isfinite(n) for n in numbers):
        said = "" if v.passed else f"; the verifier: {v.reason[:500]}"  # e.g. which step failed, and why
        what = f"a verification metric is NaN, infinite or missing ({hold.metric})"
        raise MergeRefused(what + said, what)
    fewest = min(len(v.candidate_values), len(v.baseline_values))
    if fewest < len(hold.seeds):
        raise MergeRefused(f"verification has {fewest} seed(s) a side; senpai.yaml declares {len(hold.seeds)}")
    looks = stats.looks(hold)
    judgement = stats.judge(hold, direction, v.candidate_values, v.baseline_values, look=looks, looks=looks)
    if not judgement.passed:
        what = f"the holdout shows no improvement by rule {hold.rule}"
        raise MergeRefused(f"{what}: {judgement.reason}", what)
    if not v.passed:
        raise MergeRefused(f"the verifier did not pass it: {v.reason}", "the verifier did not pass it")
    return judgement


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def _ratio(candidate: float, baseline: float) -> float:
    if baseline <= 0:
        return 1.0 if candidate <= 0 else math.inf
    return candidate / baseline


def _figures(hold: Holdout, v: Verification) -> list[tuple[str, list[float] | None]]:
    """(name, [candidate mean, baseline mean] or None if not measured) per figure `holdout.compute` compares."""
    c, out = hold.compute, []
    named = [("training seconds", v.candidate_seconds, v.baseline_seconds)] if c.seconds and c.budget is None else []
    named += [(f"compute figure {c.key!r}", v.candidate_compute, v.baseline_compute)] if c.key else []
    for name, cand, base in named:
        measured = _counted(cand, len(v.candidate_values)) and _counted(base, len(v.baseline_values))
        out.append((name, [_mean(cand), _mean(base)] if measured else None))
    return out


def _counted(figures: list[float], seeds: int) -> bool:
    """A compute figure measured on each of `seeds` seeds as a count (finite, never negative). It is
    printed by the side's own code, or a candidate could report -1, or stay silent on its costly
    seeds, to pass the ratio or the budget."""
    return bool(figures) and len(figures) == seeds and all(math.isfinite(x) and x >= 0 for x in figures)


def compute_ratio(hold: Holdout, v: Verification) -> float | None:
    """The largest candidate/baseline ratio of mean compute over the figures `holdout.compute`
    compares (training seconds, the target's figure); None if none is compared or measured."""
    ratios = [_ratio(*means) for _, means in _figures(hold, v) if means is not None]
    return max(ratios) if ratios else None


def compute_problem(hold: Holdout, v: Verification, allowed_by: str | None) -> str | None:
    """Why the candidate's training compute is refused (None if within tolerance or allowed): a
    figure not measured on every seed of both sides, or over 1 + `holdout.compute.tolerance` times
    the baseline's; with `holdout.compute.budget`, the candidate's `key` figure over that budget."""
    if allowed_by is not None:
        return None
    if hold.compute.budget is not None:
        return _over_budget(hold.compute, v)
    over = []
    for name, means in _figures(hold, v):
        if means is None:
            over.append(f"{name} not measured (as a finite, non-negative number on every seed) for both sides")
        elif (ratio := _ratio(*means)) > 1 + hold.compute.tolerance:
            tol = hold.compute.tolerance
            over.append(f"{name} {means[0]:.4g} vs {means[1]:.4g} is x{ratio:.2f}, over 1 + tolerance {tol:g}")
    if not over:
        return None
    return f"compute is not matched: {'; '.join(over)} (a trusted human may allow this PR with `{ALLOW_COMPUTE}`)"


def _over_budget(c: Compute, v: Verification) -> str | None:
    """Why the candidate's mean `key` figure is refused against the fixed `budget` (None: within):
    not printed as a finite, non-negative number on every candidate seed, or over the budget."""
    cand = v.candidate_compute
    allow = f"(a trusted human may allow this PR with `{ALLOW_COMPUTE}`)"
    if not _counted(cand, len(v.candidate_values)):
        return f"compute is not within the budget: compute figure {c.key!r} not measured on every candidate seed {allow}"
    if (mean := _mean(cand)) > c.budget:
        return f"compute is over the budget: compute figure {c.key!r} {mean:.4g} > budget {c.budget:g} {allow}"
    return None


def guard_problems(hold: Holdout, v: Verification) -> list[str]:
    """One reason per guard metric that is missing or regresses beyond its tolerance."""
    out = []
    for name, g in sorted(hold.guards.items()):
        pair = v.guards.get(name)
        if pair is None or len(pair) != 2 or not all(math.isfinite(x) for x in pair):
            out.append(f"guard {name} was not measured (or not finite)")
            continue
        regression = -Metric(name=name, direction=g.direction).better(pair[0], pair[1])
        if regression > g.tolerance:
            out.append(f"guard {name} regressed: {pair[0]:.4g} vs baseline {pair[1]:.4g} (tolerance {g.tolerance:g})")
    return out


def _test(target: TargetConfig, v: Verification) -> str | None:
    if target.test is None or v.test_passed is True:
        return None
    what = "failed on the candidate" if v.test_passed is False else "was not run"
    return f"the target's test command {what}"


def _multiple(hold: Holdout, judgement: stats.Judgement, rivals: dict[int, float], base: str) -> None:
    """Benjamini–Hochberg over this PR's p-value and its rivals'. Raises MergeRefused."""
    if judgement.p_value is None or not rivals:
        return
    alpha = hold.alpha / stats.looks(hold)
    adjusted = stats.bh_adjust([judgement.p_value, *rivals.values()])[0]
    if adjusted >= alpha:
        others = ", ".join(f"#{n}" for n in sorted(rivals))
        what = f"not significant after Benjamini-Hochberg over {len(rivals) + 1} verifications against base {base[:8]}"
        what += f" (with {others})"
        raise MergeRefused(f"{what}: p={judgement.p_value:.2g} becomes {adjusted:.2g} >= alpha {alpha:.3g}", what)


def rival_p_values(target: TargetConfig, exps: list[Experiment], pr: int, base: str) -> dict[int, float]:
    """PR -> one-sided p-value, re-judged from the numbers, of the latest verification of every other
    PR (open or decided) against `base`: the candidates competing for that baseline (its lifetime is
    the window).  Empty for the noise_floor rule (it has no p-value)."""
    looks, out = stats.looks(target.holdout), {}
    for e in exps:
        found = [v for v in e.verifications if v.baseline == base and v.metric == target.holdout.metric]
        if e.pr == pr or not found:
            continue
        v = found[-1]
        j = stats.judge(target.holdout, target.holdout_direction, v.candidate_values, v.baseline_values, looks, looks)
        if j.p_value is not None:
            out[e.pr] = j.p_value
        elif j.improvement is None and target.holdout.rule != "noise_floor":
            out[e.pr] = 1.0  # a NaN verification still counts as a comparison made
    return out
