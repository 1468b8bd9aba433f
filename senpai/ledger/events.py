"""Events: what the wrapper saw change, with stable ids, handed to an agent turn.

An id names the fact and the version it is about, so the same fact seen twice (after a restart, or
on two ticks) is the same event.  The ids, built only by the constructors below and read back by
`parse_event_id`:

    review:pr-<n>@<head>/a<attempts>d<decisions>      stale:pr-<n>@<head>/a<attempts>d<decisions>
    verified:pr-<n>@<head>/a<attempts>d<decisions>..<base>
    idle:<student>@<base>:<experiments>               try:<try ref>      message:<message ref>
"""

import re
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

ENV_EVENTS = "SENPAI_EVENTS"  # a job's events: an EventBatch as JSON, set by the wrapper when it launches the job
Kind = Literal["review", "verified", "idle", "stale", "message", "try"]
Scalar = str | int | float | bool | None


class Message(BaseModel):
    """A message of a human who may steer (issue body, issue comment or PR comment), one version of it.

    Only authors who may steer become messages (`senpai.ledger.inbox.Trust`: write permission on the
    repository, or, for free text, an author_association in `forge.trusted`); the wrapper never turns
    anything else into one.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    number: int = Field(description="Issue or PR number the message was written on.")
    comment_id: int | None = Field(None, description="None: the issue body itself.")
    author: str
    association: str = Field(description="GitHub author_association: OWNER, MEMBER, COLLABORATOR.")
    body: str
    version: str = Field(
        description="Short hash of the body (and, for an edited comment, its updated_at): each edit is a new version."
    )
    url: str | None = None


def message_ref(m: Message) -> str:
    """`<number>:<comment id, 0 for an issue body>:<version>`: names one version of a message."""
    return f"{m.number}:{m.comment_id or 0}:{m.version}"


class Event(BaseModel):
    """One thing an agent turn should look at (the advisor; a student only gets `message` events)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str = Field(description="Stable id, e.g. `review:pr-12@3f2a.../a1d0`, `idle:ada@<base sha>:3`.")
    kind: Kind
    pr: int | None = None
    student: str | None = None
    head: str | None = None
    message: Message | None = Field(None, description="Set for kinds `message` and `try` (human steering).")
    params: dict[str, Scalar] | None = Field(
        None, description="Kind `try`: the human's params (validated, typed) to open for `student` before any proposal."
    )
    by: str | None = Field(None, description="Kind `try`: login of the human who asked.")


class EventBatch(BaseModel):
    """The input of one turn (env SENPAI_EVENTS): messages first, then the queued work."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    schema_version: Literal[1] = 1
    events: list[Event]


class EventId(NamedTuple):
    """The parts of an event id (`parse_event_id`); a part the kind does not have is None.
    `version`: `/a<attempts>d<decisions>` (`senpai.wrapper.policy.evidence_version`);
    `experiments`: how many experiments the ledger held; `resolved`: how many failed measurements of
    the base had their humans' issue closed (`idle_event`); `ref`: a try's or a message's ref."""

    kind: Kind
    pr: int | None = None
    head: str | None = None
    version: str | None = None
    base: str | None = None
    student: str | None = None
    experiments: int | None = None
    ref: str | None = None
    resolved: int | None = None


_AT = r"pr-(?P<pr>\d+)@(?P<head>[^/]+)(?P<version>/a\d+d\d+)"
_PARTS = {  # each kind's grammar after `<kind>:`
    "review": re.compile(_AT),
    "stale": re.compile(_AT),
    "verified": re.compile(rf"{_AT}\.\.(?P<base>.+)"),
    "idle": re.compile(r"(?P<student>[^@]+)@(?P<base>[^:]+):(?P<experiments>\d+)(?:/(?P<resolved>\d+))?"),
    "try": re.compile(r"(?P<ref>.+)", re.DOTALL),
    "message": re.compile(r"(?P<ref>.+)", re.DOTALL),
}


def parse_event_id(event_id: str) -> EventId:
    """The parts of an id the constructors below built. Raises ValueError on any other string."""
    kind, _, rest = event_id.partition(":")
    m = _PARTS[kind].fullmatch(rest) if kind in _PARTS else None
    if m is None:
        raise ValueError(f"not an event id: {event_id[:80]!r}")
    numbers = ("pr", "experiments", "resolved")
    return EventId(kind, **{k: int(v) if k in numbers and v is not None else v for k, v in m.groupdict().items()})  # type: ignore[arg-type]


def pr_event(kind: Literal["review", "stale", "verified"], pr: int, head: str, version: str, base: str | None = None) -> Event:
    """A PR's event at `head` and evidence `version`; `verified` also names the `base` it was verified on."""
    at = f"pr-{pr}@{head}{version}" + (f"..{base}" if kind == "verified" else "")
    return Event(id=f"{kind}:{at}", kind=kind, pr=pr, head=head)


def idle_event(student: str, base: str, experiments: int, resolved: int = 0) -> Event:
    """New work for `student`, idle at base head `base` while the ledger held `experiments` experiments
    and `resolved` failed measurements of that base had their humans' issue closed
    (`basefails.resolved`: a closure wakes the advisor again to measure the base again)."""
    again = f"/{resolved}" if resolved else ""
    return Event(id=f"idle:{student}@{base}:{experiments}{again}", kind="idle", student=student)


def try_event(ref: str, student: str, params: dict[str, Scalar], by: str) -> Event:
    """The `/senpai try` `ref` (`<n>:<comment>:<version>/<i>`) by `by`, to open for `student`."""
    return Event(id=f"try:{ref}", kind="try", student=student, params=params, by=by)


def message_id(m: Message) -> str:
    """The id of the event of message version `m`."""
    return f"message:{message_ref(m)}"


def message_event(m: Message, pr: int | None) -> Event:
    """The event of message version `m`; `pr`: the student PR it is routed to (None: the advisor)."""
    return Event(id=message_id(m), kind="message", pr=pr, message=m)
