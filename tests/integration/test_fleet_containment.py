"""One job's broken bookkeeping stays with that job; a job's processes, setsid daemons too, die with it."""

import contextlib
import os
import signal
import time
import uuid
from pathlib import Path

import psutil
import pytest
from full_disk import fill, small_volume

from senpai.errors import DiskFull
from senpai.fleet.base import ENV_DEADLINE, JobSpec, JobStatus
from senpai.fleet.local import LocalFleet
from senpai.fleet.supervise import Claim


def spec(name: str, script: str, wall: int = 30) -> JobSpec:
    return JobSpec(name=name, role="student", student="ada", pr=7, command=["sh", "-c", script], wall_seconds=wall)


def wait_for(fleet: LocalFleet, name: str, until=lambda s: s.done, timeout: float = 30) -> JobStatus:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (status := fleet.get(name)) is not None and until(status):
            return status
        time.sleep(0.05)
    raise AssertionError(f"{name}: still {fleet.get(name)} after {timeout} s")


def sleepers(marker: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        with contextlib.suppress(psutil.Error):
            if f"sleep {marker}" in " ".join(p.info["cmdline"] or []) and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
    return found


def no_sleepers(marker: str, timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while sleepers(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not sleepers(marker)


def daemon_script(marker: str, then: str) -> str:
    """A train command that leaves a `setsid` daemon outside its process group (and session)."""
    return f"setsid sleep {marker} > /dev/null 2>&1 < /dev/null & sleep 0.5; {then}"


@pytest.fixture
def fleet(tmp_path: Path) -> LocalFleet:
    return LocalFleet(tmp_path / "jobs")


def marker() -> str:
    return f"{3000 + os.getpid() % 1000}.{uuid.uuid4().int % 10**6}"


def test_a_setsid_daemon_dies_when_its_job_ends(fleet: LocalFleet) -> None:
    m = marker()
    fleet.launch(spec("daemon-end", daemon_script(m, "exit 0")))
    assert wait_for(fleet, "daemon-end").phase == "succeeded"
    assert no_sleepers(m)


def test_a_setsid_daemon_dies_when_its_job_is_deleted(fleet: LocalFleet) -> None:
    m = marker()
    fleet.launch(spec("daemon-del", daemon_script(m, "sleep 60")))
    wait_for(fleet, "daemon-del", lambda s: s.phase == "running")
    deadline = time.monotonic() + 15
    while not sleepers(m) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sleepers(m), "the daemon never started"
    fleet.delete("daemon-del")
    assert no_sleepers(m)


def test_a_setsid_daemon_dies_with_a_lost_job(fleet: LocalFleet) -> None:
    m = marker()
    fleet.launch(spec("daemon-lost", daemon_script(m, "sleep 60")))
    wait_for(fleet, "daemon-lost", lambda s: s.phase == "running")
    while not sleepers(m):
        time.sleep(0.05)
    supervisor = Claim.model_validate_json((fleet.root / "daemon-lost" / "supervisor.json").read_text()).pid
    os.kill(supervisor, signal.SIGKILL)
    assert wait_for(fleet, "daemon-lost").reason == "Lost"
    assert no_sleepers(m)


def test_the_job_knows_its_deadline(fleet: LocalFleet) -> None:
    before = time.time()
    fleet.launch(spec("deadline", f'echo "deadline=${ENV_DEADLINE}"', wall=300))
    wait_for(fleet, "deadline")
    (line,) = [x for x in fleet.logs("deadline").splitlines() if x.startswith("deadline=")]
    assert int(before) + 300 <= int(line.split("=")[1]) <= time.time() + 300


def test_corrupt_or_unreadable_job_files_fail_that_job_only(fleet: LocalFleet) -> None:
    names = ("senpai-student-pr3-1", "senpai-verifier-pr4-1", "senpai-student-pr5-1")
    for name in names:
        fleet.launch(spec(name, "echo hi"))
        wait_for(fleet, name)
    (fleet.root / "senpai-student-pr3-1" / "status.json").write_text('{"phase": "runn')  # torn or tampered
    spec_file = fleet.root / "senpai-verifier-pr4-1" / "spec.json"
    spec_file.unlink()
    spec_file.mkdir()  # unreadable (EISDIR), even for root
    # this fleet keeps the finished status it read until the folder changes (an edit in place does
    # not change it); a restarted wrapper reads every folder
    assert {j.name: j.reason for j in fleet.list()} == {**dict.fromkeys(names, None), "senpai-verifier-pr4-1": "Lost"}
    jobs = {j.name: j for j in LocalFleet(fleet.root).list()}
    assert sorted(jobs) == ["senpai-student-pr3-1", "senpai-student-pr5-1", "senpai-verifier-pr4-1"]
    assert (jobs["senpai-student-pr3-1"].phase, jobs["senpai-student-pr3-1"].reason) == ("failed", "Lost")
    assert jobs["senpai-student-pr3-1"].student == "ada"  # from its readable spec
    bad = jobs["senpai-verifier-pr4-1"]
    assert (bad.role, bad.pr, bad.phase, bad.reason) == ("verifier", 4, "failed", "Lost")  # from its name
    assert jobs["senpai-student-pr5-1"].phase == "succeeded"
    assert "hi" in fleet.logs("senpai-student-pr3-1")


@pytest.fixture
def full_disk(tmp_path: Path):
    """A 1 MiB tmpfs to fill up: a real ENOSPC (needs root to mount)."""
    with small_volume(tmp_path / "small") as mnt:
        yield mnt


def test_a_full_disk_fails_one_launch_and_never_a_read(full_disk: Path) -> None:
    fleet = LocalFleet(full_disk / "jobs")
    fleet.launch(spec("senpai-student-pr1-1", "echo done"))
    fleet.launch(spec("senpai-student-pr2-1", "sleep 60"))
    wait_for(fleet, "senpai-student-pr1-1")
    wait_for(fleet, "senpai-student-pr2-1", lambda s: s.phase == "running")
    supervisor = Claim.model_validate_json((fleet.root / "senpai-student-pr2-1" / "supervisor.json").read_text()).pid
    fill(full_disk)
    with pytest.raises(DiskFull, match="No space left") as full:  # a TransientError: senpai's, not the job's
        fleet.launch(spec("senpai-student-pr3-1", "echo never"))
    assert full.value.path == str(fleet.root) and full.value.exit_code == 6
    assert fleet.get("senpai-student-pr3-1") is None  # no half-made job holds the name
    os.kill(supervisor, signal.SIGKILL)  # its job is now Lost, and the record cannot be written
    assert wait_for(fleet, "senpai-student-pr2-1").reason == "Lost"
    for _ in range(3):  # every tick reads the same, without an exception
        jobs = {j.name: (j.phase, j.reason) for j in fleet.list()}
        assert jobs == {"senpai-student-pr1-1": ("succeeded", None), "senpai-student-pr2-1": ("failed", "Lost")}
    assert "done" in fleet.logs("senpai-student-pr1-1")


def test_a_kubernetes_job_knows_its_deadline() -> None:
    from k8s_fixtures import k8s_settings

    from senpai.fleet.k8s_job import build_job

    settings = k8s_settings()
    before = time.time()
    job = build_job(spec("senpai-student-pr7-1", "true", wall=900), settings)
    env = {e.name: e.value for e in job.spec.template.spec.containers[0].env}
    assert int(before) + 900 <= int(env[ENV_DEADLINE]) <= time.time() + 900
    assert job.spec.active_deadline_seconds == 900  # both count from the Job's creation
