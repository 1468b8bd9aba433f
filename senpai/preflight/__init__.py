"""`senpai preflight`: check, before launch, everything a harness config needs from the outside.

Five areas, each through its adapter (PyGithub stays in senpai/forge/github/, wandb in
senpai/tracker/, the kubernetes client in senpai/fleet/):

- **github** (`checks.forge_checks`): token present, token scopes, push access, base branch,
  labels (missing ones are created: the only write preflight makes);
- **wandb** (`checks.tracker_checks`): online mode only: key valid and entity reachable;
- **llm** (`llm.llm_checks`): per openhands role: key env present and one 1-token completion, and a
  warning where the model's calls would count $0 (`senpai.config.prices`);
- **local** (`checks.holdout_check`): local fleet only: `fleet.holdout_dir` is a non-empty folder
  apart from the folders jobs use (`fleet.dir`, `state_dir`, `tracker.dir`); `senpai.cli.preflight`
  adds the wall and the interpreters the base's senpai.yaml names (`holdout.python`, the train
  command's), which need senpai.agents;
- **cluster** (`cluster.cluster_checks`): kubernetes fleet only: namespace, PVC bound, GPU nodes,
  ConfigMap, Secrets (key names only), and RBAC by SelfSubjectAccessReview.

A check never raises: an error while checking is that check's failure, with the error as detail.
A warning is a check that passed with something to fix; it does not fail the preflight.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Outcome = Literal["pass", "warn", "fail", "skip"]


class CheckResult(BaseModel):
    """One row of the preflight report (`senpai preflight --json` prints a list of these)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    area: Literal["github", "wandb", "llm", "local", "cluster"]
    check: str = Field(description="What was checked, e.g. 'push access'.")
    outcome: Outcome
    detail: str = Field(description="What was found; never a secret value.")
    fix: str | None = Field(None, description="For a failure or a warning: what to do about it.")


def passed(area: str, check: str, detail: str) -> CheckResult:
    return CheckResult(area=area, check=check, outcome="pass", detail=detail)


def warned(area: str, check: str, detail: str, fix: str) -> CheckResult:
    return CheckResult(area=area, check=check, outcome="warn", detail=detail, fix=fix)


def failed(area: str, check: str, detail: str, fix: str) -> CheckResult:
    return CheckResult(area=area, check=check, outcome="fail", detail=detail, fix=fix)


def skipped(area: str, check: str, detail: str) -> CheckResult:
    return CheckResult(area=area, check=check, outcome="skip", detail=detail)
