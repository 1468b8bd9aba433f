"""What the wrapper's policy asks for, and the `Dispatcher` carries out: plain frozen records.

The policy (`senpai.wrapper.policy.plan`, with the steering rules of `senpai.wrapper.steering`)
returns them and never touches the forge or the fleet; the `Dispatcher` is the only place they
become fleet jobs, forge writes and replies to humans.
"""

from dataclasses import dataclass

from senpai.config.roles import Role
from senpai.ledger.blocks import Steer
from senpai.ledger.events import Event, Message


@dataclass(frozen=True)
class Launch:
    role: Role
    name: str
    args: list[str]
    pr: int | None = None
    student: str | None = None
    events: tuple[Event, ...] = ()


@dataclass(frozen=True)
class FailureEvidence:
    pr: int
    attempt: int
    job: str
    to_review: bool


@dataclass(frozen=True)
class Block:
    pr: int
    reason: str


@dataclass(frozen=True)
class DeleteJob:
    """Delete a live job: its PR was decided under it (closed or merged by hand), or a fleet cap is reached
    with `caps.on_exhausted: stop`. Frees its slot now."""

    name: str
    pr: int
    reason: str


@dataclass(frozen=True)
class FinishAttempts:
    """Move a wip PR that has used every attempt to review: its last evidence landed, but the move
    did not (the job or the wrapper died in between).  Replays that evidence's post, which is idempotent."""

    pr: int


@dataclass(frozen=True)
class RestoreStudent:
    """Put back the `student:<name>` label of an open PR (removed or changed by hand)."""

    pr: int
    student: str


@dataclass(frozen=True)
class Escalate:
    """senpai failed the same work repeatedly: block `prs` (one comment each), open one issue (by `key`)."""

    prs: tuple[int, ...]
    reason: str
    key: str
    job: str | None = None  # the last run that failed: its log tail goes into the issue
    title: str = "repeated infrastructure failures"  # what the issue's title says failed


@dataclass(frozen=True)
class Ack:
    """Answer a human's message (kind `ack`): a rejected or pointless command, the answer to
    `/senpai help` or `/senpai status`, or where a message was delivered. Once per message version
    (`senpai.ledger.replies.reply_to_human`)."""

    message: Message
    text: str


@dataclass(frozen=True)
class Stop:
    """Make an acknowledged `/senpai stop` (or `/senpai reject`, with its `reason`) true: delete
    `jobs` (the PR's live jobs), then close PR `pr` with the decision "stopped by @author" ("rejected
    by @author: reason") if it is still open. Idempotent."""

    pr: int
    author: str
    jobs: tuple[str, ...] = ()
    reason: str | None = None


@dataclass(frozen=True)
class ApplyCommand:
    """Acknowledge a slash-command message with its `senpai-steer` record (the record is what
    applies it: the steering state is the fold of these acks), then carry out its `stops`."""

    message: Message
    done: tuple[str, ...]  # one line per command: what it did, and the state it leaves; then a note per renamed one
    record: Steer
    stops: tuple[Stop, ...] = ()
    answers: str = ""  # the answers to the message's queries (`/senpai help`, `/senpai status`), after `done`


@dataclass(frozen=True)
class CloseIssue:
    """Close one of the bot's open issues for humans that no longer holds, with one comment `note`
    saying why (posted once however often it is replayed), labelled `labels` once closed; `reason`:
    the same, short, for the progress line."""

    number: int
    reason: str
    note: str
    labels: tuple[str, ...]


@dataclass(frozen=True)
class OpenIssue:
    """Open one issue for humans, unless one of the bot's issues labelled `labels[0]` already
    carries `marker` (a hidden HTML comment the body ends with); then close the bot's earlier issues
    it `supersedes`, each commented "Superseded by #<this one>." before its note (and its reason
    followed by "by #<this one>")."""

    marker: str
    title: str
    body: str
    labels: tuple[str, ...]
    supersedes: tuple[CloseIssue, ...] = ()


Action = (
    Launch
    | FailureEvidence
    | Block
    | Escalate
    | DeleteJob
    | RestoreStudent
    | FinishAttempts
    | Ack
    | Stop
    | ApplyCommand
    | OpenIssue
    | CloseIssue
)
