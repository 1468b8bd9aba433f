"""Harness settings: which forge, which repo, which students, where state lives.

One YAML file (`--config`, or `SENPAI_CONFIG`) read by the wrapper and by every job it launches;
on Kubernetes the chart renders it into a ConfigMap.  Secrets are never in it: only the *names*
of the environment variables that hold them.
"""

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from senpai.config.load import load_yaml_model
from senpai.errors import ConfigError

ENV_CONFIG = "SENPAI_CONFIG"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StudentSpec(_Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,30}$")
    gpus: int = Field(0, ge=0)


class ForgeSettings(_Strict):
    base_url: str = Field("https://api.github.com", description="REST root: github.com, GHES or local.")
    repo: str = Field(pattern=r"^[\w.-]+/[\w.-]+$", description="owner/name of the target repository.")
    token_env: str = Field("GITHUB_TOKEN", description="Env var holding the token; may be unset locally.")
    base_branch: str = Field("advisor", description="Research base branch; merges land here.")
    trusted: list[str] = Field(default=["OWNER", "MEMBER", "COLLABORATOR"], description="author_association values that steer.")

    def token(self) -> str | None:
        return os.environ.get(self.token_env) or None


class TrackerSettings(_Strict):
    project: str = "senpai"
    entity: str | None = None
    dir: str = Field(description="WANDB_DIR shared by every job; offline runs are written under it.")
    mode: Literal["auto", "online", "offline"] = Field("auto", description="auto: online if WANDB_API_KEY is set, else offline.")

    def resolved_mode(self) -> str:
        if self.mode != "auto":
            return self.mode
        return "online" if os.environ.get("WANDB_API_KEY") else "offline"


class FleetSettings(_Strict):
    backend: Literal["local"] = "local"
    dir: str = Field(description="Local backend: one folder per job (work copy, log, status).")


class RuntimeSettings(_Strict):
    advisor: Literal["search"] = "search"
    student: Literal["search"] = "search"
    seed: int = Field(0, description="Seed of the search runtime's sampler.")


class HarnessConfig(_Strict):
    """Schema of the harness config file (schema_version 1)."""

    schema_version: Literal[1] = 1
    forge: ForgeSettings
    tracker: TrackerSettings
    fleet: FleetSettings
    runtime: RuntimeSettings = RuntimeSettings()
    students: list[StudentSpec] = Field(min_length=1)
    state_dir: str = Field(description="Wrapper's SQLite cache lives here; deleting it loses nothing.")
    tick_seconds: float = Field(5.0, gt=0, description="Wrapper poll interval, seconds.")
    full_refresh_seconds: float = Field(60.0, gt=0, description="Re-list the forge even without a change.")
    max_experiments: int | None = Field(None, ge=1, description="Open no more than this many experiments in all (any state).")
    patience: int | None = Field(None, ge=1, description="Pause assignments after this many decided experiments without a merge.")
    advisor_wall_seconds: int = Field(600, gt=0, description="Wall time of one advisor turn, seconds.")
    verifier_wall_seconds: int = Field(1800, gt=0, description="Wall time of one verifier run, seconds.")
    stale_after_seconds: float = Field(1800.0, gt=0, description="WIP with no live job this long is stale.")


def load_harness(path: Path | str | None = None) -> HarnessConfig:
    """Load the harness config from `path` or `$SENPAI_CONFIG`. Raises ConfigError (exit 2)."""
    path = path or os.environ.get(ENV_CONFIG)
    if not path:
        raise ConfigError(f"no harness config: pass --config or set {ENV_CONFIG}")
    return load_yaml_model(path, HarnessConfig)
