"""Job names: what `job_name` builds, `parse_job_name` reads back, and nothing else (the policy
relaunches, reaps and escalates by these parts, the local fleet reads a lost job's role from them)."""

import pytest

from senpai.config.roles import Role
from senpai.fleet.names import JobName, job_name, parse_job_name


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        ("senpai-student-pr12-1", JobName(Role.STUDENT, 1, pr=12)),
        ("senpai-student-pr12-3-r2", JobName(Role.STUDENT, 3, pr=12, retry=2)),
        ("senpai-verifier-pr7-2", JobName(Role.VERIFIER, 2, pr=7)),
        ("senpai-verifier-pr7-2-r1", JobName(Role.VERIFIER, 2, pr=7, retry=1)),
        ("senpai-advisor-3f2a9c1b0d-4", JobName(Role.ADVISOR, 4, digest="3f2a9c1b0d")),
    ],
)
def test_each_name_is_built_from_its_parts_and_read_back(name, parts):
    assert job_name(parts.role, parts.number, pr=parts.pr, digest=parts.digest, retry=parts.retry) == name
    assert parse_job_name(name) == parts and str(parts) == name
    assert str(parts.work) == name.split("-r")[0] and parts.work.retry == 0


@pytest.mark.parametrize(
    "name",
    [
        "", "senpai-student-pr12", "senpai-student-12-1", "senpai-student-pr0-1", "senpai-student-pr12-0",
        "senpai-student-pr12-1-r0", "senpai-student-pr12-1-r", "senpai-verifier-prx-1", "senpai-advisor-XYZ-1",
        "senpai-advisor-3f2a-1-r1", "senpai-student-pr12-1 ", "other-student-pr12-1", "senpai-reaper-pr1-1",
    ],
)  # fmt: skip
def test_anything_else_is_not_a_job_name(name):
    assert parse_job_name(name) is None


@pytest.mark.parametrize(
    ("role", "parts"),
    [
        (Role.STUDENT, {}),
        (Role.VERIFIER, {"pr": 0}),
        (Role.ADVISOR, {"digest": "not hex"}),
        (Role.STUDENT, {"pr": 1, "retry": -1}),
    ],
)
def test_parts_the_grammar_cannot_read_back_are_refused(role, parts):
    with pytest.raises(ValueError, match="not a job name"):
        job_name(role, 1, **parts)
