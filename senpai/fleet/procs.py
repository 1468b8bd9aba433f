"""Processes a job started, found by tag: what survives a job must be found even after a setsid.

A job's processes inherit one environment variable naming the job (`ENV_JOB`, the launch id), and
a train command's processes one naming the run (`ENV_RUN`). A daemon that double-forked and called
setsid has left the job's process group and is reparented to init, but it still carries its tag in
/proc/<pid>/environ, so `kill_tagged` finds it (psutil reads the environment of processes of the
same user, or of any user as root). A process that rewrites its own environment escapes this; a
cgroup (the Kubernetes fleet's pod) does not have that hole.
"""

import os

import psutil

ENV_JOB = "SENPAI_JOB_LAUNCH"
ENV_RUN = "SENPAI_RUN_TAG"


def tagged(name: str, value: str) -> list[psutil.Process]:
    """Live processes other than this one whose environment has `name`=`value`."""
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
    procs = tagged(name, value)
    _signal(procs, psutil.Process.terminate)
    _, alive = psutil.wait_procs(procs, timeout=grace)
    _signal(alive, psutil.Process.kill)
    psutil.wait_procs(alive, timeout=grace)
    return len(procs)


def _signal(procs: list[psutil.Process], send) -> None:
    for proc in procs:
        try:
            send(proc)
        except psutil.Error:
            pass
