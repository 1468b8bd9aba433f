"""What one verification measures, before anything runs: the pair of commits and the files the
candidate changes (`make_plan`), why the diff may not merge whatever it measures (`refusals`), and
the figures earlier verifications measured for either side's tree (`Known`, of `Sample`s).

The bottom of the verifier: the steps (`steps`) and the judge (`judge`) both read it, and it reads
neither.
"""

from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from senpai.errors import PermanentError
from senpai.job.context import TurnContext
from senpai.ledger.consistency import reverify
from senpai.ledger.experiment import read_experiment
from senpai.ledger.gate import out_of_scope, protected_touched

SIDES = ("baseline", "candidate")
# A verification block names every changed path and must fit one GitHub comment (65,536 characters).
MAX_FILES = 300
MAX_PATH_CHARS = 10_000  # all paths together
NAMED_CHARS = 1_000  # of the paths a reason names


class Plan(BaseModel):
    """What one verification measures (`plan.json` between the Kubernetes steps)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    pr: int
    candidate: str = Field(pattern=r"^[0-9a-f]{40}$")
    baseline: str = Field(pattern=r"^[0-9a-f]{40}$")
    holdout: str | None = None  # `reuse.holdout_id` of the sealed holdout it is scored on (set where that is mounted)
    files: list[str]
    protected_touched: list[str]
    out_of_scope: list[str]
    unlisted: str | None = None  # why the files are not listed (too many to record): refused
    # what the candidate side trains: the tree a merge into the baseline would have (the head
    # itself unless the PR is behind its base); None with `unmergeable` saying why (refused)
    merged: str | None = Field(default=None, pattern=r"^[0-9a-f]{40}$")
    unmergeable: str | None = None
    conflict: bool = False  # `unmergeable` because the trees conflict (re-applied on the base, it may merge)
    # side -> the git tree it trains (the candidate's: `merged`'s); what its numbers are keyed by (`senpai.verifier.reuse`)
    trees: dict[str, str] = Field(default_factory=dict)
    arms: int = Field(1, ge=1)  # variants the hypothesis ran: the rule is corrected for them (`stats.for_arms`)

    def sha(self, side: str) -> str:
        """The commit a side trains: the baseline, or the candidate as it would merge (`merged`)."""
        return (self.merged or self.candidate) if side == "candidate" else self.baseline


def pair(ctx: TurnContext, number: int) -> tuple[str, str]:
    """(candidate, baseline) to measure: an open PR's head as the wrapper handed it
    (`LedgerReader.handed`: a head pushed since is verified on the wrapper's next look) against the
    base head as the forge says now; a merged PR's merge commit against the base it landed on, when
    the merge landed on a base that moved after its verification (`consistency.reverify`). Raises
    PermanentError for a merged PR that owes no verification."""
    pr = ctx.ledger.handed(number)
    if not pr.merged:
        return pr.head_sha, ctx.forge.branch_sha(ctx.base)
    owed = reverify(ctx.ledger.experiment(pr))
    if owed is None:
        raise PermanentError(f"PR #{number} is merged and owes no verification")
    return owed


def make_plan(ctx: TurnContext, number: int) -> Plan:
    """The pair to measure (`pair`), both fetched into the turn's clone by sha, and the files the
    candidate changes since its merge base with the baseline, as git lists them for exactly this
    pair (never truncated; the forge's list may already be a later head's, and costs a request).
    The candidate side trains `merged`: the tree the merge would land (a PR behind its base
    measured on its old tree would count the base's later changes, reverted, as its own). Raises
    TransientError if the fetch fails."""
    candidate, baseline = pair(ctx, number)
    pull = ctx.ledger.handed(number)
    h = read_experiment(pull, ctx.ledger.comments(pull), ctx.forge.login).hypothesis  # its arms: no tracker read
    refs = [f"+{candidate}:refs/senpai/candidate", f"+{baseline}:refs/senpai/baseline"]
    ctx.repo.git("fetch", "--quiet", "origin", *refs, network=True)
    merged, unmergeable, conflict = ctx.repo.merged(baseline, candidate)
    # no merge base (unrelated histories): nothing to diff against, and it is refused as unmergeable
    files, unlisted = (sorted(ctx.repo.changed_paths(baseline, candidate)) if merged or conflict else []), None
    commits = {side: sha for side, sha in {"baseline": baseline, "candidate": merged}.items() if sha}
    shas = ctx.repo.git("rev-parse", *(f"{sha}^{{tree}}" for sha in commits.values())).split()
    trees = dict(zip(commits, shas, strict=True))  # one git for both sides
    chars = sum(len(f) for f in files)
    if len(files) > MAX_FILES or chars > MAX_PATH_CHARS:
        unlisted = f"PR #{number} changes {len(files)} files ({chars} characters of paths)"
        unlisted += f", over the {MAX_FILES} files and {MAX_PATH_CHARS} characters a verification records"
        files = []
    return Plan(
        pr=number, candidate=candidate, baseline=baseline, files=files, unlisted=unlisted, merged=merged,
        unmergeable=unmergeable, conflict=conflict, trees=trees, arms=h.arm_count() if h else 1,
        protected_touched=protected_touched(ctx.target, files), out_of_scope=out_of_scope(ctx.target, files),
    )  # fmt: skip


def named(paths: list[str]) -> str:
    """`paths` joined with ", ", cut after NAMED_CHARS characters with "and N more"."""
    out, size = [], 0
    for i, path in enumerate(paths):
        if out and size + len(path) > NAMED_CHARS:
            return f"{', '.join(out)} and {len(paths) - i} more"
        out.append(path[:NAMED_CHARS])
        size += len(path) + 2
    return ", ".join(out)


def refusals(plan: Plan) -> list[str]:
    """Why the diff may not merge whatever it measures, one phrase each; none if it may be measured."""
    why = []
    if plan.protected_touched:
        why.append(f"the diff touches protected paths {named(plan.protected_touched)}")
    if plan.out_of_scope:
        why.append(f"the diff changes paths outside the experiment's scope {named(plan.out_of_scope)}")
    if plan.unlisted:
        why.append(f"{plan.unlisted}: split it")
    if plan.unmergeable:
        why.append(f"{plan.unmergeable}: the forge could not merge it as measured")
    return why


@dataclass(frozen=True)
class Sample:
    """One side's figures for one seed; `source`: the PR whose verification measured it, None if this one did."""

    value: float
    seconds: float
    gpu_seconds: float
    compute: float | None
    guards: dict[str, float]
    source: int | None = None


@dataclass(frozen=True)
class Known:
    """Per side: the key this verification records for its numbers (None: not offered for reuse),
    and the seeds measured before for a tree with that key, by seed (`senpai.verifier.reuse`)."""

    keys: dict[str, str | None] = field(default_factory=lambda: dict.fromkeys(SIDES))
    samples: dict[str, dict[int, Sample]] = field(default_factory=lambda: {s: {} for s in SIDES})
