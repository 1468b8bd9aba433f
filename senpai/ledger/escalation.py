"""Issues for humans, each opened once, and senpai's own repeated failures handed to humans.

Every issue senpai opens for humans carries a hidden marker; `open_issue_once` finds it again among
the bot's own issues (anyone could copy a marker into theirs), so a replay or a restarted wrapper
never opens a second one.  When a job keeps failing on infrastructure (see
`senpai.wrapper.policy.infra_failure`), the wrapper blocks the PRs it was for
(`transitions.block`, one comment each) and opens one issue through `open_issue`, whose marker is
derived from a stable key (the job's base name, or the advisor batch's digest).  An issue that no
longer holds (an exhaustion report superseded, or no cap reached any more) is closed through
`close_issue`, with one comment saying why.
"""

import hashlib
import re
from collections.abc import Iterable

from senpai.forge.base import Issue
from senpai.forge.port import ForgeReadWrite
from senpai.ledger.labels import ATTENTION, SENPAI, STEER
from senpai.ledger.records import by_bot, html_blocks
from senpai.ledger.redact import redact

_MARKER = re.compile(r"<!-- senpai:escalation:([0-9a-f]{16}) -->")


def marked(issues: Iterable[Issue], marker: str, bot: str) -> list[Issue]:
    """The issues among `issues` that the bot (login `bot`) wrote and that carry `marker` as an HTML
    block of their own (`records.html_blocks`): the bot's issue bodies quote hostile text too (a
    turn-limit report's YAML holds the model's tool arguments raw), and a marker there counts nothing."""
    return [i for i in issues if by_bot(i, bot) and marker in html_blocks(i.body)]


def open_issue_once(forge: ForgeReadWrite, marker: str, title: str, body: str, labels: list[str]) -> tuple[int, bool]:
    """Open the issue `title`/`body` (which carries `marker`) labelled `labels`, unless one of the
    bot's issues labelled `labels[0]` carries `marker` already; returns (its number: the lowest of
    them, True if opened now).  Two processes that both listed before either opened it (a wrapper
    restarted while the old one finishes its tick) each open one: the one that finds a lower number
    carrying the marker once it has opened its own closes its own (labelled `labels[0]` only), so
    humans get one.  GitHub REST: GET .../issues?labels=<labels[0]>&state=all, then POST
    .../issues, GET again, and PATCH .../issues/{n} for a duplicate."""
    found = marked(forge.list_issues(labels[0], "all"), marker, forge.login)
    if found:
        return min(i.number for i in found), False
    mine = forge.create_issue(title, body, labels).number
    first = min([mine, *(i.number for i in marked(forge.list_issues(labels[0], "all"), marker, forge.login))])
    if first != mine:
        forge.close_with_labels(mine, labels[:1])
        return first, False
    return mine, True


def close_issue(forge: ForgeReadWrite, number: int, note: str, labels: list[str]) -> bool:
    """Close the bot's issue `number`, labelled `labels` once closed, after one comment `note` saying
    why; returns True if the comment was posted now. The comment ends with a marker naming the close
    (`<!-- senpai:closed:<number> -->`), looked up among the bot's comments there first, so a close
    replayed after a crash between the two requests comments nothing twice. GitHub REST: GET then
    POST /repos/{o}/{r}/issues/{n}/comments, and PATCH /repos/{o}/{r}/issues/{n}."""
    marker = f"<!-- senpai:closed:{number} -->"
    said = any(by_bot(c, forge.login) and marker in html_blocks(c.body) for c in forge.list_comments(number))
    if not said:
        forge.create_comment(number, f"{note}\n\n{marker}")
    forge.close_with_labels(number, labels)
    return not said


def escalation_id(key: str) -> str:
    """The 16-hex id of escalation `key` (what the issue's marker carries)."""
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def escalated(issues: list[Issue], bot: str) -> frozenset[str]:
    """Ids of the escalations that already have an issue written by `bot` among `issues`."""
    return frozenset(m.group(1) for i in issues if by_bot(i, bot) for b in html_blocks(i.body) if (m := _MARKER.fullmatch(b)))


def open_issue(forge: ForgeReadWrite, key: str, title: str, body: str) -> int:
    """Open the issue for escalation `key` once (`open_issue_once`); returns its number (the existing
    one on replay). Labelled `senpai`, `senpai:steer` and `senpai:attention`, like every issue
    senpai opens for humans, so replies on it reach the advisor."""
    marker = f"<!-- senpai:escalation:{escalation_id(key)} -->"
    return open_issue_once(forge, marker, redact(title), f"{redact(body)}\n\n{marker}", [SENPAI, STEER, ATTENTION])[0]
