"""Supervisor of one local fleet job: `python -m senpai.fleet.supervise <jobdir> <launch_id>`.

Why a separate process: a job must outlive the wrapper that launched it, still be killed at its
wall time, and have its exit recorded when nobody is listening. The launcher starts this module
in a new session; it forks once more and the first process exits at once, so the supervisor is
reparented to init (the wrapper never holds a zombie) and signals aimed at the wrapper's process
group or terminal never reach it.

A job directory (`<root>/<name>/`; JSON files are replaced atomically: tmp file, fsync, os.replace):

    spec.json        the JobSpec, written once by the launcher
    status.json      a StatusRecord; the launcher writes `pending`, then only the claim's owner
                     writes it (or a reader that found the owner dead: reason Lost)
    supervisor.json  the claim, a Claim: the supervisor that owns the job, or `{"pid": null}` when
                     a reaper declared the job Lost before any supervisor started. It is created
                     with link(2), which fails if the file exists, so exactly one process wins it.
    work/            the job's cwd, empty at start
    log              the job's stdout and stderr, plus `[senpai-fleet]` lines from this module;
                     capped on disk to its head and tail (`senpai.fleet.logcap`)

Secrets: the launcher hands the supervisor its secrets on a pipe (`senpai.config.credentials`), never
in its environment, and the supervisor hands them to the command the same way; both are
non-dumpable, so no process of the same user reads them in /proc.

Lifecycle: claim → wait for free GPUs (phase stays pending) → start the command in its own process
group with the spec's env over os.environ (secret-looking names left out of both), plus its
deadline (`ENV_DEADLINE`, epoch seconds) and its tag (`senpai.fleet.procs.ENV_JOB` = the launch
id) → poll until it exits; at `wall_seconds` after the start (reason DeadlineExceeded), or on
SIGTERM/SIGINT/SIGHUP to this process (reason Killed), SIGTERM the group and SIGKILL it
GRACE_SECONDS later → SIGKILL what is left of the group once the command exits (as a pod's end
would), and every process still carrying the job's tag (daemons that called setsid) → write the
final status.
"""

import fcntl
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from senpai.config import credentials
from senpai.config.secret_env import SECRET_ENV
from senpai.fleet import logcap
from senpai.fleet.base import ENV_DEADLINE, JobSpec, Phase
from senpai.fleet.procs import ENV_JOB, kill_tagged

GRACE_SECONDS = 3.0
POLL_SECONDS = 0.1
GPU_POLL_SECONDS = 0.5
SPEC, STATUS, CLAIM, LOG, WORK = "spec.json", "status.json", "supervisor.json", "log", "work"
GPU_LOCK = ".gpus.lock"

Reason = Literal["Error", "Killed", "OOMKilled", "DeadlineExceeded", "Lost"]


def utcnow() -> datetime:
    return datetime.now(UTC)


class StatusRecord(BaseModel):
    """status.json of a local job (schema_version 1). Times are ISO8601 UTC."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    launch_id: str = Field(description="Random id of this launch; a supervisor for another launch quits.")
    phase: Phase
    pid: int | None = Field(None, description="The command's pid, which is also its process-group id.")
    pid_start: int | None = Field(None, description="Start of `pid` in clock ticks since boot; 0 unknown.")
    exit_code: int | None = Field(None, description="The command's exit status; 128+N if killed by signal N.")
    reason: Reason | None = None
    message: str | None = Field(None, description="One line for humans on why the job failed.")
    launcher_pid: int
    launcher_start: int | None = None
    gpu_pool: list[str] = Field(default_factory=list, description="GPU ids the launcher's machine offers.")
    gpu_ids: list[str] | None = Field(None, description="CUDA_VISIBLE_DEVICES of the job; [] is CPU only.")
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None

    @property
    def done(self) -> bool:
        return self.phase in ("succeeded", "failed")


class Claim(BaseModel):
    """supervisor.json: the process that owns the job; pid None means nobody will ever run it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pid: int | None
    start: int | None = None


# --------------------------------------------------------------------------- processes


