"""Tracker port: give a run its identity before the program starts, read it back after.

The target program logs its own run with wandb exactly as it would without senpai; the student only
sets wandb's standard env vars (WANDB_RUN_ID, WANDB_RUN_GROUP, WANDB_NAME, WANDB_TAGS,
WANDB_PROJECT, WANDB_MODE, WANDB_DIR) so the run carries senpai's identity.
"""

from collections.abc import Iterable
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field


class RunIdentity(BaseModel):
    """Who a run is. W&B: id, group `pr-<n>`, name `<student>/pr-<n>/<attempt>`, tags, config."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9-]{1,64}$")
    group: str
    name: str
    tags: list[str]
    config: dict[str, str | int | float | bool | None] = Field(
        default_factory=dict, description="pr, head, hypothesis id; the params are added by senpai."
    )


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

    def env_for(self, run: RunIdentity) -> dict[str, str]:
        """Env vars that make the program's own `wandb.init()` log as `run`: WANDB_RUN_ID,
        WANDB_RUN_GROUP, WANDB_NAME, WANDB_TAGS (comma-separated), WANDB_PROJECT, WANDB_MODE,
        WANDB_DIR, and a file holding `run.config` (see senpai/tracker/wandb.py for the variable)."""
        ...

    def get_run(self, run_id: str) -> RunRecord:
        """Read a run back by id. Raises NotFound if no such run exists."""
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
