"""Local fleet: each job is a subprocess in its own directory, watched by a detached supervisor.

The directory layout and the supervisor's lifecycle are described in `senpai.fleet.supervise`.
This module is the launcher and the reader:

- **Claim.** `launch` prepares the whole job directory under a hidden staging name and renames
  it to `<root>/<name>`. rename(2) of a directory onto an existing, non-empty one fails, so one
  launcher wins across threads and processes; the losers return the winner's status. Readers never
  see a half-written job. Only then is the supervisor started, and `launch` waits until it has
  claimed the job (`supervisor.json`), so a returned job always has a live owner.
- **Deadlines** are enforced by the supervisor, not by the wrapper: `wall_seconds` after the
  command starts, SIGTERM to its process group, SIGKILL after GRACE_SECONDS, reason
  DeadlineExceeded. A job waiting for GPUs is `pending` and its clock has not started.
- **Lost.** `get` checks that a job that is not done still has an owner: a live supervisor (pid
  and start time, so a reused pid does not count), or, before the claim, a live launcher. If the
  owner is gone, it kills what is left of the job's process group (nobody would enforce its
  deadline any more) and records phase failed, reason Lost. A reaper takes the claim itself
  before it declares an unclaimed job Lost, so a late supervisor can never run it.
- **Containment.** One job's folder never breaks the fleet: a spec/status that cannot be read or
  parsed makes that job failed/Lost (`_broken`), a Lost record that cannot be written (ENOSPC) is
  still reported, and a launch that cannot stage or start raises TransientError after freeing the
  name (DiskFull when the volume is full). Everything a job started, `setsid` daemons too, is
  killed by its tag (`senpai.fleet.procs`).
- **GPUs.** The pool is the launcher's CUDA_VISIBLE_DEVICES if set, else the devices NVML counts. Every
  job gets CUDA_VISIBLE_DEVICES: ids no other unfinished job holds, or "" when it asks for none,
  so CPU jobs cannot touch pinned GPUs. A job waits (pending) while the GPUs it needs are busy,
  as an unschedulable pod would. Asking for more GPUs than the machine has raises PermanentError.
  On a machine with no GPUs at all, a GPU job runs on CPU: the wrapper logs a warning and the
  job's log starts with one. This keeps configs written for a cluster runnable on a laptop; the
  program sees no CUDA device and must cope as it would anywhere.
- **Listing is O(live jobs).** A finished job's status.json is never written again, so `get`
  keeps its status in memory, keyed by its folder's inode and ctime (a new folder of the same
  name, status.json replaced, any file added or removed: each changes the key). `list` then
  stats a finished job's folder but reads and parses only the unfinished jobs. The disk stays
  the record: a new LocalFleet (a restarted wrapper) reads every folder once.
- **delete** renames the directory away first (so the name is free at once and a late writer
  cannot touch a new job of the same name), stops the supervisor with SIGTERM (it stops the job
  as on a deadline), SIGKILLs both if they outlast the grace period, then removes the directory.
"""

import contextlib
import errno
import logging
import os
import re
import signal
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from senpai import startup, trees
from senpai.config import credentials
from senpai.config.roles import Role
from senpai.errors import NotFound, PermanentError, TransientError
from senpai.fleet import disk
from senpai.fleet.base import JobSpec, JobStatus
from senpai.fleet.names import parse_job_name
from senpai.fleet.procs import ENV_JOB, kill_tagged
from senpai.fleet.supervise import (
    GRACE_SECONDS,
    LOG,
    SPEC,
    WORK,
    JobDir,
    StatusRecord,
    alive,
    kill_group,
    proc_start,
    utcnow,
    without_secrets,
)

log = logging.getLogger(__name__)

START_TIMEOUT_SECONDS = 15.0
_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")  # JobSpec.name; never hidden


