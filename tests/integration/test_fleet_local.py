"""LocalFleet with real subprocesses: supervisors, deadlines, claims, lost owners and GPU pinning."""

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC
from pathlib import Path

import pytest
import yaml
from hostile_target import as_non_root
from tiny_target import files

from senpai.config.harness import HarnessConfig
from senpai.config.target import TargetConfig
from senpai.config.time_limits import TimeLimits
from senpai.errors import NotFound, PermanentError
from senpai.fleet.base import JobSpec, JobStatus
from senpai.fleet.local import LocalFleet
from senpai.fleet.supervise import Claim, JobDir, StatusRecord, classify, proc_start
from senpai.wrapper.actions import Launch
from senpai.wrapper.dispatch import Dispatcher, JobInputs

REPO = Path(__file__).resolve().parents[2]


def spec(name: str, script: str, wall: int = 20, **kw) -> JobSpec:
    return JobSpec(name=name, role="student", student="ada", pr=7, command=["sh", "-c", script], wall_seconds=wall, **kw)


def wait_for(fleet: LocalFleet, name: str, until=lambda s: s.done, timeout: float = 15) -> JobStatus:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = fleet.get(name)
        if status is not None and until(status):
            return status
        time.sleep(0.05)
    raise AssertionError(f"{name}: still {fleet.get(name)} after {timeout} s")


def record(fleet: LocalFleet, name: str) -> StatusRecord:
    return StatusRecord.model_validate_json((fleet.root / name / "status.json").read_text())


def gone(pid: int) -> bool:
    return proc_start(pid) is None


def group_gone(pgid: int) -> bool:
    """No live (non-zombie) process is left in process group `pgid`."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_bytes().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return False
    return True


def wait_gone(pid: int, timeout: float = 5, check=gone) -> bool:
    deadline = time.monotonic() + timeout
    while not check(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return check(pid)


@pytest.fixture
def fleet(tmp_path: Path) -> LocalFleet:
    return LocalFleet(tmp_path / "jobs")


def test_success_records_status_file(fleet: LocalFleet) -> None:
    fleet.launch(spec("ok", "echo hello"))
    status = wait_for(fleet, "ok")
    assert (status.phase, status.exit_code, status.reason) == ("succeeded", 0, None)
    assert (status.role, status.pr, status.student) == ("student", 7, "ada")
    assert status.started_at.tzinfo is not None and status.started_at.utcoffset() == UTC.utcoffset(None)
    assert status.started_at <= status.finished_at
    raw = json.loads((fleet.root / "ok" / "status.json").read_text())
    assert raw["started_at"].endswith("Z") and raw["finished_at"].endswith("Z")
    assert raw["phase"] == "succeeded" and isinstance(raw["pid"], int)
    assert JobSpec.model_validate_json((fleet.root / "ok" / "spec.json").read_text()).name == "ok"
    assert fleet.logs("ok") == "hello\n"


def test_nonzero_exit_is_error_and_missing_command_is_127(fleet: LocalFleet) -> None:
    fleet.launch(spec("bad", "echo oops >&2; exit 3"))
    fleet.launch(JobSpec(name="nocmd", role="verifier", command=["/no/such/binary"], wall_seconds=5))
    bad, nocmd = wait_for(fleet, "bad"), wait_for(fleet, "nocmd")
    assert (bad.phase, bad.exit_code, bad.reason) == ("failed", 3, "Error")
    assert "oops" in fleet.logs("bad") and "exit code 3" in fleet.logs("bad")
    assert (nocmd.phase, nocmd.exit_code, nocmd.reason) == ("failed", 127, "Error")
    assert "/no/such/binary" in fleet.logs("nocmd")


def test_wall_time_kills_with_sigterm_then_sigkill(fleet: LocalFleet) -> None:
    t0 = time.monotonic()
    fleet.launch(spec("slow", "exec sleep 30", wall=1))
    fleet.launch(spec("stubborn", "trap '' TERM; sleep 30 & wait; sleep 30", wall=1))
    slow = wait_for(fleet, "slow")
    assert (slow.phase, slow.reason, slow.exit_code) == ("failed", "DeadlineExceeded", 128 + signal.SIGTERM)
    assert (slow.finished_at - slow.started_at).total_seconds() < 2.5
    stubborn = wait_for(fleet, "stubborn")
    assert (stubborn.reason, stubborn.exit_code) == ("DeadlineExceeded", 128 + signal.SIGKILL)
    assert 3.5 < (stubborn.finished_at - stubborn.started_at).total_seconds() < 6
    assert "wall_seconds=1" in fleet.logs("stubborn")
    assert time.monotonic() - t0 < 8


def test_env_reaches_job_and_cwd_is_work_dir(fleet: LocalFleet, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SENPAI_TEST_INHERITED", "from-wrapper")
    monkeypatch.setenv("SENPAI_TEST_OVERRIDDEN", "wrapper")
    script = 'pwd > where; echo "$SENPAI_TEST_INHERITED $SENPAI_TEST_OVERRIDDEN $FOO" > env; ls -A'
    fleet.launch(spec("envy", script, env={"FOO": "bar", "SENPAI_TEST_OVERRIDDEN": "spec"}))
    assert wait_for(fleet, "envy").phase == "succeeded"
    work = fleet.root / "envy" / "work"
    assert Path((work / "where").read_text().strip()).resolve() == work.resolve()
    assert (work / "env").read_text() == "from-wrapper spec bar\n"
    assert fleet.logs("envy") == "env\nwhere\n"  # work/ started empty: only what the job just made


def test_thread_counts_follow_the_jobs_cpus_unless_its_env_sets_them(fleet: LocalFleet, monkeypatch) -> None:
    monkeypatch.setenv("MKL_NUM_THREADS", "64")  # the wrapper's own setting does not reach the job
    script = 'echo "$OMP_NUM_THREADS $MKL_NUM_THREADS $OPENBLAS_NUM_THREADS"'
    fleet.launch(spec("three", script, cpus=3))
    fleet.launch(spec("own", script, cpus=3, env={"OMP_NUM_THREADS": "5"}))
    fleet.launch(spec("default", script))
    assert [wait_for(fleet, n).phase for n in ("three", "own", "default")] == ["succeeded"] * 3
    assert [fleet.logs(n) for n in ("three", "own", "default")] == ["3 3 3\n", "5 3 3\n", "1 1 1\n"]


class Recorder:
    """The Fleet port's launch, recording the specs."""

    def __init__(self) -> None:
        self.specs: list[JobSpec] = []

    def launch(self, spec: JobSpec) -> None:
        self.specs.append(spec)


