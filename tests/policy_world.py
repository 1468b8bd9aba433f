"""A world for the wrapper's decide step (`senpai.wrapper.policy.plan`), as the policy tests build it:
a harness config of two students, a base, a clock, and experiments and jobs made in one line each."""

from datetime import UTC, datetime

from senpai.config.harness import HarnessConfig
from senpai.fleet.base import JobStatus
from senpai.ledger.blocks import BaselineRef, BudgetRef, Evidence, Hypothesis, MetricRef, PrimaryResult
from senpai.ledger.experiment import Experiment
from senpai.wrapper.actions import Launch

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
BASE = "b" * 40
CFG = HarnessConfig.model_validate(
    {
        "forge": {"repo": "o/r"},
        "tracker": {"dir": "/tmp/w"},
        "fleet": {"dir": "/tmp/f"},
        "state_dir": "/tmp/s",
        "students": [{"name": "ada"}, {"name": "bo"}],
        "max_experiments": 4,
        "stale_after_seconds": 600,
    }
)


def exp(pr: int, state: str, student: str = "ada", attempts: int = 0, updated=NOW, error=None) -> Experiment:
    h = Hypothesis(
        id=f"h-{pr}",
        hypothesis="x",
        rationale="r",
        plan="p",
        params={"a": pr},
        metric=MetricRef(name="acc", direction="maximize"),
        baseline=BaselineRef(commit=BASE, run_id=None, value=None),
        budget=BudgetRef(wall_seconds=60, attempts=2),
        stop_condition="s",
        student=student,
    )
    ev = [
        Evidence(
            pr=pr,
            attempt=i + 1,
            student=student,
            head=f"{pr}" * 40,
            command="c",
            outcome="failed",
            primary=PrimaryResult(name="acc", value=None, baseline=None, delta=None),
            interpretation="i",
        )
        for i in range(attempts)
    ]
    return Experiment(
        pr=pr,
        title="t",
        url="u",
        branch=f"senpai/{student}/h-{pr}",
        head=f"{pr}" * 40,
        student=student,
        state=state,
        updated_at=updated.isoformat(),
        hypothesis=h,
        evidence=ev,
        verifications=[],
        decisions=[],
        error=error,
    )


def job(name: str, role: str, pr=None, student=None, phase="running", reason=None) -> JobStatus:
    return JobStatus(name=name, role=role, pr=pr, student=student, phase=phase, reason=reason)


def launches(actions, role):
    return [a for a in actions if isinstance(a, Launch) and a.role == role]
