"""Human steering as read from the forge: trusted messages, and the steering state the acks record.

Sources (design §4): the body and comments of open issues labelled `senpai:steer`, and the
comments of open senpai PRs.  Only authors whose `author_association` is in `forge.trusted` become
messages, and never the bot itself; everything else is not read at all (never delivered, never
applied).  A PR body is the hypothesis, not a message.

The steering state (paused, experiment cap, queued `/senpai try`s) is the fold, in comment order,
of the `senpai-steer` records in the bot's acknowledgements, so deleting the wrapper's state store
loses none of it.  An ack counts only while the message it quotes is there, trusted, and at the
version the ack names: editing or deleting a command withdraws it (an edited command is applied
again as its new version).  The wrapper applies command messages in `Inbound.order` (the order they were
written) and posts one ack each, so the acks' order is the order the commands were written.
"""

import hashlib
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from senpai.forge.base import Comment, Issue, PullRequest
from senpai.ledger.blocks import Scalar, Steer, SteerCommand, TurnCost
from senpai.ledger.events import Message, message_ref
from senpai.ledger.labels import student_of
from senpai.ledger.records import bot_records, by_bot
from senpai.ledger.replies import replied


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
class Inbound:
    """A trusted message, where it was written, and whether the bot acknowledged this version."""

    message: Message
    on_pr: bool
    labels: list[str]
    at: datetime  # comment updated_at (issue body: issue created_at), UTC
    acked: bool
    closed: bool = False  # written on a PR that is closed now (only command messages are read there)

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


def is_trusted(x: Comment | Issue, trusted: list[str], bot: str) -> bool:
    """The trust rule: a trusted association, and not the bot's own words."""
    return not by_bot(x, bot) and x.author_association in trusted


def issue_inbox(issue: Issue, comments: list[Comment], trusted: list[str], bot: str) -> list[Inbound]:
    """Trusted messages of one steering issue: its body, then its comments, oldest first."""
    out = []
    if issue.body.strip() and is_trusted(issue, trusted, bot):
        m = _message(issue.number, None, issue.user, issue.author_association, issue.body, None)
        out.append(Inbound(m, False, issue.labels, issue.created_at, replied(comments, m, bot, "ack")))
    return out + _comments_inbox(issue.number, False, issue.labels, comments, trusted, bot, None)


def pr_inbox(pr: PullRequest, comments: list[Comment], trusted: list[str], bot: str) -> list[Inbound]:
    """Trusted comments on one senpai PR, oldest first (`closed` set if the PR is closed)."""
    return _comments_inbox(pr.number, True, pr.labels, comments, trusted, bot, pr.html_url, pr.state == "closed")


def _comments_inbox(number, on_pr, labels, comments, trusted, bot, url, closed=False) -> list[Inbound]:
    out = []
    for c in comments:
        if c.body.strip() and is_trusted(c, trusted, bot):
            m = _message(number, c, c.user, c.author_association, c.body, f"{url}#issuecomment-{c.id}" if url else None)
            out.append(Inbound(m, on_pr, labels, c.updated_at, replied(comments, m, bot, "ack"), closed))
    return out


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


LIMIT_FIELDS = {"dollars", "tokens", "gpu_hours", "cpu_hours", "end_at"}  # of SteerCommand and LimitSettings


@dataclass(frozen=True)
class SteerState:
    """What the humans' slash commands set, as recorded in the acks (oldest applied first)."""

    paused: bool = False
    experiments: int | None = None  # `/senpai budget experiments=N`; None: the config's max_experiments
    limits: dict[str, float | int | str] = field(default_factory=dict)  # `/senpai budget` other keys: field -> value
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
    `current` (the thread's trusted messages, as read now) at its current version.  An ack of a
    message that is gone, edited or no longer trusted, an unreadable ack, and an ack edited after
    the bot posted it (senpai never edits its comments: anyone with write access could put an
    approval or a budget in it) are skipped; `replies.replied` skips the edited one too, so the
    message is acknowledged again, as the bot reads it."""
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
    if c.verb == "budget":
        raised = c.model_dump(include=LIMIT_FIELDS, exclude_none=True)
        experiments = c.experiments if c.experiments is not None else state.experiments
        return replace(state, experiments=experiments, limits={**state.limits, **raised})
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


def pr_steer(pr: PullRequest, comments: list[Comment], trusted: list[str], bot: str) -> SteerState:
    """The steering state of `pr`'s own thread: the fold of the bot's acks of trusted commands that
    still stand there (not edited or deleted since).  `comments` are the PR's."""
    return fold(steer_blocks(comments, bot, pr_inbox(pr, comments, trusted, bot)))