def test_the_wrapper_gives_a_students_jobs_its_cpus_and_an_advisors_one() -> None:
    cfg = HarnessConfig.model_validate(
        {"forge": {"repo": "o/r"}, "tracker": {"dir": "/tmp/w"}, "fleet": {"dir": "/tmp/f"}, "state_dir": "/tmp/s",
         "students": [{"name": "ada"}]}
    )  # fmt: skip
    fleet = Recorder()
    dispatcher = Dispatcher(None, fleet, "/h.yaml", {"ada": 1}, {"ada": 6})  # type: ignore[arg-type]
    inputs = JobInputs(TimeLimits.of(cfg.times(), TargetConfig.model_validate(yaml.safe_load(files()["senpai.yaml"]))))
    for launch in (
        Launch("student", "senpai-student-pr3-1", ["student"], pr=3, student="ada"),
        Launch("verifier", "senpai-verifier-pr3-1", ["verify"], pr=3, student="ada"),
        Launch("advisor", "senpai-advisor-x-1", ["advisor"]),
    ):
        dispatcher.apply(launch, {}, inputs)
    assert [(s.role, s.gpus, s.cpus) for s in fleet.specs] == [("student", 1, 6), ("verifier", 1, 6), ("advisor", 0, 1)]
    assert [s.wall_seconds for s in fleet.specs] == [60, 780, 600]  # each role's deadline (`senpai.config.time_limits`)


def test_logs_tail(fleet: LocalFleet) -> None:
    fleet.launch(spec("chatty", "for i in $(seq 1 5000); do echo line $i; done"))
    wait_for(fleet, "chatty")
    assert fleet.logs("chatty", tail_lines=3) == "line 4998\nline 4999\nline 5000\n"
    assert fleet.logs("chatty", tail_lines=0) == ""
    assert len(fleet.logs("chatty").splitlines()) == 50
    with pytest.raises(NotFound):
        fleet.logs("nope")
    with pytest.raises(NotFound):
        fleet.logs("../etc")


def test_launch_of_existing_name_returns_it_without_a_second_run(fleet: LocalFleet, tmp_path: Path) -> None:
    job = spec("once", f"echo ran >> {tmp_path / 'count'}; sleep 0.3")
    first = fleet.launch(job)
    second = fleet.launch(job)
    assert first.name == second.name == "once"
    assert wait_for(fleet, "once").phase == "succeeded"
    third = fleet.launch(spec("once", "exit 1"))  # a finished job is returned unchanged too
    assert third.phase == "succeeded"
    time.sleep(0.2)
    assert (tmp_path / "count").read_text() == "ran\n"


