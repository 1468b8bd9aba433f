"""Events: what the wrapper saw change, with stable ids, handed to an agent turn.

An id names the fact and the version it is about (`review:pr-12@<head>`), so the same fact seen
twice (after a restart, or on two ticks) is the same event.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ENV_EVENTS = "SENPAI_EVENTS"  # a job's events: an EventBatch as JSON, set by the wrapper when it launches the job
Kind = Literal["review", "verified", "idle", "stale", "message", "try"]
Scalar = str | int | float | bool | None


class Message(BaseModel):
    """A trusted human's message (issue body, issue comment or PR comment), one version of it.

    Only authors whose author_association is in `forge.trusted` become messages; the wrapper
    never turns anything else into one.
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
    id: str = Field(description="Stable id, e.g. `review:pr-12@3f2a...`, `idle:ada@<base sha>`.")
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
