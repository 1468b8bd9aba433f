"""Does the ledger match what happened on the forge?  Hand-made changes are flagged, not absorbed.

A senpai merge is *verified*: the PR carries a `merge` decision for its merged head and a passing
verification of that head against a base senpai saw (a hypothesis's baseline or another senpai
merge).  Everything else a human did by hand shows up here:

- a decision that does not match the forge (a `merge` decision on a PR closed without a merge,
  a `close` decision on a merged PR, a merged PR with no `merge` decision, a PR closed with none,
  an open PR whose last decision is `merge` or `close`: reopened by hand);
- a merge without a passing verification of its merged head;
- a merge that landed on a base that moved after its verification, until the merge commit passes a
  verification against that base;
- a base head that no senpai merge produced (merged code with no merged PR, a commit pushed by hand);
- a decided PR whose body no longer holds the hypothesis record senpai wrote (removed or made
  unreadable by an edit), or holds another one than the record its last decision was made on (the
  decision's `hypothesis` digest: the bot's comments are never edited, a PR body may be).
"""

from dataclasses import dataclass, field

from senpai.ledger.experiment import Experiment
from senpai.ledger.labels import ExperimentState
from senpai.ledger.records import digest


@dataclass(frozen=True)
class Consistency:
    """Flags per PR number (absent: consistent) and for the base branch head."""

    prs: dict[int, list[str]] = field(default_factory=dict)
    base: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.prs and not self.base

    def lines(self) -> list[str]:
        """One line per flag, PR flags first (`#<n>: <flag>`), for humans and `senpai ledger --check`."""
        return [f"#{pr}: {flag}" for pr, flags in sorted(self.prs.items()) for flag in flags] + [f"base: {b}" for b in self.base]


def seen_bases(exps: list[Experiment]) -> set[str]:
    """Base commits senpai worked from: each hypothesis's baseline and each merge commit."""
    bases = {e.hypothesis.baseline.commit for e in exps if e.hypothesis}
    return bases | {e.merge_commit for e in exps if e.state == ExperimentState.MERGED and e.merge_commit}


def verified_merge(e: Experiment, bases: set[str]) -> bool:
    """True if `e` is merged with a `merge` decision on its merged head and a passing verification of
    that head against one of `bases` (see `seen_bases`), and the merge landed on the verified base
    (or, if the base moved before it landed, the merge commit passed a verification against the base
    it landed on: see `reverify`)."""
    decided = any(d.verdict == "merge" and d.head == e.head for d in e.decisions)
    verified = any(v.passed and v.candidate == e.head and v.baseline in bases for v in e.verifications)
    return e.state == ExperimentState.MERGED and decided and verified and (moved_base(e) is None or _reverified(e))


def moved_base(e: Experiment) -> str | None:
    """The base `e`'s merge landed on when that is not the base its verification measured, else None."""
    d = next((d for d in reversed(e.decisions) if d.verdict == "merge" and d.head == e.head), None)
    if d is None or d.base is None or d.merged_onto is None or d.merged_onto == d.base:
        return None
    return d.merged_onto


def reverify(e: Experiment) -> tuple[str, str] | None:
    """(candidate, baseline) the verifier must measure again for a merge that landed on a moved base:
    the merge commit against the base it landed on; None if nothing is owed (or it is recorded)."""
    onto = moved_base(e)
    if onto is None or not e.merge_commit or any(v.candidate == e.merge_commit and v.baseline == onto for v in e.verifications):
        return None
    return e.merge_commit, onto


def _reverified(e: Experiment) -> bool:
    onto = moved_base(e)
    return any(v.passed and v.candidate == e.merge_commit and v.baseline == onto for v in e.verifications)


def record_flags(e: Experiment) -> list[str]:
    """The flags of a decided experiment `e` (one of the bot's own PRs) whose hypothesis record is
    gone from its body, or is not the one its last decision recorded (`Decision.hypothesis`)."""
    if not e.decided:
        return []
    if e.hypothesis is None:
        return ["hypothesis record gone from the PR body (removed or made unreadable by an edit): its params are lost"]
    recorded, now = [d.hypothesis for d in e.decisions if d.hypothesis], digest(e.hypothesis)
    if recorded and recorded[-1] != now:
        return [f"hypothesis record changed after the decision (edited by hand?): digest {now}, decided on {recorded[-1]}"]
    return []


def _flags(e: Experiment, bases: set[str]) -> list[str]:
    d = e.decision
    out = record_flags(e)
    if e.state == ExperimentState.CLOSED and d is not None and d.verdict == "merge":
        out.append("merge decision on a PR closed without a merge")
    if e.state == ExperimentState.CLOSED and d is None:
        out.append("closed with no decision (by hand?)")
    if not e.decided and d is not None and d.verdict in ("merge", "close"):
        out.append(f"open after a {d.verdict} decision (reopened by hand?)")
    if e.state == ExperimentState.MERGED and d is not None and d.verdict != "merge":
        out.append(f"{d.verdict} decision on a merged PR")
    if e.state == ExperimentState.MERGED and not any(x.verdict == "merge" for x in e.decisions):
        out.append("merged with no merge decision (by hand?)")
    if e.state == ExperimentState.MERGED and not any(
        v.passed and v.candidate == e.head and v.baseline in bases for v in e.verifications
    ):
        out.append(f"merged head {e.head[:8]} has no passing verification against a senpai base")
    if e.state == ExperimentState.MERGED and (onto := moved_base(e)) and not _reverified(e):
        state = "pending" if reverify(e) else "failed"
        out.append(f"merged onto {onto[:8]}, a base that moved after verification (re-verification {state})")
    return out


def check(exps: list[Experiment], base_sha: str) -> Consistency:
    """Every inconsistency between the ledger `exps` and the forge (`base_sha`: the base branch head now).

    The base head must be the merge commit of a senpai merge, or (before any merge) the base the
    first experiment started from.  With no experiment whose hypothesis reads there is nothing to compare.
    """
    bases = seen_bases(exps)
    prs = {e.pr: flags for e in exps if (flags := _flags(e, bases))}
    merges = {e.merge_commit for e in exps if e.state == ExperimentState.MERGED}
    first = [e.hypothesis.baseline.commit for e in exps if e.hypothesis][:1]
    base = []
    known = merges | set(first)  # empty while no experiment has a readable hypothesis: nothing to compare
    if known and base_sha not in known:
        base.append(f"base head {base_sha[:8]} was not produced by a senpai merge (pushed or merged by hand?)")
    return Consistency(prs, base)
