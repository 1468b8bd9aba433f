"""The target repository's `senpai.yaml`: what to train, what to measure, what to search, what is
protected, and what one experiment may spend."""

import math
from pathlib import Path, PurePosixPath
from typing import Annotated, Literal, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from senpai.config.load import load_yaml_model

CONFIG_FILE = "senpai.yaml"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Metric(_Strict):
    """The primary metric: one scalar the program reports."""

    name: str = Field(description="Key of the metric, e.g. `val_accuracy`.", min_length=1)
    direction: Literal["maximize", "minimize"] = Field(description="Which way is better.")
    source: Literal["wandb", "stdout"] = Field(
        "wandb",
        description="`wandb`: the summary of the W&B run the program logs; "
        "`stdout`: the last `name: value` line the program prints.",
    )
    target: float | None = Field(None, description="Value at which the research program is done.")

    def better(self, a: float, b: float) -> float:
        """Improvement of `a` over `b` in the metric's direction (positive = `a` is better)."""
        return a - b if self.direction == "maximize" else b - a


class IntParam(_Strict):
    type: Literal["int"]
    low: int
    high: int
    log: bool = False

    @model_validator(mode="after")
    def _range(self):
        if self.low > self.high or (self.log and self.low <= 0):
            raise ValueError("expected low <= high (and low > 0 with log: true)")
        return self


class FloatParam(_Strict):
    type: Literal["float"]
    low: float
    high: float
    log: bool = False

    @model_validator(mode="after")
    def _range(self):
        if not (math.isfinite(self.low) and math.isfinite(self.high)) or self.low > self.high:
            raise ValueError("expected finite low <= high")
        if self.log and self.low <= 0:
            raise ValueError("expected low > 0 with log: true")
        return self


class CategoricalParam(_Strict):
    type: Literal["categorical"]
    choices: list[str | int | float | bool] = Field(min_length=1)


ParamSpec = Annotated[Union[IntParam, FloatParam, CategoricalParam], Field(discriminator="type")]


def _inside_repo(path: str) -> str:
    """A repo-relative path that stays inside the repository (no absolute path, no `..`)."""
    parts = PurePosixPath(path).parts
    if not path or PurePosixPath(path).is_absolute() or ".." in parts:
        raise ValueError(f"expected a path relative to the repository root, inside it (no leading / and no ..), got {path!r}")
    return path


RepoPath = Annotated[str, AfterValidator(_inside_repo)]


class Params(_Strict):
    """The params file the program reads, and the space the `search` runtime explores."""

    file: RepoPath = Field(description="Path of the JSON params file, relative to the repo root.")
    space: dict[str, ParamSpec] = Field(min_length=1, description="Search space, one entry per key.")


class Holdout(_Strict):
    """The verifier's evaluation: run for each seed on the candidate head and on the baseline."""

    command: str = Field(description="Shell command; `{seed}` is replaced by the seed.")
    metric: str = Field(description="Key of the `key: value` line the command prints on stdout.")
    seeds: list[int] = Field(
        default=[0, 1, 2], min_length=2, description="Distinct seeds: the noise floor needs repeats that differ."
    )
    noise_k: float = Field(2.0, ge=0, description="Noise floor = noise_k x stdev of baseline repeats.")
    min_floor: float = Field(0.0, ge=0, description="Lower bound on the noise floor, in metric units.")

    @model_validator(mode="after")
    def _repeats_differ(self) -> "Holdout":
        if "{seed}" not in self.command:
            raise ValueError("holdout.command must contain {seed}: each repeat runs with its own seed")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"holdout.seeds must be distinct, got {self.seeds}")
        return self


class Budget(_Strict):
    """What one experiment may spend."""

    wall_seconds: int = Field(600, gt=0, description="Wall time per job, seconds; killed after.")
    attempts: int = Field(2, ge=1, description="Student attempts before the PR goes to review as failed.")


class TargetConfig(_Strict):
    """Schema of `senpai.yaml` at the root of the target repository (schema_version 1)."""

    schema_version: Literal[1] = 1
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9._-]+$")
    program: RepoPath = Field("program.md", description="Research context for agents, relative path.")
    train: str = Field(description="Shell command that trains and reports the primary metric.")
    metric: Metric
    params: Params
    holdout: Holdout | None = None
    protected: list[RepoPath] = Field(default_factory=list, description="Paths (files or directories) a merge may never touch.")
    budget: Budget = Budget()

    def is_protected(self, path: str) -> bool:
        """True if repo-relative `path` is a protected file or lies under a protected directory."""
        for p in [*self.protected, CONFIG_FILE]:
            p = p.rstrip("/")
            if path == p or path.startswith(p + "/"):
                return True
        return False


def load_target(repo_dir: Path | str) -> TargetConfig:
    """Load `<repo_dir>/senpai.yaml`. Raises ConfigError (exit 2) naming the field on bad input."""
    return load_yaml_model(Path(repo_dir) / CONFIG_FILE, TargetConfig)