def detect_gpus() -> list[str]:
    """GPU ids this machine offers: the entries of CUDA_VISIBLE_DEVICES if it is set (even to
    ""), else one index per device NVML counts (nvidia-ml-py), else none: no NVIDIA driver (NVMLError)
    means no GPUs, logged at info."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [g.strip() for g in visible.split(",") if g.strip()]
    import pynvml  # imported here: only a fleet that looks for GPUs needs it

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as e:
        log.info("no NVIDIA driver (NVML: %s): no GPUs", e)
        return []
    try:
        return [str(i) for i in range(pynvml.nvmlDeviceGetCount())]
    except pynvml.NVMLError as e:
        log.warning("NVML could not count the GPUs (%s); assuming none", e)
        return []
    finally:
        pynvml.nvmlShutdown()


def _identity(folder: os.stat_result) -> tuple[int, int]:
    """A job folder's identity: a new folder of the same name has another inode or ctime, and a
    file renamed into the folder (every status.json write: `JobDir.write`), added or removed
    moves its ctime."""
    return folder.st_ino, folder.st_ctime_ns


def _signal(pid: int, sig: int) -> None:
    # os.kill, not psutil: the pid is already checked against its start time (`alive`), which is all
    # psutil.Process(pid).send_signal would add, and this module runs psutil-free on every tick
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _tail(path: Path, lines: int) -> str:
    if lines <= 0:
        return ""
    with open(path, "rb") as f:
        end = f.seek(0, os.SEEK_END)
        data = b""
        while end > 0 and data.count(b"\n") <= lines:
            step = min(64 * 1024, end)
            end -= step
            f.seek(end)
            data = f.read(step) + data
    return b"".join(data.splitlines(keepends=True)[-lines:]).decode("utf-8", "replace")


class LocalFleet:
    """Fleet of local subprocesses under `root` (FleetSettings.dir), one folder per job.

    `gpus` is the pool of GPU ids to pin jobs to; None detects it (see `detect_gpus`).
    Safe to use from several threads and processes at once, and across wrapper restarts.
    """

    def __init__(self, root: Path, gpus: Sequence[str] | None = None) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._gpu_pool = list(gpus) if gpus is not None else None
        self._finished: dict[str, tuple[tuple[int, int], JobStatus]] = {}  # name -> (folder identity, final status)

    @property
    def gpu_pool(self) -> list[str]:
        if self._gpu_pool is None:
            self._gpu_pool = detect_gpus()
        return self._gpu_pool

    # ----------------------------------------------------------------------- Fleet

    def launch(self, spec: JobSpec) -> JobStatus:
        """Start `spec`, or return the existing job of that name unchanged.

        Raises PermanentError if it asks for more GPUs than the machine has, TransientError if
        the job directory cannot be created or the job was deleted while it was being launched
        (DiskFull, naming the fleet's folder, when its volume is full).
        """
        for _ in range(3):
            if (existing := self.get(spec.name)) is not None:
                return existing
            self._check_gpus(spec)
            launch_id = uuid.uuid4().hex
            staging = self.root / f".staging-{spec.name}-{launch_id[:8]}"
            try:
                self._stage(staging, spec, launch_id)
                os.rename(staging, self.root / spec.name)
            except OSError as e:
                with contextlib.suppress(OSError):
                    trees.remove(staging)
                if e.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR):
                    problem = TransientError(f"cannot create job dir {self.root / spec.name}: {e}")
                    raise disk.from_os_error(e, self.root) or problem from e
                continue  # another launcher won: return its job
            try:
                self._start(self.root / spec.name, launch_id)
            except FileNotFoundError:
                pass  # deleted meanwhile: reported below
            except OSError as e:  # e.g. ENOSPC: free the name, so a later launch starts afresh
                with contextlib.suppress(OSError):
                    self.delete(spec.name)
                raise disk.from_os_error(e, self.root) or TransientError(f"cannot start job {spec.name}: {e}") from e
            if (status := self.get(spec.name)) is None:
                raise TransientError(f"job {spec.name} was deleted while it was being launched")
            return status
        raise PermanentError(f"{self.root / spec.name} exists but is not a job directory")

    def get(self, name: str) -> JobStatus | None:
        """The job's status from its status.json, with dead supervisors reported as Lost, and a job
        whose folder cannot be read (corrupt or unreadable spec.json/status.json, I/O error) as
        failed with reason Lost. Never raises for one job's folder. A finished job's status comes
        from memory while its folder is unchanged (module docstring)."""
        return self._status(name) if _NAME.fullmatch(name) else None

    def list(self) -> list[JobStatus]:
        """Every job, sorted by name (see `get`): a stat per finished job, and a read of the
        unfinished ones only. Raises TransientError if the root cannot be listed."""
        try:
            names = sorted(e.name for e in os.scandir(self.root) if _NAME.fullmatch(e.name))
        except OSError as e:
            raise TransientError(f"cannot list the local fleet {self.root}: {e}") from e
        for gone in self._finished.keys() - set(names):
            self._finished.pop(gone, None)
        return [status for name in names if (status := self._status(name)) is not None]

    def logs(self, name: str, tail_lines: int = 50) -> str:
        """Last `tail_lines` lines of the job's log. Raises NotFound if there is no such job,
        TransientError if its log cannot be read."""
        path = self._path(name)
        try:
            if path is None:
                raise FileNotFoundError(name)
            return _tail(path / LOG, tail_lines)
        except (FileNotFoundError, NotADirectoryError) as e:
            raise NotFound(f"no local job {name!r} under {self.root}") from e
        except OSError as e:
            raise TransientError(f"cannot read the log of local job {name!r}: {e}") from e

    def delete(self, name: str) -> None:
        """Stop the job (SIGTERM, then SIGKILL after the grace period) and remove its folder.

        The folder is moved aside first, so the job leaves the listing at once; until it is stopped,
        the job may write again where it was told by absolute path (a git clone into its work
        folder), so a folder made again under its name, holding no job spec, goes too: left, it
        would keep that checkout on disk and the name from launching (a rename onto it fails)."""
        path = self._path(name)
        if path is None:
            return
        trash = self._trash(name)
        try:
            os.rename(path, trash)
        except (FileNotFoundError, NotADirectoryError):
            return
        with contextlib.suppress(OSError):  # a job with no namespace of its own may have locked it (chmod 000)
            if stat.S_ISDIR(os.lstat(trash).st_mode):
                os.chmod(trash, 0o700)
        try:
            with JobDir(trash) as jd:
                self._stop(jd)
        finally:
            with contextlib.suppress(OSError):  # a tree the job's code made too deep goes with rm -rf
                trees.remove(trash)
            self._remove_remade(path)

    def _remove_remade(self, path: Path) -> None:
        """Remove `path` if the stopped job made it again: a folder with no job spec. A job launched
        under the name meanwhile stays: its staged folder is renamed into place whole, spec
        included. A launch can land only on an empty folder (a rename cannot replace one that is
        not empty), so an empty one is removed with rmdir, which fails once a launch has landed;
        one that is not empty and holds no spec is the dying job's alone, and is moved aside."""
        if not path.is_dir() or path.is_symlink() or (path / SPEC).exists():
            return
        with contextlib.suppress(OSError):
            os.rmdir(path)
            return
        if (path / SPEC).exists():  # a launch landed on it as it was empty
            return
        trash = self._trash(path.name)
        with contextlib.suppress(OSError):
            os.rename(path, trash)
            if (trash / SPEC).exists():  # the job's own code wrote one: keep the name's folder as it was
                os.rename(trash, path)
                return
            trees.remove(trash)

    # ----------------------------------------------------------------------- internals

    def _trash(self, name: str) -> Path:
        """A fresh name to move job `name`'s folder to before removing it (dot-led: never listed)."""
        return self.root / f".deleted-{name}-{uuid.uuid4().hex[:8]}"

    def _path(self, name: str) -> Path | None:
        return self.root / name if _NAME.fullmatch(name) else None

    def _status(self, name: str) -> JobStatus | None:
        """`get` of a valid name: the cached status if the folder is unchanged since it was read
        finished, else its files read (and cached if finished)."""
        folder = f"{self.root}/{name}"  # a str: building a Path costs more than the stat of a cached job
        try:
            if (hit := self._finished.get(name)) is not None and hit[0] == _identity(os.stat(folder)):
                return hit[1]
            with JobDir(Path(folder)) as jd:
                identity = _identity(os.fstat(jd.fd))  # before the reads: a later write moves it
                spec = jd.spec()
                record = self._check(jd, jd.status())
        except (FileNotFoundError, NotADirectoryError):
            return None
        except (OSError, ValueError) as e:
            return self._broken(name, e)
        status = JobStatus(
            name=spec.name,
            role=spec.role,
            pr=spec.pr,
            student=spec.student,
            phase=record.phase,
            exit_code=record.exit_code,
            reason=record.reason,
            started_at=record.started_at,
            finished_at=record.finished_at,
            deadline_at=record.started_at and record.started_at + timedelta(seconds=spec.wall_seconds),
        )
        if status.done:
            self._finished[name] = (identity, status)
        return status

    def _check_gpus(self, spec: JobSpec) -> None:
        if spec.gpus == 0:
            return
        pool = self.gpu_pool
        if not pool:
            log.warning("job %s asks for %d GPU(s) but this machine has none; it runs on CPU", spec.name, spec.gpus)
        elif spec.gpus > len(pool):
            raise PermanentError(
                f"job {spec.name} asks for {spec.gpus} GPUs but this machine offers {len(pool)} "
                f"({','.join(pool)}); lower the student's gpus"
            )

    def _stage(self, staging: Path, spec: JobSpec, launch_id: str) -> None:
        staging.mkdir()
        (staging / WORK).mkdir()
        (staging / LOG).touch()
        me = os.getpid()
        record = StatusRecord(
            launch_id=launch_id,
            phase="pending",
            launcher_pid=me,
            launcher_start=proc_start(me),
            gpu_pool=self.gpu_pool,
            created_at=utcnow(),
        )
        with JobDir(staging) as jd:
            jd.write(SPEC, spec.model_dump_json(indent=1))
            jd.write_status(record)

    def _start(self, path: Path, launch_id: str) -> None:
        """Start the supervisor and wait for its claim; if it never comes, declare the job Lost."""
        cmd = [sys.executable, "-m", "senpai.fleet.supervise", str(path), launch_id]
        secrets, named = credentials.pipe_to_child(credentials.held())  # never in its environment
        env = {**without_secrets(os.environ), **named}
        startup.apply(env)  # the supervisor, and the job it starts, skip pydantic's plugin scan even under an embedded wrapper
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        problem = None
        try:
            with open(path / LOG, "ab") as out:
                intermediate = subprocess.Popen(
                    cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env,
                    pass_fds=[secrets],
                )  # fmt: skip
            if (code := intermediate.wait(timeout=START_TIMEOUT_SECONDS)) != 0:
                problem = f"the supervisor exited with status {code}"
        except (OSError, subprocess.SubprocessError) as e:
            problem = f"the supervisor could not start: {e}"
        finally:
            os.close(secrets)
        with JobDir(path) as jd:
            while problem is None and jd.claimant() is None:
                if time.monotonic() > deadline:
                    problem = f"the supervisor did not claim the job within {START_TIMEOUT_SECONDS:.0f} s"
                time.sleep(0.01)
            if problem is not None and jd.claim(None, None):
                self._lost(jd, jd.status(), f"{problem}; see the log")

    def _check(self, jd: JobDir, record: StatusRecord) -> StatusRecord:
        """`record`, or a Lost record if the job is not done and nobody owns it any more."""
        if record.done:
            return record
        claim = jd.claimant()
        if claim is None:
            if alive(record.launcher_pid, record.launcher_start):
                return record  # still being launched
            if not jd.claim(None, None):
                return self._check(jd, jd.status())  # a supervisor claimed it just now
            return self._lost(jd, jd.status(), "the launcher died before a supervisor started")
        if claim.pid is None:
            return self._lost(jd, record, "no supervisor ever started")
        if alive(claim.pid, claim.start):
            return record
        record = jd.status()  # it may have finished between our two reads
        if record.done:
            return record
        kill_group(record.pid, record.pid_start, signal.SIGKILL)
        kill_tagged(ENV_JOB, record.launch_id, GRACE_SECONDS)
        return self._lost(jd, record, f"supervisor (pid {claim.pid}) died; killed what was left of the job")

    def _lost(self, jd: JobDir, record: StatusRecord, message: str) -> StatusRecord:
        """`record` as failed, reason Lost; persisted if the disk allows (else computed again next read)."""
        lost = record.model_copy(update={"phase": "failed", "reason": "Lost", "message": message, "finished_at": utcnow()})
        try:
            jd.log(f"failed: Lost: {message}")
            jd.write_status(lost)
        except OSError as e:
            message += f" (not recorded: {e})"
        log.warning("local job %s lost: %s", jd.path.name, message)
        return lost

    def _broken(self, name: str, error: Exception) -> JobStatus:
        """A job whose folder cannot be read: failed, reason Lost, with what its name tells. Its
        supervisor, if alive, is told to stop (it will never be read right again)."""
        log.warning("local job %s cannot be read, reported lost: %s", name, str(error)[:300])
        n = parse_job_name(name)
        who = {"role": n.role if n else Role.ADVISOR, "pr": n.pr if n else None, "student": None}
        claim = None
        with contextlib.suppress(OSError, ValueError), JobDir(self.root / name) as jd:
            claim = jd.claimant()
            spec = jd.spec()
            who = {"role": spec.role, "pr": spec.pr, "student": spec.student}
        if claim is not None and claim.pid is not None and alive(claim.pid, claim.start):
            _signal(claim.pid, signal.SIGTERM)
        return JobStatus(name=name, **who, phase="failed", reason="Lost")

    def _stop(self, jd: JobDir) -> None:
        """Stop whatever runs the job in `jd`; returns once it is gone (at most ~GRACE_SECONDS)."""
        claim = jd.claimant()
        if claim is None and jd.claim(None, None):
            return  # no supervisor started, and now none ever will
        claim = claim or jd.claimant()
        if claim is not None and claim.pid is not None and alive(claim.pid, claim.start):
            _signal(claim.pid, signal.SIGTERM)
            deadline = time.monotonic() + GRACE_SECONDS + 2
            while alive(claim.pid, claim.start) and time.monotonic() < deadline:
                time.sleep(0.02)
            if alive(claim.pid, claim.start):
                _signal(claim.pid, signal.SIGKILL)
        record = jd.status()
        if not record.done:
            kill_group(record.pid, record.pid_start, signal.SIGKILL)
        kill_tagged(ENV_JOB, record.launch_id, GRACE_SECONDS)  # a setsid daemon of a supervisor we SIGKILLed
