"""`senpai logs`: which job a JOB|PR argument names, and following a log by its tail."""

from datetime import UTC, datetime, timedelta

import pytest
import yaml
from click.testing import CliRunner
from policy_world import CFG

from senpai.cli import logs as logs_cli
from senpai.cli.main import cli
from senpai.errors import NotFound
from senpai.fleet.base import JobStatus

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def _job(name: str, pr: int | None, started: int | None, phase: str = "succeeded") -> JobStatus:
    at = None if started is None else T0 + timedelta(minutes=started)
    return JobStatus(name=name, role="student", pr=pr, student="ada", phase=phase, started_at=at)


def test_a_pr_names_its_newest_job_and_a_miss_names_the_known_jobs():
    jobs = [
        _job("senpai-student-pr3-1", 3, 0),
        _job("senpai-student-pr3-2", 3, 10),
        _job("senpai-verifier-pr3-2", 3, 5),
        _job("senpai-advisor-abc-1", None, 20),
    ]
    assert logs_cli.resolve_job(jobs, "3").name == logs_cli.resolve_job(jobs, "#3").name == "senpai-student-pr3-2"
    pending = [*jobs, _job("senpai-student-pr3-2-r1", 3, None, "pending")]  # not started yet: the newest
    assert logs_cli.resolve_job(pending, "3").name == "senpai-student-pr3-2-r1"
    assert logs_cli.resolve_job(jobs, "senpai-advisor-abc-1").name == "senpai-advisor-abc-1"
    for miss in ("4", "senpai-student-pr9-1"):
        with pytest.raises(NotFound, match=r"The fleet knows: .*senpai-student-pr3-1 \(#3\).*senpai-advisor-abc-1"):
            logs_cli.resolve_job(jobs, miss)


class GrowingLog:
    """A Fleet stand-in (get and logs only) whose one job writes `batches` of lines, one batch per
    `get`, and ends after the last."""

    def __init__(self, batches: list[list[str]]) -> None:
        self.batches, self.written = batches, []

    def list(self) -> list[JobStatus]:
        return [self.get("senpai-student-pr1-1")]

    def get(self, name: str) -> JobStatus:
        if self.batches:
            self.written += self.batches.pop(0)
        return _job(name, 1, 0, "running" if self.batches else "succeeded")

    def logs(self, name: str, tail_lines: int = 50) -> str:
        return "".join(f"{line}\n" for line in self.written[-tail_lines:])


def test_follow_prints_each_line_once_as_the_tail_window_slides(monkeypatch, tmp_path):
    monkeypatch.setattr(logs_cli, "FOLLOW_WINDOW", 4)
    fleet = GrowingLog([["a", "b", "c", "d", "e"], ["f"], [], ["g", "h"], ["same", "same"], ["same"]])
    monkeypatch.setattr(logs_cli, "make_fleet", lambda cfg: fleet)
    config = tmp_path / "harness.yaml"
    config.write_text(yaml.safe_dump({**CFG.model_dump(mode="json"), "fleet": {"dir": str(tmp_path / "jobs")}}))
    result = CliRunner().invoke(cli, ["logs", "--config", str(config), "1", "-n", "2", "-f", "--interval", "0.2"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()  # stdout, then the job's end on stderr
    assert lines[0].startswith("[job senpai-student-pr1-1: student ada on PR #1, attempt 1; ")  # the header, on stderr
    assert lines[1:] == ["d", "e", "f", "g", "h", "same", "same", "same", "[job senpai-student-pr1-1: succeeded, exit None]"]


def test_the_header_names_the_job_its_role_pr_attempt_state_and_start():
    now = T0 + timedelta(minutes=14, seconds=12)
    student = _job("senpai-student-pr3-2-r1", 3, 10, "running")
    jobs = [_job("senpai-student-pr3-1", 3, 0), _job("senpai-verifier-pr3-1", 3, 5), student]
    assert logs_cli.header(student, jobs, now) == (
        "[job senpai-student-pr3-2-r1: student ada on PR #3, attempt 2, relaunch 1; running, started 2026-12-01 00:10:00 UTC, "
        "4 min 12 s ago; the newest of 3 jobs of PR #3 (give a job's name for another)]"
    )
    verifier = JobStatus(
        name="senpai-verifier-pr3-1", role="verifier", pr=3, student=None, phase="failed", exit_code=3, started_at=T0
    )
    assert logs_cli.header(verifier, [verifier], now).startswith(
        "[job senpai-verifier-pr3-1: verifier on PR #3, verification 1; failed (exit 3), started 2026-12-01 00:00:00 UTC, 14 min"
    )
    advisor = JobStatus(name="senpai-advisor-abc-1", role="advisor", pr=None, student=None, phase="pending")
    assert logs_cli.header(advisor, jobs, now) == "[job senpai-advisor-abc-1: advisor; pending, not started yet]"


def test_overlap_is_the_longest_suffix_that_starts_the_new_tail():
    assert logs_cli.overlap(["a", "b", "c"], ["b", "c", "d"]) == 2
    assert logs_cli.overlap(["a", "b"], ["a", "b"]) == 2
    assert logs_cli.overlap(["a", "b"], ["x", "y"]) == 0
    assert logs_cli.overlap([], ["x"]) == 0
