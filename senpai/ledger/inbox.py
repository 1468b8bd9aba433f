"""Human steering as read from the forge: trusted messages, and the steering state the acks record.

Sources (design §4): the body and comments of open issues labelled `senpai:steer`, and the
comments of open senpai PRs.  Trust is by permission, not association (`Trust`): a command that
changes state counts only from an author with write permission on the repository, read once per
author per refresh (`read_writers`); free text also from an author whose `author_association` is in
`forge.trusted`.  Only authors who may steer become messages, never the bot itself; everything else
is not read at all (never delivered, never applied: the forge adapter does not even keep the
bodies).  A PR body is the hypothesis, not a message.

The steering state (paused, experiment cap, queued `/senpai try`s) is the fold, in comment order,
of the `senpai-steer` records in the bot's acknowledgements, so deleting the wrapper's state store
loses none of it.  An ack counts only while the message it quotes is there, trusted, and at the
version the ack names: editing or deleting a command withdraws it (an edited command is applied
again as its new version).  The wrapper applies command messages in `Inbound.order` (the order they were
written) and posts one ack each, so the acks' order is the order the commands were written.
"""

import hashlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from senpai.errors import NotFound, SenpaiError
from senpai.forge.base import WRITE, WRITERS, Comment, Issue, PullRequest
from senpai.forge.read import ForgeReader
from senpai.ledger.blocks import CAPS_VERB, Scalar, Steer, SteerCommand, TurnCost
from senpai.ledger.events import Message, message_ref
from senpai.ledger.labels import student_of
from senpai.ledger.records import bot_records, by_bot
from senpai.ledger.replies import replied

log = logging.getLogger(__name__)


