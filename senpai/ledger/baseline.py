"""The current baseline: the base branch head and what the ledger knows about its metric."""

from pydantic import BaseModel, ConfigDict

from senpai.ledger.consistency import seen_bases, verified_merge
from senpai.ledger.experiment import Experiment


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
    of the last merge.  A base moved by hand, or by a merge made by hand (no merge decision or no
    passing verification), has no measured value (None) until the next verified merge: its code is
    not what any verification measured.
    """
    bases = seen_bases(exps)
    for e in exps:
        if e.merge_commit == base_sha and verified_merge(e, bases):
            ok = [ev for ev in e.evidence if ev.outcome == "ok"]
            run = ok[-1].runs[-1].id if ok and ok[-1].runs else None
            params = e.hypothesis.params if e.hypothesis else None
            return Baseline(commit=base_sha, pr=e.pr, run_id=run, value=e.primary_value(), params=params)
    return Baseline(commit=base_sha, pr=None, run_id=None, value=None, params=None)