def proc_start(pid: int | None) -> int | None:
    """Start time of live process `pid` in clock ticks since boot (Linux /proc/<pid>/stat field
    22); None if it is gone or a zombie. Where /proc is missing, 0 for any live pid."""
    # Not psutil.Process(pid).create_time(): the supervisor calls this before its job starts, which
    # it does without importing psutil (senpai.fleet.procs), and the integer ticks compare exactly
    # across processes where psutil's float seconds are derived from the boot time.
    if pid is None or pid <= 0:
        return None
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        if Path("/proc/self/stat").exists():
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return 0
    fields = raw[raw.rindex(b")") + 2 :].split()
    return None if fields[0] in (b"Z", b"X") else int(fields[19])


def alive(pid: int | None, start: int | None) -> bool:
    """Is `pid` running and still the process that started at `start` (pid reuse guard)?"""
    now = proc_start(pid)
    return now is not None and (not start or not now or now == start)


def kill_group(pgid: int | None, start: int | None, sig: int) -> None:
    """Send `sig` to process group `pgid` unless its leader's pid now belongs to someone else."""
    if pgid is None or pgid <= 1:
        return
    now = proc_start(pgid)
    if now is not None and start and now and now != start:
        return
    try:  # psutil has no process-group signal
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def oom_kills() -> int | None:
    """How many processes the kernel OOM killer killed in our memory cgroup: `oom_kill` of
    memory.events (cgroup v2) or memory.oom_control (v1). None if neither can be read."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, cgroup = line.split(":", 2)
        if controllers == "":
            base, name = Path("/sys/fs/cgroup"), "memory.events"
        elif "memory" in controllers.split(","):
            base, name = Path("/sys/fs/cgroup/memory"), "memory.oom_control"
        else:
            continue
        for folder in (base / cgroup.lstrip("/"), base):
            try:
                text = (folder / name).read_text()
            except OSError:
                continue
            for row in text.splitlines():
                key, _, value = row.partition(" ")
                if key == "oom_kill":
                    return int(value)
    return None


def _signame(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def classify(returncode: int, reason: Reason | None, oom_killed: bool) -> tuple[Phase, int, Reason | None]:
    """Phase, exit code (128+N for signal N) and reason of a command that returned `returncode`
    (negative: killed by that signal). `reason` is ours if we stopped it; `oom_killed` says the
    cgroup's OOM-kill counter grew while it ran."""
    exit_code = returncode if returncode >= 0 else 128 - returncode
    if reason is not None:
        return "failed", exit_code, reason
    if returncode == 0:
        return "succeeded", 0, None
    if oom_killed and exit_code == 128 + signal.SIGKILL:
        return "failed", exit_code, "OOMKilled"
    return "failed", exit_code, "Killed" if returncode < 0 else "Error"


def _exit_waiter(proc: subprocess.Popen) -> Callable[[float], int | None]:
    """A function that waits up to its argument's seconds for `proc` to exit: its return code, or
    None if it still runs. It wakes as soon as `proc` exits (a pidfd, Linux 5.3+), where
    `Popen.wait(timeout)` polls with sleeps of up to 50 ms; elsewhere it is that poll."""

    def poll(timeout: float) -> int | None:
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # no pidfd here, or the process is already reaped
        return poll

    poller = select.poll()
    poller.register(pidfd, select.POLLIN)

    def wait(timeout: float) -> int | None:
        if poller.poll(timeout * 1000):  # readable: the process exited
            os.close(pidfd)
            return proc.wait()
        return None

    return wait


# --------------------------------------------------------------------------- job directory


