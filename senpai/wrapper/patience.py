"""Patience: after `patience` experiments in a row closed without a merge, senpai stops opening new
ones (running work finishes) and opens one issue asking humans, until a `/senpai resume`.

Both halves live here: `paused_for_patience` gates the policy's idle events, `patience_issue` is
the steering rule that asks. The streak restarts at every merge and at every resume (the resume's
ack records the PRs decided before it, `SteerCommand.decided`).
"""

from senpai.config.harness import HarnessConfig
from senpai.ledger.commands import SYNTAX
from senpai.ledger.comments import cell, params
from senpai.ledger.escalation import marked
from senpai.ledger.experiment import Experiment
from senpai.ledger.labels import ATTENTION, STEER, ExperimentState
from senpai.ledger.records import neutral
from senpai.wrapper.actions import OpenIssue
from senpai.wrapper.world import World


def patience_streak(exps: list[Experiment], resumed_after: frozenset[int] = frozenset()) -> list[Experiment]:
    """The experiments closed without a merge since the last merge (in PR order), leaving out those
    decided before the last `/senpai resume` and the measurements of a base (no hypothesis of
    improvement: `Hypothesis.measures_base`)."""
    streak: list[Experiment] = []
    for e in exps:
        if e.state == ExperimentState.MERGED:
            streak = []
        elif e.state == ExperimentState.CLOSED and e.pr not in resumed_after and not _measures_base(e):
            streak.append(e)
    return streak


def paused_for_patience(exps: list[Experiment], cfg: HarnessConfig, resumed_after: frozenset[int] = frozenset()) -> bool:
    """True once `patience` experiments in a row were decided without a merge (since the last resume)."""
    return cfg.patience is not None and len(patience_streak(exps, resumed_after)) >= cfg.patience


def patience_issue(w: World, cfg: HarnessConfig) -> OpenIssue | None:
    """The issue for humans once patience paused new work: one per streak (its marker names the
    streak's PRs), none while a human has paused anyway, none once the bot's steering issues carry it."""
    streak = patience_streak(w.exps, w.steer.resumed_after)
    if cfg.patience is None or len(streak) < cfg.patience or w.steer.paused:
        return None
    marker = f"<!-- senpai:attention:{'-'.join(str(e.pr) for e in streak)} -->"
    if marked(w.issues, marker, w.bot):
        return None
    tried = "\n".join(
        f"- #{e.pr} {cell(e.hypothesis.id if e.hypothesis else '?')} {params(e.hypothesis.params if e.hypothesis else {})}: "
        f"{cell(e.decision.reason if e.decision else e.state, 300)}"
        for e in streak
    )
    body = (
        f"senpai stopped opening new experiments: the last {len(streak)} decided experiments did not improve "
        f"on the baseline (patience {cfg.patience}). Running work finishes.\n\nWhat was tried:\n{neutral(tried)}\n\n"
        "To go on, comment `/senpai resume` here. You can also steer first:\n\n"
        f"{SYNTAX}\n\nFree text here goes to the advisor.\n\n{marker}"
    )
    return OpenIssue(marker, f"senpai paused: {len(streak)} experiments without improvement", body, (STEER, ATTENTION))


def _measures_base(e: Experiment) -> bool:
    return bool(e.hypothesis and e.hypothesis.measures_base)
