"""Escalation: senpai's own repeated failures, handed to humans once.

When a job keeps failing on infrastructure (see `senpai.wrapper.policy.infra_failure`), the
wrapper blocks the PRs it was for (`transitions.block`, one comment each) and opens one issue for
humans through `open_issue`.  The issue carries a hidden marker derived from a stable key (the
job's base name, or the advisor batch's digest), so a replay or a restarted wrapper finds it again
instead of opening a second one.
"""

import hashlib
import re

from senpai.forge.base import Forge, Issue
from senpai.ledger.labels import ATTENTION, SENPAI, STEER
from senpai.ledger.redact import redact

_MARKER = re.compile(r"<!-- senpai:escalation:([0-9a-f]{16}) -->")


def escalation_id(key: str) -> str:
    """The 16-hex id of escalation `key` (what the issue's marker carries)."""
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def escalated(issues: list[Issue], bot: str) -> frozenset[str]:
    """Ids of the escalations that already have an issue written by `bot` among `issues`."""
    return frozenset(m for i in issues if i.user == bot for m in _MARKER.findall(i.body))


def open_issue(forge: Forge, key: str, title: str, body: str) -> int:
    """Open the issue for escalation `key` once; returns its number (the existing one on replay).

    Labelled `senpai`, `senpai:steer` and `senpai:attention`, like every issue senpai opens for
    humans, so replies on it reach the advisor.  GitHub REST: GET .../issues?labels=senpai&state=all,
    then POST .../issues if none carries the marker.
    """
    marker = f"<!-- senpai:escalation:{escalation_id(key)} -->"
    found = [i for i in forge.list_issues(SENPAI, "all") if i.user == forge.login and marker in i.body]
    if found:
        return found[0].number
    return forge.create_issue(redact(title), f"{redact(body)}\n\n{marker}", [SENPAI, STEER, ATTENTION]).number
