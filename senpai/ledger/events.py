"""Events: what the wrapper saw change, with stable ids, handed to an agent turn.

An id names the fact and the version it is about (`review:pr-12@<head>`), so the same fact seen
twice (after a restart, or on two ticks) is the same event.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Kind = Literal["review", "verified", "idle", "stale"]


class Event(BaseModel):
    """One thing the advisor should look at."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str = Field(description="Stable id, e.g. `review:pr-12@3f2a...`, `idle:ada@<base sha>`.")
    kind: Kind
    pr: int | None = None
    student: str | None = None
    head: str | None = None


class EventBatch(BaseModel):
    """The input file of one advisor turn."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    schema_version: Literal[1] = 1
    events: list[Event]
