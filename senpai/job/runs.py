"""The W&B runs of an experiment (design §2): who each run is, and the verdict it gets tagged with.

Three kinds of run share the PR's group `pr-<n>`:
- `train`: the student's attempt, logged by the target program itself under `run_identity`;
- `verify`: the verifier's holdout numbers for one (candidate, baseline) pair, logged by senpai;
- `agent`: one LLM agent turn, its calls as a table, logged by senpai.

Run ids are `<repo slug>-pr<n>-<what>-<installation>`: the same for a relaunch of the same job (a
retried attempt writes the same run again, and the evidence reads it back by that id), and never
the same in two installations (`Tracker.installation`). Every run's git commit is the one it
measured and its remote the target repository's clone URL (no credential), its notes the PR's web
URL. A logging failure never fails the job: the run is missing, the numbers are still posted.
Whatever senpai error the tracker raises (W&B unreachable, a tracker folder a PR's code broke), it
is logged and the job goes on: after a merge, the advisor's turn must not crash on W&B.
"""

import hashlib
import logging
import re
from urllib.parse import urlsplit, urlunsplit

from senpai.errors import NotFound, SenpaiError, TransientError
from senpai.job.context import TurnContext
from senpai.ledger.blocks import Decision, RunRef, Verification
from senpai.tracker.base import JobType, RunIdentity, RunRecord, RunTable

log = logging.getLogger(__name__)
SLUG_CHARS = 20  # of the repository's name in a run id (ids are at most 64 characters)


def group(pr: int | None) -> str:
    """`pr-<n>`; `advisor` for an advisor turn about no PR."""
    return "advisor" if pr is None else f"pr-{pr}"


def run_id(repo: str, pr: int | None, what: str, installation: str) -> str:
    """`<slug>-pr<pr>-<what>-<installation>` (`<slug>-advisor-...` for no PR); `what` is
    `a<attempt>`, `v<hash>` or `t<hash>`."""
    slug = re.sub(r"[^a-z0-9]+", "-", repo.split("/")[-1].lower()).strip("-")[:SLUG_CHARS].strip("-")
    return f"{slug or 'repo'}-{group(pr).replace('-', '')}-{what}-{installation}"


def public_url(url: str) -> str:
    """`url` without any user or password (a clone URL is never posted with a credential)."""
    parts = urlsplit(url)
    if not parts.username and not parts.password:
        return url
    host = parts.hostname or ""
    return urlunsplit(parts._replace(netloc=f"{host}:{parts.port}" if parts.port else host))


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:10]


def identity(
    ctx: TurnContext, pr: int | None, what: str, name: str, job_type: JobType, head: str | None, config: dict, tags: list[str]
) -> RunIdentity:
    """The identity of a run of PR `pr` (see the module docstring)."""
    return RunIdentity(
        id=run_id(ctx.harness.forge.repo, pr, what, ctx.tracker.installation),
        group=group(pr),
        name=name,
        tags=list(dict.fromkeys(["senpai", *tags, group(pr)])),  # an advisor turn about no PR: one `advisor`
        job_type=job_type,
        notes=pr_url(ctx, pr),
        git_commit=head,
        git_remote=public_url(ctx.forge.clone_url),
        config={"senpai_pr": pr, "senpai_head": head, **config},
    )


def pr_url(ctx: TurnContext, pr: int | None) -> str | None:
    """PR `pr`'s web URL: from the PRs the ledger already holds (a PR's URL never changes), else
    read (`LedgerReader.pull`); None for no PR, or if the forge cannot say (logged: a missing
    link must not lose the run)."""
    if pr is None:
        return None
    if known := next((p for p in ctx.ledger.pulls if p.number == pr), None):
        return known.html_url
    try:
        return ctx.ledger.pull(pr).html_url
    except (NotFound, TransientError) as e:
        log.warning("no link to PR #%d in its W&B run: %s", pr, e)
        return None


def run_identity(ctx: TurnContext, pr: int, attempt: int, student: str, head: str, hypothesis: str, params: dict) -> RunIdentity:
    """The student's training run of attempt `attempt` on PR `pr` at commit `head` (job_type train)."""
    config = {"senpai_hypothesis": hypothesis, **params}
    return identity(ctx, pr, f"a{attempt}", f"{student}/pr-{pr}/{attempt}", "train", head, config, [f"student:{student}"])


def log_verification(ctx: TurnContext, v: Verification) -> RunRef | None:
    """Log the verifier's holdout numbers of `v` as a run (job_type verify): the means, improvement,
    noise floor, statistic and p-value as its summary, one table row per (side, seed). None if
    nothing was measured (a refusal) or W&B cannot take it (logged)."""
    if not v.seeds:
        return None
    what = f"v{_digest(v.candidate, v.baseline)}"
    config = {"senpai_baseline": v.baseline, "senpai_rule": v.rule, "senpai_metric": v.metric}
    run = identity(ctx, v.pr, what, f"verifier/pr-{v.pr}/{v.candidate[:8]}", "verify", v.candidate, config, ["verifier"])
    numbers = dict(
        candidate_mean=v.candidate_mean, baseline_mean=v.baseline_mean, improvement=v.improvement,
        noise_floor=v.noise_floor, statistic=v.statistic, p_value=v.p_value, compute_ratio=v.compute_ratio,
    )  # fmt: skip
    summary = {k: x for k, x in numbers.items() if x is not None} | {"passed": float(v.passed), "seeds": float(len(v.seeds))}
    rows = [
        [side, seed, value]
        for side, values in (("candidate", v.candidate_values), ("baseline", v.baseline_values))
        for seed, value in zip(v.seeds, values, strict=False)
    ]
    table = RunTable(name="holdout", columns=["side", "seed", v.metric], rows=rows)
    rec = _log(ctx, run, summary, table)
    return RunRef(id=rec.id, url=rec.url, state=rec.state) if rec else None


def log_agent_turn(
    ctx: TurnContext, role: str, pr: int | None, revision: str, key: str, summary: dict[str, float], table: RunTable
) -> RunRecord | None:
    """Log an agent turn `key` (`turn_key`) as a run (job_type agent): its spend as the summary,
    its LLM and tool calls as `table`. None if W&B cannot take it (logged)."""
    name = f"{role}/{group(pr)}/{revision[:8]}"
    run = identity(ctx, pr, f"t{_digest(key)}", name, "agent", revision, {"senpai_turn": key}, [role])
    return _log(ctx, run, summary, table)


def _log(ctx: TurnContext, run: RunIdentity, summary: dict[str, float], table: RunTable | None) -> RunRecord | None:
    try:
        return ctx.tracker.log_run(run, summary, table)
    except SenpaiError as e:
        log.warning("W&B run %s not logged: %s", run.id, e)
        return None


def verdict_tag(verdict: str) -> str:
    """`verdict:<verdict>`: the tag of a decided PR's runs (`verdict:merge|close|changes`)."""
    return f"verdict:{verdict}"


def tag_verdict(ctx: TurnContext, d: Decision) -> None:
    """Tag the runs of `d`'s PR with its verdict (`verdict:merge|close|changes`): now online; offline,
    when `senpai sync` uploads them. A failure is logged, never raised (the decision stands)."""
    try:
        ctx.tracker.add_tags(group(d.pr), [verdict_tag(d.verdict)])
    except SenpaiError as e:
        log.warning("runs of PR #%d not tagged verdict:%s: %s", d.pr, d.verdict, e)
