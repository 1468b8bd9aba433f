"""Audit a finished forge: duplicates, infrastructure closures, unfinished PRs and lost events.

`audit(forge, tracker)` is a pure function of the forge's state (PRs, comments, issues, read through
the Forge port, i.e. PyGithub over HTTP) and the tracker's runs, so the short tests in `make test`
and the figures in `bench/` count the same things.  Counts (all ints):

- `duplicate_prs_branch`, `duplicate_prs_hypothesis`: extra PRs for one head branch / hypothesis id;
- `duplicate_comments`: extra bot comments carrying one `<!-- senpai:... -->` marker, or one body;
- `duplicate_issues`: extra senpai issues carrying one marker (or one title and body);
- `duplicate_evidence`: extra evidence blocks for one (pr, attempt);
- `duplicate_verifications`: extra verifications for one (pr, candidate head, baseline);
- `duplicate_decisions`: extra decisions for one (pr, head, verdict);
- `closed_for_infra`: experiments closed (not merged) although no attempt trained (no evidence
  names a run the tracker has), i.e. closed for senpai's failure, not the hypothesis's;
- `infra_attempts`: failed evidence without any run: an attempt spent on an infrastructure fault;
- `not_terminal`: senpai PRs still open;
- `lost_events`: a terminal PR whose state contradicts its last decision (merge decision but closed,
  close decision but merged), merged or closed with no decision, or whose last ok evidence was never
  decided (a decision on a head senpai re-applied from it counts);
- `unreadable`: experiments with a block the ledger could not read.
"""

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from senpai.forge.port import Forge
from senpai.ledger.experiment import Experiment
from senpai.ledger.labels import SENPAI
from senpai.ledger.table import LedgerReader
from senpai.tracker.base import Tracker

MARKER = re.compile(r"<!-- senpai:[^\s>]+ -->")
DUPLICATES = (
    "duplicate_prs_branch",
    "duplicate_prs_hypothesis",
    "duplicate_comments",
    "duplicate_issues",
    "duplicate_evidence",
    "duplicate_verifications",
    "duplicate_decisions",
)
COUNTS = (*DUPLICATES, "closed_for_infra", "infra_attempts", "not_terminal", "lost_events", "unreadable")


@dataclass
class Audit:
    """What `audit` found: `counts` by name (see the module docstring), `findings` one line each."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTS, 0))
    findings: list[str] = field(default_factory=list)
    experiments: int = 0
    decided: int = 0
    merged: int = 0

    @property
    def duplicates(self) -> int:
        return sum(self.counts[k] for k in DUPLICATES)

    def add(self, name: str, n: int, finding: str) -> None:
        if n > 0:
            self.counts[name] += n
            self.findings.append(f"{name}: {finding}")

    def as_dict(self) -> dict:
        return {
            **self.counts,
            "duplicates": self.duplicates,
            "experiments": self.experiments,
            "decided": self.decided,
            "merged": self.merged,
            "findings": self.findings,
        }


def _extra(keys: Iterable[object]) -> dict[object, int]:
    """Key -> how many times more than once it occurs."""
    return {k: n - 1 for k, n in Counter(keys).items() if n > 1}


def audit(forge: Forge, tracker: Tracker | None = None) -> Audit:
    """Read every PR, bot comment, senpai issue and referenced run, and count what went wrong."""
    led = LedgerReader(forge, tracker)
    exps = led.experiments()
    out = Audit(experiments=len(exps), decided=sum(e.decided for e in exps), merged=sum(e.state == "merged" for e in exps))
    for branch, n in _extra(p.head_ref for p in led.pulls).items():
        out.add("duplicate_prs_branch", n, f"branch {branch} has {n + 1} PRs")
    for hid, n in _extra(e.hypothesis.id for e in exps if e.hypothesis).items():
        out.add("duplicate_prs_hypothesis", n, f"hypothesis {hid} has {n + 1} PRs")
    for p in led.pulls:
        if SENPAI in p.labels:
            _comments(out, p.number, [c.body for c in led.comments(p) if c.user == forge.login])
    issues = forge.list_issues(SENPAI, "all")
    for key, n in _extra(_key(i.body, i.title) for i in issues if i.user == forge.login).items():
        out.add("duplicate_issues", n, f"issue {str(key)[:80]} posted {n + 1} extra time(s)")
    for e in exps:
        _experiment(out, e)
    return out


def _key(body: str, title: str = "") -> str:
    found = MARKER.findall(body)
    return found[-1] if found else f"{title}\n{body}"


def _comments(out: Audit, pr: int, bodies: list[str]) -> None:
    for key, n in _extra(_key(b) for b in bodies).items():
        out.add("duplicate_comments", n, f"PR #{pr}: {key[:80]!r} posted {n + 1} times")


def _experiment(out: Audit, e: Experiment) -> None:
    for a, n in _extra(ev.attempt for ev in e.evidence).items():
        out.add("duplicate_evidence", n, f"PR #{e.pr}: {n + 1} evidence blocks for attempt {a}")
    for k, n in _extra((v.candidate, v.baseline) for v in e.verifications).items():
        out.add("duplicate_verifications", n, f"PR #{e.pr}: {n + 1} verifications of {k[0][:8]} on {k[1][:8]}")
    for k, n in _extra((d.head, d.verdict) for d in e.decisions).items():
        out.add("duplicate_decisions", n, f"PR #{e.pr}: {n + 1} '{k[1]}' decisions on {k[0][:8]}")
    out.add("unreadable", int(e.error is not None), f"PR #{e.pr}: {e.error}")
    known = {r.id for r in e.runs if r.state != "missing"} if e.runs else {r.id for ev in e.evidence for r in ev.runs}
    trained = any(r.id in known for ev in e.evidence for r in ev.runs)
    out.add("infra_attempts", sum(ev.outcome == "failed" and not ev.runs for ev in e.evidence), f"PR #{e.pr}: run-less failures")
    out.add("closed_for_infra", int(e.state == "closed" and not trained), f"PR #{e.pr} closed with no attempt trained")
    if not e.decided:
        out.add("not_terminal", 1, f"PR #{e.pr} is {e.state}")
        return
    out.add("lost_events", int(_lost(e) is not None), f"PR #{e.pr}: {_lost(e)}")


def _lost(e: Experiment) -> str | None:
    """Why a terminal experiment's record does not explain its state; None when it does."""
    d = e.decision
    if d is None:
        return f"{e.state} with no decision"
    if (d.verdict == "merge") != (e.state == "merged"):
        return f"{e.state} but the last decision is '{d.verdict}'"
    ok = [ev for ev in e.evidence if ev.outcome == "ok"]
    # a head senpai re-applied onto a moved base stands for the head it replaced (`senpai-reapply`)
    heads = {x.head for x in e.decisions}
    for r in reversed(e.reapplies):  # newest first: a chain of re-applies leads back to the evidence
        if r.head in heads:
            heads.add(r.replaces)
    if ok and ok[-1].head not in heads:
        return f"evidence on {ok[-1].head[:8]} was never decided"
    return None