class JobDir:
    """An open job directory. Every access goes through the directory's fd, so a directory that
    `delete` renamed away is never confused with a new job of the same name."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)

    def __enter__(self) -> "JobDir":
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)

    def read(self, name: str) -> str:
        with open(os.open(name, os.O_RDONLY, dir_fd=self.fd)) as f:
            return f.read()

    def write(self, name: str, text: str) -> None:
        tmp = f".{name}.{os.getpid()}.tmp"
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=self.fd), "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def spec(self) -> JobSpec:
        return JobSpec.model_validate_json(self.read(SPEC))

    def status(self) -> StatusRecord:
        return StatusRecord.model_validate_json(self.read(STATUS))

    def write_status(self, record: StatusRecord) -> None:
        self.write(STATUS, record.model_dump_json(indent=1))

    def claim(self, pid: int | None, start: int | None) -> bool:
        """Take ownership of the job; False if a supervisor or a reaper already has it."""
        tmp = f".{CLAIM}.{os.getpid()}.{time.monotonic_ns()}.tmp"
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=self.fd), "w") as f:
            f.write(Claim(pid=pid, start=start).model_dump_json())
        try:
            os.link(tmp, CLAIM, src_dir_fd=self.fd, dst_dir_fd=self.fd)
            return True
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp, dir_fd=self.fd)

    def claimant(self) -> Claim | None:
        try:
            return Claim.model_validate_json(self.read(CLAIM))
        except FileNotFoundError:
            return None

    def log(self, message: str) -> None:
        line = f"[senpai-fleet] {utcnow():%Y-%m-%dT%H:%M:%SZ} {message}\n"
        fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644, dir_fd=self.fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # never inside a compaction of the capped log (logcap); closing unlocks
            os.write(fd, line.encode())
        finally:
            os.close(fd)


def gpus_in_use(root: Path) -> set[str]:
    """GPU ids pinned to unfinished jobs under `root` whose supervisor or command still lives."""
    busy: set[str] = set()
    for entry in os.scandir(root):
        if not entry.is_dir():
            continue
        try:
            with JobDir(Path(entry.path)) as jd:
                record, claim = jd.status(), jd.claimant()
        except (OSError, ValueError):  # gone, not a job, or locked by its own code (chmod 000): not ours to count
            continue
        if record.gpu_ids and not record.done:
            owner = claim.pid if claim else None
            if alive(owner, claim.start if claim else None) or alive(record.pid, record.pid_start):
                busy.update(record.gpu_ids)
    return busy


# --------------------------------------------------------------------------- supervisor


class Supervisor:
    """Runs one job to completion; see the module docstring."""

    def __init__(self, jobdir: Path, launch_id: str) -> None:
        self.jd = JobDir(jobdir)
        self.root = jobdir.parent
        self.launch_id = launch_id
        self.stop_signal: int | None = None

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.stop_signal = signum

    def run(self) -> int:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._on_signal)
        if self.jd.status().launch_id != self.launch_id:
            return 0  # the directory now holds another launch of the same name
        me = os.getpid()
        if not self.jd.claim(me, proc_start(me)):
            return 0  # another supervisor, or a reaper that declared the job Lost, owns it
        spec = self.jd.spec()
        gpu_ids = self._gpus(spec, self.jd.status())
        if gpu_ids is None:
            self._finish(self.jd.status(), "failed", None, "Killed", "stopped while waiting for GPUs")
            return 0
        record = self.jd.status().model_copy(update={"gpu_ids": gpu_ids, "started_at": utcnow()})
        oom_before = oom_kills()
        log = logcap.capture(os.open(LOG, os.O_RDWR | os.O_NOFOLLOW, dir_fd=self.jd.fd))  # the job's fds 1 and 2
        proc = self._spawn(spec, record)
        if proc is None:
            log.close(GRACE_SECONDS)
            return 0
        update = {"phase": "running", "pid": proc.pid, "pid_start": proc_start(proc.pid)}
        record = record.model_copy(update=update)
        self.jd.write_status(record)
        returncode, reason, message = self._watch(proc, record, spec.wall_seconds)
        log.close(GRACE_SECONDS)  # the job's last lines are in the log before its status is final
        oom_after = oom_kills()
        oom = oom_before is not None and oom_after is not None and oom_after > oom_before
        phase, exit_code, reason = classify(returncode, reason, oom)
        if message is None and returncode < 0:
            message = f"command killed by {_signame(-returncode)}"
        elif message is None and returncode > 0:
            message = f"command exited with status {returncode}"
        self._finish(record, phase, exit_code, reason, message)
        return 0

    def _spawn(self, spec: JobSpec, record: StatusRecord) -> subprocess.Popen | None:
        """Start the command in work/ in a new session; on failure record it and return None."""
        work = os.open(WORK, os.O_RDONLY | os.O_DIRECTORY, dir_fd=self.jd.fd)
        os.fchdir(work)
        os.close(work)
        secrets, named = credentials.pipe_to_child(credentials.held())
        env = {**without_secrets(os.environ), **spec.thread_env(), **without_secrets(spec.env), **named}
        env |= {"CUDA_VISIBLE_DEVICES": ",".join(record.gpu_ids or [])}
        env |= {ENV_DEADLINE: str(int(time.time()) + spec.wall_seconds), ENV_JOB: self.launch_id}
        try:
            return subprocess.Popen(spec.command, env=env, stdin=subprocess.DEVNULL, start_new_session=True, pass_fds=[secrets])
        except OSError as e:
            code = 127 if isinstance(e, FileNotFoundError) else 126
            self._finish(record, "failed", code, "Error", f"cannot start {spec.command[0]!r}: {e.strerror}")
            return None
        finally:
            os.close(secrets)

    def _watch(self, proc: subprocess.Popen, record: StatusRecord, wall: int) -> tuple[int, Reason | None, str | None]:
        """Wait for `proc`, stopping it at the deadline or on our stop signal."""
        deadline = time.monotonic() + wall
        reason: Reason | None = None
        message: str | None = None
        escalate_at: float | None = None
        exited = _exit_waiter(proc)
        while True:
            if (returncode := exited(POLL_SECONDS)) is not None:
                break
            now = time.monotonic()
            if reason is None and (self.stop_signal is not None or now >= deadline):
                if self.stop_signal is not None:
                    reason, message = "Killed", f"stopped by {_signame(self.stop_signal)}"
                else:
                    reason, message = "DeadlineExceeded", f"ran longer than wall_seconds={wall}"
                kill_group(proc.pid, record.pid_start, signal.SIGTERM)
                escalate_at = now + GRACE_SECONDS
            elif escalate_at is not None and now >= escalate_at:
                kill_group(proc.pid, record.pid_start, signal.SIGKILL)
                escalate_at = None
        kill_group(proc.pid, record.pid_start, signal.SIGKILL)  # what the command left in its group
        kill_tagged(ENV_JOB, self.launch_id, GRACE_SECONDS)  # and what left the group (setsid daemons)
        return returncode, reason, message

    def _gpus(self, spec: JobSpec, record: StatusRecord) -> list[str] | None:
        """GPU ids for the job ([] for CPU); waits while others hold them. None if stopped."""
        if spec.gpus == 0:
            return []
        if not record.gpu_pool:
            self.jd.log(f"warning: {spec.gpus} GPU(s) requested but this machine has none; running on CPU")
            return []
        waiting_logged = False
        while self.stop_signal is None:
            with open(self.root / GPU_LOCK, "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                free = [g for g in record.gpu_pool if g not in gpus_in_use(self.root)]
                if len(free) >= spec.gpus:
                    ids = free[: spec.gpus]
                    self.jd.write_status(self.jd.status().model_copy(update={"gpu_ids": ids}))
                    return ids
            if not waiting_logged:
                self.jd.log(f"waiting for {spec.gpus} free GPU(s) of {len(record.gpu_pool)}")
                waiting_logged = True
            time.sleep(GPU_POLL_SECONDS)
        return None

    def _finish(
        self, record: StatusRecord, phase: Phase, exit_code: int | None, reason: Reason | None, message: str | None
    ) -> None:
        update = {"phase": phase, "exit_code": exit_code, "reason": reason, "message": message, "finished_at": utcnow()}
        if phase == "failed":  # log first: once the status is final, the log is complete
            self.jd.log(f"failed: {reason} (exit code {exit_code}): {message}")
        self.jd.write_status(record.model_copy(update=update))


def without_secrets(env: Mapping[str, str]) -> dict[str, str]:
    """`env` less every secret-looking name (`SECRET_ENV`) and the secrets pipe's: what a job's
    supervisor and the job may be started with; their secrets come on a pipe (`credentials`)."""
    return {k: v for k, v in env.items() if not SECRET_ENV.search(k) and k != credentials.ENV_FD}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m senpai.fleet.supervise <jobdir> <launch_id>", file=sys.stderr)
        return 2
    if os.fork() > 0:
        os._exit(0)  # the launcher reaps this parent at once; init adopts the supervisor
    credentials.adopt()  # the launcher's secrets, off its pipe; this process is non-dumpable from its import of senpai
    return Supervisor(Path(args[0]), args[1]).run()


if __name__ == "__main__":
    sys.exit(main())
