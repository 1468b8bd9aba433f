"""The current baseline: the base branch head and what the ledger knows about its metric."""

from pydantic import BaseModel, ConfigDict

from senpai.ledger.experiment import Experiment


class Baseline(BaseModel):
    model_config = ConfigDict(frozen=True)
    commit: str
    pr: int | None
    run_id: str | None
    value: float | None
    params: dict | None


def current_baseline(exps: list[Experiment], base_sha: str) -> Baseline:
    """The merged experiment whose merge commit is the base head, if any.

    Merges are the only way the base moves during research, so the base head is the merge commit
    of the last merge; a base moved by hand has no measured value (None) until the next merge.
    """
    for e in exps:
        if e.state == "merged" and e.merge_commit == base_sha:
            ok = [ev for ev in e.evidence if ev.outcome == "ok"]
            run = ok[-1].runs[-1].id if ok and ok[-1].runs else None
            params = e.hypothesis.params if e.hypothesis else None
            return Baseline(commit=base_sha, pr=e.pr, run_id=run, value=e.primary_value(), params=params)
    return Baseline(commit=base_sha, pr=None, run_id=None, value=None, params=None)