def version(body: str, edited_at: datetime | None = None) -> str:
    """Short hash naming one version of a message: its body and, for an edited comment, its `updated_at`.

    Every edit of a comment makes a new version, even one back to an earlier text (pause, resume,
    pause again must pause again).  An unedited comment (`edited_at` None) is named by its body
    alone, as acks posted before edits were told apart name it.  An issue body has no edit time in
    GitHub REST (the issue's `updated_at` moves with every comment), so it is named by its body:
    an issue body edited back to an earlier text is not read again (post a comment instead).
    """
    stamp = "" if edited_at is None else "\n" + edited_at.astimezone(UTC).isoformat()
    return hashlib.sha256((body + stamp).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Trust:
    """Whose messages steer, as read on one refresh (design §4: trust by permission).

    A message is read at all only from an author who may steer (`reads`): not the bot, with an
    author_association in `associations` (`forge.trusted`) or WRITERS (the only ones GitHub gives a
    user who may write). Its free text steers if the association is in `associations` or the author
    may write (`steers`); a command that changes state only if the author may write. `writers` maps
    a login to its write permission on the repository (`read_writers`); None: the read failed, so the
    author's new messages wait for the next refresh, and the acks of earlier commands still count
    (senpai's failure must not undo what a human did). A login not in it may not write."""

    bot: str
    associations: frozenset[str] = frozenset()
    writers: Mapping[str, bool | None] = field(default_factory=dict)

    def reads(self, x: Comment | Issue) -> bool:
        """Whether `x`'s body is read at all."""
        return not by_bot(x, self.bot) and (x.author_association in self.associations or x.author_association in WRITERS)

    def writer(self, login: str) -> bool | None:
        return self.writers.get(login, False)

    def steers(self, m: "Inbound") -> bool:
        """Whether `m`'s free text is delivered now (False also while its author's permission is unknown)."""
        return bool(m.writer) or (m.message.association in self.associations and m.writer is not None)

    def askable(self, items: Iterable[Comment | Issue]) -> list[str]:
        """The logins among `items`' authors whose permission is worth a request: read, and a WRITERS association."""
        return list(dict.fromkeys(x.user for x in items if self.reads(x) and x.author_association in WRITERS))


def read_writers(forge: ForgeReader, logins: Iterable[str]) -> dict[str, bool | None]:
    """Whether each of `logins` may write (`Forge.permission` admin or write), one request each
    (conditional: a 304 is free). A login the forge does not know may not (False); one it could not
    answer for (a transient error, a refusal) is None, logged: its commands wait for the next refresh."""
    out: dict[str, bool | None] = {}
    for login in dict.fromkeys(logins):
        try:
            out[login] = forge.permission(login) in WRITE
        except NotFound:
            out[login] = False
        except SenpaiError as e:
            log.warning("permission of %s not read (its commands wait for the next refresh): %s", login, e)
            out[login] = None
    return out


def trust_of(forge: ForgeReader, associations: Iterable[str], items: Iterable[Comment | Issue]) -> Trust:
    """The Trust for the messages among `items` (issues and comments, any threads): the write
    permission of each author who may hold one, read once each (`read_writers`)."""
    base = Trust(forge.login, frozenset(associations))
    return replace(base, writers=read_writers(forge, base.askable(items)))


@dataclass(frozen=True)
class Inbound:
    """A message of an author who may steer, where it was written, whether the bot acknowledged this
    version, and whether its author may write (`Trust.writer`: only then do its commands change state)."""

    message: Message
    on_pr: bool
    labels: list[str]
    at: datetime  # comment updated_at (issue body: issue created_at), UTC
    acked: bool
    closed: bool = False  # written on a PR that is closed now (only command messages are read there)
    writer: bool | None = False  # the author's write permission this refresh; None: not known (the read failed)

    @property
    def order(self) -> tuple[datetime, bool, int, int]:
        """Sort key: the order messages were written. `at` has 1-second resolution, so ties go by
        comment id (GitHub's ids increase across a repository), issue bodies (by number) first."""
        m = self.message
        return (self.at, m.comment_id is not None, m.comment_id or m.number, m.number)

    @property
    def student(self) -> str | None:
        """The student an issue labelled `student:<name>` is addressed to (None on PRs and other issues)."""
        return None if self.on_pr else student_of(self.labels)


def _message(number: int, comment: Comment | None, author: str, association: str, body: str, url: str | None) -> Message:
    return Message(
        number=number,
        comment_id=comment.id if comment else None,
        author=author,
        association=association,
        body=body,
        version=version(body, comment.updated_at if comment and comment.updated_at != comment.created_at else None),
        url=url,
    )


def issue_inbox(issue: Issue, comments: list[Comment], trust: Trust) -> list[Inbound]:
    """The messages of one steering issue whose authors may steer (`Trust.reads`): its body, then
    its comments, oldest first."""
    out, bot = [], trust.bot
    if issue.body.strip() and trust.reads(issue):
        m = _message(issue.number, None, issue.user, issue.author_association, issue.body, None)
        acked = replied(comments, m, bot, "ack")
        out.append(Inbound(m, False, issue.labels, issue.created_at, acked, writer=trust.writer(issue.user)))
    return out + _comments_inbox(issue.number, False, issue.labels, comments, trust, None)


def pr_inbox(pr: PullRequest, comments: list[Comment], trust: Trust) -> list[Inbound]:
    """The comments on one senpai PR whose authors may steer, oldest first (`closed` set if the PR is closed)."""
    return _comments_inbox(pr.number, True, pr.labels, comments, trust, pr.html_url, pr.state == "closed")


def _comments_inbox(number, on_pr, labels, comments, trust: Trust, url, closed=False) -> list[Inbound]:
    out = []
    for c in comments:
        if c.body.strip() and trust.reads(c):
            m = _message(number, c, c.user, c.author_association, c.body, f"{url}#issuecomment-{c.id}" if url else None)
            acked = replied(comments, m, trust.bot, "ack")
            out.append(Inbound(m, on_pr, labels, c.updated_at, acked, closed, trust.writer(c.user)))
    return out


def standing(messages: list[Inbound]) -> list[Inbound]:
    """The messages whose acks still count: their authors may write (or could not be asked this refresh)."""
    return [m for m in messages if m.writer is not False]


@dataclass(frozen=True)
class Try:
    """A `/senpai try` the wrapper accepted: open `params` for the next idle student."""

    ref: str  # `<message ref>/<command index>`, recorded as the hypothesis's `request`
    author: str
    params: dict[str, Scalar]


@dataclass(frozen=True)
class Reject:
    """A `/senpai reject <fingerprint> reason...` the wrapper accepted: close the PR with `reason`."""

    author: str
    fingerprint: str
    reason: str


CAP_FIELDS = {"dollars", "tokens", "gpu_hours", "cpu_hours", "end_at"}  # of SteerCommand and CapSettings


@dataclass(frozen=True)
class SteerState:
    """What the humans' slash commands set, as recorded in the acks (oldest applied first)."""

    paused: bool = False
    experiments: int | None = None  # `/senpai caps experiments=N`; None: the config's max_experiments
    caps: dict[str, float | int | str] = field(default_factory=dict)  # `/senpai caps` other keys: field -> value
    resumed_after: frozenset[int] = frozenset()  # PRs decided before the last resume (patience restarts)
    tries: tuple[Try, ...] = ()
    stops: dict[int, str] = field(default_factory=dict)  # PR -> login that sent `/senpai stop`
    compute_allowed: dict[int, str] = field(default_factory=dict)  # PR -> login that sent `/senpai allow compute`
    approvals: dict[int, dict[str, str]] = field(default_factory=dict)  # PR -> fingerprint -> login that approved it
    rejects: dict[int, Reject] = field(default_factory=dict)  # PR -> its `/senpai reject`
    # not a human's setting: the bot's records of the advisor turns about no PR, read from the
    # steering issues with the acks (`spend.read_turns`) so the caps that take this state count them
    advisor_turns: tuple[TurnCost, ...] = ()


def steer_blocks(comments: list[Comment], bot: str, current: list[Inbound]) -> list[tuple[Comment, Steer]]:
    """The `senpai-steer` records among `comments` of one thread: the bot's acks of a message in
    `current` (the thread's messages whose acks still count, `standing`, as read now) at its
    current version.  An ack of a message that is gone, edited or whose author may no longer
    write, an unreadable ack, and an ack edited after the bot posted it (senpai never edits its
    comments: anyone with write access could put an approval or a caps command in it) are skipped;
    `replies.replied` skips the edited one too, so the message is acknowledged again, as the bot
    reads it."""
    refs = {message_ref(m.message) for m in current}
    if not refs:
        return []  # most threads (every PR nobody wrote on): no ack can count, none is parsed
    return [(c, b) for c, b in bot_records(comments, bot, Steer) if b.message in refs]


def fold(acks: list[tuple[Comment, Steer]]) -> SteerState:
    """The steering state after every ack, applied in the order they were posted (comment ids break
    ties of the 1-second `created_at`)."""
    state = SteerState()
    for _, s in sorted(acks, key=lambda a: (a[0].created_at, a[0].id)):
        for i, c in enumerate(s.commands):
            state = apply_command(state, s, i, c)
    return state


def apply_command(state: SteerState, block: Steer, index: int, c: SteerCommand) -> SteerState:
    """`state` after command `index` (`c`) of the ack `block`: one step of the fold."""
    if c.verb in ("pause", "resume"):
        decided = frozenset(c.decided) if c.verb == "resume" else state.resumed_after
        return replace(state, paused=c.verb == "pause", resumed_after=decided)
    if c.verb == CAPS_VERB:
        raised = c.model_dump(include=CAP_FIELDS, exclude_none=True)
        experiments = c.experiments if c.experiments is not None else state.experiments
        return replace(state, experiments=experiments, caps={**state.caps, **raised})
    if c.verb == "try":
        return replace(state, tries=(*state.tries, Try(f"{block.message}/{index}", block.author, dict(c.params))))
    if c.verb == "allow" and c.pr is not None:
        return replace(state, compute_allowed={**state.compute_allowed, c.pr: block.author})
    if c.verb == "stop" and c.pr is not None:
        return replace(state, stops={**state.stops, c.pr: block.author})
    if c.verb == "approve" and c.pr is not None and c.fingerprint:
        approved = {**state.approvals.get(c.pr, {}), c.fingerprint: block.author}
        return replace(state, approvals={**state.approvals, c.pr: approved})
    if c.verb == "reject" and c.pr is not None and c.fingerprint:
        reject = Reject(block.author, c.fingerprint, c.reason or "")
        return replace(state, rejects={**state.rejects, c.pr: reject})
    return state


def pr_steer(pr: PullRequest, comments: list[Comment], trust: Trust) -> SteerState:
    """The steering state of `pr`'s own thread: the fold of the bot's acks of commands that still
    stand there (not edited or deleted since, their authors may still write).  `comments` are the PR's."""
    return fold(steer_blocks(comments, trust.bot, standing(pr_inbox(pr, comments, trust))))
