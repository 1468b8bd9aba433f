"""The wrapper gives each job its role's deadline from the config (the harness config and senpai.yaml
at the base), never from what a PR body says; a config whose limits do not fit launches nothing."""

from pathlib import Path

import pytest
from forge_fixtures import clone, commit_and_push, hypothesis
from tiny_target import tiny_repo

from senpai.cli.wiring import make_tracker
from senpai.config.harness import HarnessConfig
from senpai.config.roles import Role
from senpai.fleet.base import JobSpec
from senpai.ledger import transitions
from senpai.ledger.blocks import BudgetRef
from senpai.ledger.table import LedgerReader
from senpai.wrapper.loop import Wrapper
from senpai.wrapper.state import StateStore

pytestmark = pytest.mark.e2e


class Recorder:
    """A fleet that records what it is asked to launch and runs nothing."""

    def __init__(self) -> None:
        self.specs: list[JobSpec] = []

    def launch(self, spec: JobSpec) -> None:
        self.specs.append(spec)

    def list(self) -> list:
        return []


def _wrapper(forge, settings, tmp: Path, **changes) -> tuple[Wrapper, Recorder]:
    cfg = HarnessConfig.model_validate(
        {
            "forge": settings.model_dump(),
            "tracker": {"dir": str(tmp / "wandb"), "mode": "offline"},
            "fleet": {"dir": str(tmp / "jobs")},
            "state_dir": str(tmp / "state"),
            "students": [{"name": "ada"}],
            **changes,
        }
    )
    fleet = Recorder()
    store = StateStore(tmp / "state" / "wrapper.sqlite")
    return Wrapper(cfg, str(tmp / "h.yaml"), forge, fleet, LedgerReader(forge, make_tracker(cfg)), store), fleet  # type: ignore[arg-type]


def test_a_students_deadline_comes_from_the_config_not_the_pr_body(local_forge, tmp_path: Path) -> None:
    forge, settings = tiny_repo(local_forge.base_url, tmp_path / "seed")  # senpai.yaml: budget.wall_seconds 60
    base = forge.branch_sha("advisor")
    commit_and_push(forge, clone(forge, tmp_path / "work", "advisor"), "senpai/ada/h-test", {"notes.md": "x\n"}, start="advisor")
    body = hypothesis(base).model_copy(update={"budget": BudgetRef(wall_seconds=9999, attempts=1)})  # what the PR says
    pr = transitions.open_experiment(forge, body, "senpai/ada/h-test", "advisor", "a budget in the body")

    w, fleet = _wrapper(forge, settings, tmp_path / "fits")
    report = w.tick()
    assert not report.errors, report.errors
    (student,) = [s for s in fleet.specs if s.role == "student"]
    assert (student.pr, student.wall_seconds) == (pr.number, 60)
    launched = {role: w.metrics.registry.get_sample_value("senpai_jobs_launched_total", {"role": role}) for role in Role}
    assert launched == {role: float(sum(s.role == role for s in fleet.specs)) for role in Role} and launched["student"] == 1

    # a verifier deadline too short for senpai.yaml's steps (2 x 2 seeds x (60 + 60) + 300 = 780 s): nothing launches
    w, fleet = _wrapper(forge, settings, tmp_path / "short", verifier_wall_seconds=600)
    report = w.tick()
    assert fleet.specs == []
    assert w.metrics.registry.get_sample_value("senpai_jobs_launched_total", {"role": "student"}) == 0  # refused: not counted
    (error,) = report.errors
    assert f"senpai-student-pr{pr.number}-1 not launched" in error and "verifier_wall_seconds (600 s" in error
    assert str(tmp_path / "short" / "h.yaml") in error and f"senpai.yaml at {base[:8]}" in error
