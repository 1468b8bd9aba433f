"""Processes a job started, found by tag: what survives a job must be found even after a setsid.

A job's processes inherit one environment variable naming the job (`ENV_JOB`, the launch id), and
a train command's processes one naming the run (`ENV_RUN`). A daemon that double-forked and called
setsid has left the job's process group and is reparented to init, but it still carries its tag in
/proc/<pid>/environ, so `kill_tagged` finds it (psutil reads the environment of processes of the
same user, or of any user as root). A process that rewrites its own environment escapes this, so
a process that runs untrusted commands also makes itself their orphans' reaper (`become_subreaper`,
Linux): a daemon that dropped its tag and its group is still one of its `descendants()`. A cgroup
(the Kubernetes fleet's pod) does not have that hole.

psutil is imported by the functions that use it: the local supervisor imports this module but
needs psutil only once its job has ended, so the job starts without it (0.015-0.025 s of CPU).
"""

import ctypes
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil

ENV_JOB = "SENPAI_JOB_LAUNCH"
PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
ENV_RUN = "SENPAI_RUN_TAG"


def tagged(name: str, value: str) -> "list[psutil.Process]":
    """Live processes other than this one whose environment has `name`=`value`."""
    import psutil

    found = []
    for proc in psutil.process_iter():
        if proc.pid == os.getpid():
            continue
        try:
            if proc.environ().get(name) == value and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.Error, OSError):
            continue  # gone, or not ours to read
    return found


def kill_tagged(name: str, value: str, grace: float) -> int:
    """SIGTERM every process tagged `name`=`value`, SIGKILL those alive `grace` seconds later.
    Returns how many processes were signalled."""
    import psutil

    procs = tagged(name, value)
    _signal(procs, psutil.Process.terminate)
    _, alive = psutil.wait_procs(procs, timeout=grace)
    _signal(alive, psutil.Process.kill)
    psutil.wait_procs(alive, timeout=grace)
    return len(procs)


def become_subreaper() -> bool:
    """Make this process the reaper of its descendants' orphans (Linux prctl PR_SET_CHILD_SUBREAPER),
    so a daemon that double-forked, called setsid and cleared its environment is reparented here, not
    to init. Idempotent. Returns False where prctl is not available."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def descendants() -> set[int]:
    """Pids of every live descendant of this process."""
    import psutil

    try:
        return {p.pid for p in psutil.Process().children(recursive=True)}
    except psutil.Error:
        return set()


def kill_new_descendants(before: set[int], grace: float) -> int:
    """SIGTERM every descendant of this process whose pid is not in `before`, SIGKILL (and reap)
    those alive `grace` seconds later. Returns how many were signalled."""
    import psutil

    try:
        procs = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
    except psutil.Error:
        return 0
    _signal(procs, psutil.Process.terminate)
    _, alive = psutil.wait_procs(procs, timeout=grace)
    _signal(alive, psutil.Process.kill)
    psutil.wait_procs(alive, timeout=grace)
    return len(procs)


def _signal(procs: "list[psutil.Process]", send) -> None:
    import psutil

    for proc in procs:
        try:
            send(proc)
        except psutil.Error:
            pass
