"""The Fleet port's contract, run against every fleet adapter.

Each adapter is one entry in ADAPTERS: a factory that yields a ready Fleet for one test. Commands
are POSIX `sh -c` scripts so they run unchanged in a container image.

`kubernetes` is the real KubernetesFleet and official client against the API-server stand-in in
tests/k8s_apiserver.py (there is no cluster here; the live-cluster run is `make kind-e2e`). Its
"kubelet" runs each pod's command as a local subprocess and enforces activeDeadlineSeconds, so
every case below applies to it unchanged: nothing is scripted.
"""

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest
from k8s_fixtures import k8s_fleet, seed

from senpai.errors import NotFound
from senpai.fleet.base import Fleet, JobSpec, JobStatus
from senpai.fleet.local import LocalFleet

WAIT_SECONDS = 30


@contextmanager
def local_fleet(tmp_path: Path) -> Iterator[Fleet]:
    fleet = LocalFleet(tmp_path / "fleet")
    try:
        yield fleet
    finally:
        for job in fleet.list():
            fleet.delete(job.name)


@contextmanager
def kubernetes_fleet(tmp_path: Path) -> Iterator[Fleet]:
    from k8s_apiserver import ApiServer  # the kubernetes client (seconds): when run, not when the suite is collected

    with ApiServer() as server:
        yield k8s_fleet(seed(server))


ADAPTERS: dict[str, Callable[[Path], AbstractContextManager[Fleet]]] = {"local": local_fleet, "kubernetes": kubernetes_fleet}


@pytest.fixture(params=sorted(ADAPTERS))
def fleet(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Fleet]:
    with ADAPTERS[request.param](tmp_path) as fleet:
        yield fleet


def job(name: str, script: str, wall: int = 20, role: str = "advisor", **kw) -> JobSpec:
    """A job that runs `script` once: an advisor's by default (a Kubernetes student or verifier Job
    runs its command once per step container, docs/kubernetes.md)."""
    student = {"pr": 12, "student": "ada"} if role == "student" else {}
    return JobSpec(name=name, role=role, command=["sh", "-c", script], wall_seconds=wall, **student, **kw)


def wait_for(fleet: Fleet, name: str, until: Callable[[JobStatus], bool] = lambda s: s.done) -> JobStatus:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        status = fleet.get(name)
        if status is not None and until(status):
            return status
        time.sleep(0.1)
    raise AssertionError(f"{name}: still {fleet.get(name)} after {WAIT_SECONDS} s")


def test_missing_job(fleet: Fleet) -> None:
    assert fleet.get("senpai-student-pr1-1") is None
    with pytest.raises(NotFound):
        fleet.logs("senpai-student-pr1-1")
    fleet.delete("senpai-student-pr1-1")


def test_launch_reports_the_spec_identity(fleet: Fleet) -> None:
    status = fleet.launch(job("senpai-student-pr12-1", "true", role="student"))
    assert (status.name, status.role, status.pr, status.student) == ("senpai-student-pr12-1", "student", 12, "ada")
    assert status.phase in ("pending", "running", "succeeded")


def test_success(fleet: Fleet) -> None:
    fleet.launch(job("ok", "echo hello"))
    status = wait_for(fleet, "ok")
    assert (status.phase, status.exit_code, status.reason) == ("succeeded", 0, None)
    assert status.started_at is not None and status.finished_at is not None
    assert status.started_at.utcoffset().total_seconds() == 0
    assert status.started_at <= status.finished_at
    # the kill time: the start plus wall_seconds (Kubernetes counts from the Job's start, its pod starts a little later)
    assert status.deadline_at is not None and 15 <= (status.deadline_at - status.started_at).total_seconds() <= 20
    assert "hello" in fleet.logs("ok")


def test_failure_keeps_exit_code(fleet: Fleet) -> None:
    fleet.launch(job("bad", "exit 3"))
    status = wait_for(fleet, "bad")
    assert (status.phase, status.exit_code, status.reason) == ("failed", 3, "Error")


def test_wall_time(fleet: Fleet) -> None:
    fleet.launch(job("slow", "sleep 60", wall=1))
    status = wait_for(fleet, "slow")
    assert (status.phase, status.reason) == ("failed", "DeadlineExceeded")


def test_env_reaches_the_job(fleet: Fleet) -> None:
    fleet.launch(job("envy", 'echo "token=$SENPAI_ROLE_HINT"', env={"SENPAI_ROLE_HINT": "student"}))
    wait_for(fleet, "envy")
    assert "token=student" in fleet.logs("envy")


def test_launch_twice_is_one_job(fleet: Fleet) -> None:
    first = fleet.launch(job("once", "echo ran; sleep 1"))
    second = fleet.launch(job("once", "echo ran; sleep 1"))
    assert first.name == second.name
    assert wait_for(fleet, "once").phase == "succeeded"
    assert fleet.launch(job("once", "exit 9")).phase == "succeeded"  # finished jobs are returned as is
    assert fleet.logs("once").count("ran") == 1
    assert [s.name for s in fleet.list()] == ["once"]


def test_logs_tail(fleet: Fleet) -> None:
    fleet.launch(job("chatty", "for i in 1 2 3 4 5 6; do echo line $i; done"))
    wait_for(fleet, "chatty")
    assert fleet.logs("chatty", tail_lines=2).splitlines() == ["line 5", "line 6"]


def test_list_is_sorted_and_keeps_finished_jobs(fleet: Fleet) -> None:
    for name in ("c", "a", "b"):
        fleet.launch(job(name, "true"))
    for name in ("a", "b", "c"):
        wait_for(fleet, name)
    assert [s.name for s in fleet.list()] == ["a", "b", "c"]
    assert all(s.done for s in fleet.list())


def test_delete_running_job(fleet: Fleet) -> None:
    fleet.launch(job("doomed", "sleep 60"))
    wait_for(fleet, "doomed", lambda s: s.phase == "running")
    fleet.delete("doomed")
    assert fleet.get("doomed") is None
    assert fleet.list() == []
    with pytest.raises(NotFound):
        fleet.logs("doomed")
    fleet.launch(job("doomed", "echo again"))  # the name can be reused after a delete
    assert wait_for(fleet, "doomed").phase == "succeeded"
