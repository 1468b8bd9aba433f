"""Tracker port: give a run its identity before the program starts, read it back after.

The target program logs its own run with wandb exactly as it would without senpai; the student only
sets wandb's standard env vars (WANDB_RUN_ID, WANDB_RUN_GROUP, WANDB_NAME, WANDB_TAGS, WANDB_JOB_TYPE,
WANDB_NOTES, WANDB_GIT_COMMIT, WANDB_GIT_REMOTE_URL, WANDB_PROJECT, WANDB_MODE, WANDB_DIR) so the run
carries senpai's identity. The runs senpai measures or spends itself (the verifier's holdout numbers,
an agent turn's LLM and tool calls) it logs itself (`log_run`).
"""

from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

Scalar = str | int | float | bool | None
JobType = Literal["train", "verify", "agent"]


class RunIdentity(BaseModel):
    """Who a run is. W&B: id (unique per installation, `senpai.job.runs.run_id`), group
    `pr-<n>`, name `<student>/pr-<n>/<attempt>`, tags, job type, notes (a link to the PR), the
    experiment's git commit and remote, config."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9-]{1,64}$")
    group: str
    name: str
    tags: list[str]
    job_type: JobType = Field("train", description="train: a student's run; verify: the verifier's; agent: an agent turn.")
    notes: str | None = Field(None, description="Free text shown with the run: the PR's web URL.")
    git_commit: str | None = Field(None, description="The commit the run measured (the PR head), not senpai's own.")
    git_remote: str | None = Field(None, description="The target repository's clone URL, never one with a credential.")
    config: dict[str, Scalar] = Field(
        default_factory=dict, description="pr, head, hypothesis id; the params are added by senpai."
    )


class RunTable(BaseModel):
    """Rows senpai logs as one W&B Table of a run it logs itself (`Tracker.log_run`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[a-z_]{1,32}$", description="The table's key in the run.")
    columns: list[str]
    rows: list[list[Scalar]] = Field(description="One list per row, in `columns` order.")


class RunRecord(BaseModel):
    """A run as read back from the tracker (offline files or the W&B API)."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str | None
    group: str | None
    tags: list[str]
    config: dict[str, Any]
    summary: dict[str, Any] = Field(description="Last value of each logged key (wandb summary).")
    state: Literal["finished", "crashed", "running", "unknown"]
    url: str | None = Field(description="Web URL when synced/online; None offline (never hard-coded).")
    path: str | None = Field(None, description="Offline run directory, when offline.")
    job_type: str | None = None
    notes: str | None = None
    git_commit: str | None = Field(None, description="The commit wandb recorded for the run.")
    git_remote: str | None = Field(None, description="The remote URL wandb recorded for the run.")


class ReportSpec(BaseModel):
    """What `senpai report` publishes to the tracker: a W&B Report (title, the Markdown summary, and
    panels of `metric` over the runs tagged `tag`) and a saved workspace with the same panels."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    title: str = Field(max_length=128, description="Report title (W&B allows 128 characters).")
    description: str = Field(max_length=1000)
    markdown: str = Field(max_length=200_000, description="The ledger summary (`senpai report --format md`).")
    metric: str = Field(description="Primary metric: the summary key the panels plot.")
    tag: str = Field("senpai", description="Runs carrying this tag are the report's run set.")


class Tracker(Protocol):
    """Port over the experiment tracker."""

    installation: str  # this installation's id (8 hex digits): part of every run id, so two never share one

    def env_for(self, run: RunIdentity, folder: Path) -> dict[str, str]:
        """Env vars that make the program's own `wandb.init()` log as `run`, offline, into `folder`
        (a new folder of the command's own, its WANDB_DIR): WANDB_RUN_ID, WANDB_RUN_GROUP,
        WANDB_NAME, WANDB_TAGS (comma-separated), WANDB_JOB_TYPE, WANDB_NOTES, WANDB_GIT_COMMIT,
        WANDB_GIT_REMOTE_URL, WANDB_PROJECT, WANDB_MODE, WANDB_DIR, and a file holding `run.config`,
        written in `folder` (see senpai/tracker/wandb.py for the variable). No key: the command
        holds none (`collect_run`)."""
        ...

    def collect_run(self, run_id: str, folder: Path, window: tuple[datetime, datetime]) -> RunRecord:
        """Take the run `run_id` a command logged under `folder` (`env_for`) while it ran (`window`:
        its start and end, aware datetimes) into the tracker (online: upload it), and read it back.
        Raises NotFound if the command logged no such run, TransientError if it cannot be taken."""
        ...

    def log_run(self, run: RunIdentity, summary: dict[str, float], table: RunTable | None = None) -> RunRecord:
        """Log a run senpai itself measured (the verifier's holdout numbers, an agent turn's calls):
        `summary` as its summary, `table` as a W&B Table. Returns it as read back (its url online)."""
        ...

    def add_tags(self, group: str, tags: list[str]) -> int:
        """Add `tags` to this installation's runs of `group` (a verdict, once decided): now online;
        offline, nothing (`senpai sync` takes the verdicts from the ledger). Returns the runs tagged now."""
        ...

    def get_run(self, run_id: str, window: tuple[datetime, datetime] | None = None) -> RunRecord:
        """Read a run back by id. `window` (start, end; aware datetimes): the run was started in it,
        by the train command the caller ran then, so a copy of the run written at another time (by
        a PR's code, in a folder it can write) does not count; online the W&B server is
        authoritative and the window is not used. Raises NotFound if no such run exists (in the
        window)."""
        ...

    def get_runs(self, run_ids: Iterable[str]) -> dict[str, RunRecord]:
        """`get_run` for many ids at once, in one look at the tracker's store: the runs that exist, by id."""
        ...

    def list_runs(self, group: str | None = None) -> list[RunRecord]:
        """All runs (optionally of one group), sorted by id."""
        ...

    def check_access(self) -> str:
        """Online mode: check the API key and entity, return who they are. Raises Forbidden, TransientError."""
        ...

    def publish_report(self, spec: ReportSpec) -> list[str]:
        """Online mode: save `spec` as a W&B Report and a saved workspace of the project; return their
        URLs. Offline: nothing, and []. Raises ConfigError (the optional `report` extra is missing),
        TransientError (W&B cannot be reached)."""
        ...