def test_concurrent_launch_from_threads_and_processes_yields_one_job(fleet: LocalFleet, tmp_path: Path) -> None:
    job = spec("race", f"echo ran >> {tmp_path / 'count'}")
    code = (
        "import sys; from pathlib import Path; from senpai.fleet.local import LocalFleet;"
        "from senpai.fleet.base import JobSpec;"
        "print(LocalFleet(Path(sys.argv[1])).launch(JobSpec.model_validate_json(sys.argv[2])).name)"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(fleet.root), job.model_dump_json()], stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    barrier = threading.Barrier(8)
    results: list[JobStatus] = []

    def go() -> None:
        barrier.wait()
        results.append(LocalFleet(fleet.root).launch(job))

    threads = [threading.Thread(target=go) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [p.communicate(timeout=20)[0] for p in procs] == ["race\n"] * 3
    assert {r.name for r in results} == {"race"}
    assert wait_for(fleet, "race").phase == "succeeded"
    time.sleep(0.2)
    assert (tmp_path / "count").read_text() == "ran\n"
    assert [p.name for p in fleet.root.iterdir()] == ["race"]  # no staging dirs left


def test_delete_kills_a_running_job_and_removes_it(fleet: LocalFleet) -> None:
    fleet.launch(spec("doomed", "sleep 30 & sleep 30"))
    wait_for(fleet, "doomed", lambda s: s.phase == "running")
    rec = record(fleet, "doomed")
    assert not group_gone(rec.pid)
    supervisor = Claim.model_validate_json((fleet.root / "doomed" / "supervisor.json").read_text()).pid
    t0 = time.monotonic()
    fleet.delete("doomed")
    assert time.monotonic() - t0 < 2
    assert fleet.get("doomed") is None and fleet.list() == []
    assert list(fleet.root.iterdir()) == []
    assert wait_gone(rec.pid) and wait_gone(supervisor)
    assert wait_gone(rec.pid, check=group_gone)  # the background sleep of the group too
    fleet.delete("doomed")  # missing: no-op
    fleet.delete("../../etc")
    assert fleet.launch(spec("doomed", "exit 0")).name == "doomed"  # the name is free again
    assert wait_for(fleet, "doomed").phase == "succeeded"


def test_delete_removes_the_folder_a_dying_job_wrote_again(fleet: LocalFleet) -> None:
    # a job writes where it was told, by absolute path (a git clone into its work folder): after
    # `delete` moved its folder aside, the job, until it is stopped, makes that path again (a CI run
    # left a verifier's half-cloned checkout behind that way). Here it does so as it is stopped.
    again = fleet.root / "dying" / "work" / "repo"
    fleet.launch(spec("dying", f"trap 'mkdir -p {again}; echo x > {again}/f; exit 0' TERM; sleep 30 & wait"))
    wait_for(fleet, "dying", lambda s: s.phase == "running")
    fleet.delete("dying")
    assert list(fleet.root.iterdir()) == []
    assert fleet.launch(spec("dying", "exit 0")).name == "dying"  # a folder left there would block the name
    assert wait_for(fleet, "dying").phase == "succeeded"


def test_a_launch_that_lands_on_an_emptied_remade_folder_keeps_its_job(fleet: LocalFleet, monkeypatch) -> None:
    # the dying job made its folder again but nothing in it yet (`mkdir -p` between two mkdirs), and
    # another wrapper's launch of the name lands on it (a rename may replace an empty folder) just
    # as `delete` removes it: the launched job keeps its folder and is started (a red team had it
    # moved aside and back, left pending with no supervisor)
    path, other = fleet.root / "x", LocalFleet(fleet.root, gpus=[])
    path.mkdir()
    rmdir = os.rmdir

    def launch_first(target, *a, **kw):
        if Path(target) == path:
            other.launch(spec("x", "exit 0"))
        return rmdir(target, *a, **kw)

    monkeypatch.setattr(os, "rmdir", launch_first)
    fleet._remove_remade(path)
    monkeypatch.undo()
    assert wait_for(fleet, "x").phase == "succeeded"
    assert sorted(p.name for p in fleet.root.iterdir()) == ["x"]


LOCKS_ITS_FOLDER = """
import json, os, sys, time
from pathlib import Path
from senpai.fleet.base import JobSpec
from senpai.fleet.local import LocalFleet
from senpai.fleet.supervise import alive, gpus_in_use
root, pidfile = Path(sys.argv[1]), Path(sys.argv[2])
fleet = LocalFleet(root, gpus=[])
go = pidfile.with_name("go")  # made once launch has returned: the job locks its folder after that
script = f"echo $$ > {pidfile}; while [ ! -e {go} ]; do sleep 0.05; done; chmod 000 ..; sleep 30"
fleet.launch(JobSpec(name="locked", role="student", student="ada", pr=7, command=["sh", "-c", script], wall_seconds=20))
go.touch()
deadline = time.monotonic() + 15
while os.access(root / "locked", os.X_OK) and time.monotonic() < deadline:
    time.sleep(0.05)
locked = not os.access(root / "locked", os.X_OK)
busy = sorted(gpus_in_use(root))
pid = int(pidfile.read_text())
fleet.delete("locked")
print(json.dumps({"locked": locked, "busy": busy, "alive": alive(pid, None), "left": os.listdir(root)}))
"""


def test_a_job_that_locks_its_own_folder_is_still_stopped_and_removed(tmp_path: Path) -> None:
    # with no namespace of its own (wall_ns off), a job's code may chmod its job folder: Landlock
    # does not cover chmod. As an ordinary user (file modes bind; root's would not), `delete` must
    # still stop it and remove the folder, and the GPU count of other launches must not trip on it
    # (a red team had delete raise, the job run on unlisted, and every GPU job fail as Lost)
    argv = as_non_root([sys.executable, "-c", LOCKS_ITS_FOLDER, str(tmp_path / "jobs"), str(tmp_path / "pid")])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == {"locked": True, "busy": [], "alive": False, "left": []}


READ_ONLY_INSIDE = """
import json, os, sys, time
from pathlib import Path
from senpai.fleet.base import JobSpec
from senpai.fleet.local import LocalFleet
root, ready = Path(sys.argv[1]), Path(sys.argv[2])
fleet = LocalFleet(root, gpus=[])
for mode in ("555", "000"):
    script = f"mkdir -p repo/mod/pkg && touch repo/mod/pkg/f && chmod {mode} repo/mod/pkg && touch {ready}; sleep 30"
    fleet.launch(JobSpec(name="ro", role="student", student="ada", pr=7, command=["sh", "-c", script], wall_seconds=20))
    deadline = time.monotonic() + 15
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    ready.unlink()
    fleet.delete("ro")
    print(json.dumps({"mode": mode, "left": os.listdir(root)}))
"""


def test_a_read_only_folder_in_a_jobs_tree_is_removed_with_it(tmp_path: Path) -> None:
    # as an ordinary user (file modes bind), a folder the job made read-only kept its entries, and
    # so the whole moved-aside job folder, on disk for good (a red team's find)
    argv = as_non_root([sys.executable, "-c", READ_ONLY_INSIDE, str(tmp_path / "jobs"), str(tmp_path / "ready")])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [json.loads(line) for line in done.stdout.splitlines()] == [{"mode": "555", "left": []}, {"mode": "000", "left": []}]


def test_job_outlives_its_killed_launcher(fleet: LocalFleet, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    code = (
        "import sys, time; from pathlib import Path; from senpai.fleet.local import LocalFleet;"
        "from senpai.fleet.base import JobSpec;"
        "LocalFleet(Path(sys.argv[1])).launch(JobSpec(name='orphan', role='advisor', wall_seconds=20,"
        f" command=['sh', '-c', 'sleep 1; echo done > {marker}; exit 7']));"
        "print('launched', flush=True); time.sleep(60)"
    )
    parent = subprocess.Popen([sys.executable, "-c", code, str(fleet.root)], stdout=subprocess.PIPE, text=True)
    assert parent.stdout.readline() == "launched\n"
    parent.kill()
    parent.wait()
    assert fleet.get("orphan").phase in ("pending", "running")
    status = wait_for(fleet, "orphan")
    assert (status.phase, status.exit_code, status.reason) == ("failed", 7, "Error")
    assert marker.read_text() == "done\n"


def test_dead_supervisor_is_reported_lost_and_its_job_killed(fleet: LocalFleet) -> None:
    fleet.launch(spec("alone", "sleep 30"))
    fleet.launch(spec("both", "sleep 30"))
    for name in ("alone", "both"):
        wait_for(fleet, name, lambda s: s.phase == "running")
    claims = {n: Claim.model_validate_json((fleet.root / n / "supervisor.json").read_text()) for n in ("alone", "both")}
    job_pid = record(fleet, "alone").pid
    os.kill(claims["alone"].pid, signal.SIGKILL)  # the job keeps running, unsupervised
    os.kill(claims["both"].pid, signal.SIGKILL)
    os.killpg(record(fleet, "both").pid, signal.SIGKILL)
    assert wait_gone(claims["alone"].pid) and wait_gone(claims["both"].pid)
    for name in ("alone", "both"):
        status = fleet.get(name)
        assert (status.phase, status.reason) == ("failed", "Lost")
        assert status.finished_at is not None
        assert "died" in fleet.logs(name)
    assert wait_gone(job_pid)  # get killed the orphan: nobody would enforce its deadline any more
    assert record(fleet, "alone").reason == "Lost"  # persisted, not just computed


def test_unclaimed_job_of_a_dead_launcher_is_lost_and_never_runs(fleet: LocalFleet, tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    jobdir = fleet.root / "stillborn"
    (jobdir / "work").mkdir(parents=True)
    (jobdir / "log").touch()
    (jobdir / "spec.json").write_text(spec("stillborn", f"touch {tmp_path / 'ran'}").model_dump_json())
    rec = StatusRecord(launch_id="x1", phase="pending", launcher_pid=dead.pid, created_at="2025-01-01T00:00:00Z")
    (jobdir / "status.json").write_text(rec.model_dump_json())
    status = fleet.get("stillborn")
    assert (status.phase, status.reason) == ("failed", "Lost")
    # A supervisor arriving late finds the reaper's claim and quits without running the command.
    late = subprocess.run([sys.executable, "-m", "senpai.fleet.supervise", str(jobdir), "x1"], cwd=REPO)
    assert late.returncode == 0
    time.sleep(0.5)
    assert not (tmp_path / "ran").exists()
    assert fleet.get("stillborn").reason == "Lost"


def test_supervisor_of_another_launch_quits(fleet: LocalFleet, tmp_path: Path) -> None:
    fleet.launch(spec("mine", "exit 0"))
    wait_for(fleet, "mine")
    (fleet.root / "mine" / "supervisor.json").unlink()
    subprocess.run([sys.executable, "-m", "senpai.fleet.supervise", str(fleet.root / "mine"), "other"], check=True)
    time.sleep(0.5)
    assert not (fleet.root / "mine" / "supervisor.json").exists()


def test_gpus_are_pinned_exclusively_and_jobs_wait_for_free_ones(tmp_path: Path) -> None:
    fleet = LocalFleet(tmp_path / "jobs", gpus=["0", "1"])
    release = tmp_path / "release"  # GPU holders run until the test lets them go: no race with the clock
    hold = f'echo "[$CUDA_VISIBLE_DEVICES]"; while [ ! -e {release} ]; do sleep 0.05; done'
    for name in ("g1", "g2"):
        fleet.launch(spec(name, hold, gpus=1))
    fleet.launch(spec("cpu", hold))
    for name in ("g1", "g2"):
        wait_for(fleet, name, lambda s: s.phase == "running")
    fleet.launch(spec("g3", 'echo "[$CUDA_VISIBLE_DEVICES]"', gpus=1))
    deadline = time.monotonic() + 15
    while "waiting for 1 free GPU" not in fleet.logs("g3") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "waiting for 1 free GPU" in fleet.logs("g3")
    assert fleet.get("g3").phase == "pending"  # both GPUs are taken
    release.touch()
    for name in ("g1", "g2", "g3", "cpu"):
        assert wait_for(fleet, name).phase == "succeeded"
    seen = {n: fleet.logs(n).splitlines()[-1] for n in ("g1", "g2", "g3", "cpu")}
    assert {seen["g1"], seen["g2"]} == {"[0]", "[1]"}
    assert seen["g3"] in ("[0]", "[1]") and seen["cpu"] == "[]"
    with pytest.raises(PermanentError, match="asks for 3 GPUs but this machine offers 2"):
        fleet.launch(spec("greedy", "true", gpus=3))
    assert fleet.get("greedy") is None


def test_gpu_job_on_a_machine_without_gpus_runs_on_cpu_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    fleet = LocalFleet(tmp_path / "jobs", gpus=[])
    fleet.launch(spec("nogpu", 'echo "[$CUDA_VISIBLE_DEVICES]"', gpus=1))
    assert wait_for(fleet, "nogpu").phase == "succeeded"
    assert "running on CPU" in fleet.logs("nogpu") and fleet.logs("nogpu").endswith("[]\n")
    assert "runs on CPU" in caplog.text


def test_detect_gpus_honours_cuda_visible_devices(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2, 5")
    assert LocalFleet(tmp_path).gpu_pool == ["2", "5"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert LocalFleet(tmp_path).gpu_pool == []


def test_no_nvidia_driver_is_no_gpus(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog) -> None:
    """Without CUDA_VISIBLE_DEVICES the pool is NVML's device count; NVML's error when no driver is
    loaded (this machine's case, and CI's) means an empty pool, not a crash."""
    import pynvml

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    caplog.set_level(logging.INFO, logger="senpai.fleet.local")
    try:  # where a driver is loaded, make NVML fail as it does without one
        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
        monkeypatch.setattr(pynvml, "nvmlInit", lambda: pynvml._nvmlCheckReturn(pynvml.NVML_ERROR_DRIVER_NOT_LOADED))
    except pynvml.NVMLError:
        pass
    assert LocalFleet(tmp_path).gpu_pool == []
    assert "no NVIDIA driver" in caplog.text


def test_nvml_devices_are_the_pool(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import pynvml

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    for name in ("nvmlInit", "nvmlShutdown"):
        monkeypatch.setattr(pynvml, name, lambda: None)
    monkeypatch.setattr(pynvml, "nvmlDeviceGetCount", lambda: 2)
    assert LocalFleet(tmp_path).gpu_pool == ["0", "1"]


def test_list_is_sorted_and_bad_names_are_absent(fleet: LocalFleet) -> None:
    for name in ("b-job", "a-job"):
        fleet.launch(spec(name, "true"))
    wait_for(fleet, "a-job"), wait_for(fleet, "b-job")
    assert [s.name for s in fleet.list()] == ["a-job", "b-job"]
    assert fleet.get("missing") is None and fleet.get("../jobs") is None and fleet.get(".x") is None


def test_list_reads_only_unfinished_jobs_and_a_new_fleet_reads_them_all(fleet: LocalFleet, monkeypatch) -> None:
    """A finished job's status is kept in memory while its folder is unchanged: a tick's list()
    parses the live jobs only. A new LocalFleet (a restarted wrapper) reads every folder once,
    and a job deleted and launched again under the same name is read afresh."""
    finished = [f"done-{i}" for i in range(4)]
    for name in finished:
        fleet.launch(spec(name, "true"))
    for name in finished:
        wait_for(fleet, name)
    fleet.launch(spec("live", "sleep 30"))
    wait_for(fleet, "live", until=lambda s: s.phase == "running")
    reads: list[str] = []
    parse = JobDir.status
    monkeypatch.setattr(JobDir, "status", lambda jd: reads.append(jd.path.name) or parse(jd))

    restarted = LocalFleet(fleet.root)
    assert [(s.name, s.phase) for s in restarted.list()] == [*((n, "succeeded") for n in finished), ("live", "running")]
    assert sorted(reads) == sorted([*finished, "live"])
    for f in (fleet, restarted):
        reads.clear()
        assert [s.name for s in f.list()] == [*finished, "live"]
        assert reads == ["live"]

    fleet.delete("done-0")
    fleet.launch(spec("done-0", "sleep 30"))
    assert {s.name: s.phase for s in restarted.list()}["done-0"] in ("pending", "running")
    fleet.delete("done-0")
    assert [s.name for s in restarted.list()] == finished[1:] + ["live"]
    fleet.delete("live")


@pytest.mark.parametrize(
    ("returncode", "ours", "oom", "expected"),
    [
        (0, None, False, ("succeeded", 0, None)),
        (2, None, False, ("failed", 2, "Error")),
        (-signal.SIGTERM, None, False, ("failed", 143, "Killed")),
        (-signal.SIGKILL, None, True, ("failed", 137, "OOMKilled")),
        (137, None, True, ("failed", 137, "OOMKilled")),  # a shell whose child the kernel killed
        (-signal.SIGKILL, None, False, ("failed", 137, "Killed")),
        (-signal.SIGKILL, "DeadlineExceeded", True, ("failed", 137, "DeadlineExceeded")),
        (0, "DeadlineExceeded", False, ("failed", 0, "DeadlineExceeded")),
    ],
)
def test_classify(returncode: int, ours: str | None, oom: bool, expected: tuple) -> None:
    assert classify(returncode, ours, oom) == expected
