"""Fleet port: one job per agent turn or verifier run, named deterministically.

Names look like `senpai-<role>-pr<n>-<attempt>`; launching a name that already exists is success
and returns the existing job (so a restarted wrapper never duplicates a job).
"""

from datetime import datetime
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["advisor", "student", "verifier"]
Phase = Literal["pending", "running", "succeeded", "failed"]


class JobSpec(BaseModel):
    """What to run. The command starts in an empty work dir; it clones what it needs itself."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", description="DNS-1123 label.")
    role: Role
    pr: int | None = None
    student: str | None = None
    command: list[str] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict, description="Non-secret env for the job.")
    wall_seconds: int = Field(gt=0, description="Killed after this many seconds (phase failed, DeadlineExceeded).")
    gpus: int = Field(0, ge=0)


class JobStatus(BaseModel):
    """A job as the backend sees it now."""

    model_config = ConfigDict(frozen=True)

    name: str
    role: Role
    pr: int | None
    student: str | None
    phase: Phase
    exit_code: int | None = None
    reason: str | None = Field(None, description="DeadlineExceeded, OOMKilled, Error, Killed ...")
    started_at: datetime | None = None
    finished_at: datetime | None = None

    @property
    def done(self) -> bool:
        return self.phase in ("succeeded", "failed")


class Fleet(Protocol):
    """Port over where jobs run."""

    def launch(self, spec: JobSpec) -> JobStatus:
        """Start `spec`; if a job of that name exists, return it unchanged (already exists = success)."""
        ...

    def get(self, name: str) -> JobStatus | None:
        """Status of job `name`, or None if there is none."""
        ...

    def list(self) -> list[JobStatus]:
        """Every job this fleet knows, finished ones included, sorted by name."""
        ...

    def logs(self, name: str, tail_lines: int = 50) -> str:
        """The last `tail_lines` lines of the job's combined stdout/stderr. Raises NotFound."""
        ...

    def delete(self, name: str) -> None:
        """Kill the job if running and forget it. Deleting a missing job is a no-op."""
        ...
