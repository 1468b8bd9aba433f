"""Fleet port: one job per agent turn or verifier run, named deterministically.

Names look like `senpai-<role>-pr<n>-<attempt>`; launching a name that already exists is success
and returns the existing job (so a restarted wrapper never duplicates a job).

Every backend tells the job when it will be killed: ENV_DEADLINE holds the fleet's deadline in epoch
seconds (the local supervisor sets it when it starts the command, the Kubernetes fleet when it
creates the Job, whose activeDeadlineSeconds counts from then), so a job can stop its own work in
time to report (`job_deadline`).
"""

import math
import os
from collections.abc import Mapping
from datetime import datetime
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from senpai.config.roles import Role

Phase = Literal["pending", "running", "succeeded", "failed"]
ENV_DEADLINE = "SENPAI_JOB_DEADLINE"
ENV_GPUS = "SENPAI_GPUS"  # set by the Kubernetes fleet in the containers that get GPUs
ENV_TRAIN_GPUS = "SENPAI_TRAIN_GPUS"  # set by the Kubernetes fleet in every student and verifier container: its train steps' GPUs
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")  # set from JobSpec.cpus


def job_deadline(env: Mapping[str, str] = os.environ) -> float | None:
    """When the fleet kills this job, in epoch seconds (ENV_DEADLINE); None if unset or not a finite number."""
    try:
        value = float(env.get(ENV_DEADLINE, ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def job_gpus(env: Mapping[str, str] = os.environ) -> int:
    """How many GPUs this job holds: ENV_GPUS if the fleet set it (the Kubernetes fleet: the NVIDIA
    device plugin sets no CUDA_VISIBLE_DEVICES), else the ids in CUDA_VISIBLE_DEVICES (the local
    fleet pins ids); 0 if neither says, or ENV_GPUS is not a non-negative integer."""
    if ENV_GPUS in env:
        value = env[ENV_GPUS].strip()
        return int(value) if value.isdigit() else 0
    return len([g for g in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if g.strip()])


def train_gpus(env: Mapping[str, str] = os.environ) -> int:
    """How many GPUs a student's or verifier's train steps hold, from any of its steps: ENV_TRAIN_GPUS
    if the fleet set it (on Kubernetes the steps that hold the token hold no GPU themselves), else
    `job_gpus` (the local fleet runs every step in the one process that holds them)."""
    value = env.get(ENV_TRAIN_GPUS, "").strip()
    return int(value) if value.isdigit() else job_gpus(env)


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
    cpus: int = Field(1, ge=1, description="CPU cores: the job's THREAD_ENV values, where `env` does not set them.")

    def thread_env(self) -> dict[str, str]:
        """THREAD_ENV set to `cpus`. Every fleet puts `env` over it (an explicit setting there wins);
        the train and holdout commands inherit it (`senpai.job.environ` allows these names)."""
        return dict.fromkeys(THREAD_ENV, str(self.cpus))


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
    deadline_at: datetime | None = Field(
        None,
        description="When the fleet kills the job, UTC: its start plus the spec's wall_seconds (local: the command's "
        "start; Kubernetes: the Job's status.startTime + activeDeadlineSeconds); None until it started.",
    )

    @property
    def done(self) -> bool:
        """Whether the job has ended: phase `succeeded` or `failed`."""
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
