"""The wall's launcher (senpai.fleet.wall, senpai.fleet.wall_ns) against what a PR's code tried in
the red team of issue 24: a socket of the same user (tmux, ssh-agent, systemd), a terminal of the
same user, a chmod, a process left behind that hops pids, a link or a hard link in the folder the
launcher hands over. Each runs as the user senpai runs as, and, when the tests run as root, also as
a non-root user (a user namespace as uid 1000, `as_non_root`).
"""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from hostile_target import as_non_root

from senpai.fleet.wall import Wall, landlock_abi
from senpai.job.walls import interpreter_paths, isolation

pytestmark = pytest.mark.skipif(not isolation(), reason="this machine makes no mount or PID namespace (walls.isolation)")
USERS = ["senpai's", "non-root"] if os.geteuid() == 0 else ["senpai's"]


def launch(tmp: Path, command: str, user: str, *, hidden=(), readable=(), uid=None, landlock=True, timeout=60):
    """`command` (sh) behind a wall that may write `tmp/job` alone, as `user`; the completed process."""
    job = tmp / "job"
    job.mkdir(exist_ok=True)
    wall = Wall(
        writable=(str(job),), hidden=tuple(map(str, hidden)), readable=(*interpreter_paths(), *map(str, readable)),
        uid=uid, gid=uid, landlock=landlock and bool(landlock_abi()), isolate=True,
    )  # fmt: skip
    argv = wall.argv(["/bin/sh", "-c", command])
    argv = as_non_root(argv) if user == "non-root" else argv
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    return subprocess.run(argv, cwd=job, env=env, capture_output=True, text=True, timeout=timeout)


CONNECT = """python -c '
import socket, sys
for path in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path); print("connected", path)
    except OSError as e:
        print("refused", path, e.errno)
' {paths}"""


@pytest.mark.parametrize("user", USERS)
def test_a_socket_of_the_same_user_cannot_be_reached(tmp_path, user):
    """tmux, ssh-agent, D-Bus and systemd listen on sockets under /tmp, /run and HOME; Landlock does
    not cover connect(). In the view those folders are empty."""
    listeners, paths = [], [tmp_path / "tmux-0" / "default", tmp_path / "home" / ".ssh-agent.sock"]
    if os.geteuid() == 0:
        paths.append(Path("/run") / f"senpai-test-{os.getpid()}.sock")
    try:
        for path in paths:
            path.parent.mkdir(exist_ok=True)
            s = socket.socket(socket.AF_UNIX)
            s.bind(str(path))
            s.listen()
            s.setblocking(False)
            listeners.append(s)
        proc = launch(tmp_path, CONNECT.format(paths=" ".join(map(str, paths))), user, hidden=[tmp_path / "home"])
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.count("refused") == len(paths) and "connected" not in proc.stdout, proc.stdout
        for s in listeners:
            with pytest.raises(BlockingIOError):
                s.accept()  # nobody came
    finally:
        for s in listeners:
            s.close()
        Path(f"/run/senpai-test-{os.getpid()}.sock").unlink(missing_ok=True)


@pytest.mark.parametrize("user", USERS)
def test_what_it_may_read_it_cannot_change_and_the_rest_is_not_there(tmp_path, user):
    """Landlock has no chmod: a read-only view does. A hidden folder is an empty one, Landlock or not."""
    data, secret = tmp_path / "data", tmp_path / "secret"
    data.mkdir()
    secret.mkdir()
    (data / "holdout.csv").write_text("1,2\n")
    (secret / "token").write_text("ghp_x\n")
    script = (
        "chmod 777 ../data/holdout.csv; echo x >> ../data/holdout.csv; cat ../secret/token; "
        "echo holdout: $(cat ../data/holdout.csv); echo run: $(ls -A /run); echo ok > mine && cat mine"
    )
    dns = os.path.realpath("/etc/resolv.conf")  # the one folder of /run kept: name lookups
    kept = dns.split("/")[2] if dns.startswith("/run/") else ""
    for landlock in (True, False):
        proc = launch(tmp_path, script, user, hidden=[secret], readable=[data], landlock=landlock)
        assert "Read-only file system" in proc.stderr and "ghp_x" not in proc.stdout, (proc.stdout, proc.stderr)
        assert proc.stdout.splitlines() == ["holdout: 1,2", f"run: {kept}".strip(), "ok"], proc.stdout
        assert oct((data / "holdout.csv").stat().st_mode)[-3:] == "644" and (data / "holdout.csv").read_text() == "1,2\n"


HOPPER = """
import os, sys, time
if os.fork(): sys.exit(0)
os.setsid()
if os.fork(): sys.exit(0)
while True:  # a new pid every few milliseconds: a kill by pid list always misses it
    if os.fork():
        os._exit(0)
    with open(sys.argv[1], "w") as f:
        f.write(str(time.time()))
    time.sleep(0.005)
"""


@pytest.mark.parametrize("user", USERS)
def test_nothing_it_started_outlives_it_however_it_forks(tmp_path, user):
    beat = tmp_path / "job" / "beat"
    (tmp_path / "job").mkdir()
    (tmp_path / "job" / "hopper.py").write_text(HOPPER)
    before = zombies()  # other tests' leftovers are not this launch's
    proc = launch(tmp_path, f"python hopper.py {beat}; sleep 1", user)
    assert proc.returncode == 0, proc.stderr
    assert beat.exists()  # it ran, and hopped
    last = beat.read_text()
    time.sleep(0.5)
    assert beat.read_text() == last  # and is gone
    assert not [p for p in psutil.process_iter(["cmdline"]) if str(beat) in " ".join(p.info["cmdline"] or [])]
    assert zombies() <= before


def zombies() -> set[int]:
    return {c.pid for c in psutil.Process().children() if c.status() == psutil.STATUS_ZOMBIE}


@pytest.mark.parametrize("user", USERS)
def test_it_sees_its_own_processes_and_terminals_only(tmp_path, user):
    proc = launch(tmp_path, "ls /proc | grep -c '^[0-9]*$'; ls /dev/pts", user)
    count, *pts = proc.stdout.split()
    assert int(count) <= 4 and pts == ["ptmx"], proc.stdout  # init, sh, ls, grep
    others = [p.pid for p in psutil.process_iter()]
    assert len(others) > 10  # the machine has more; the view shows none of them


@pytest.mark.parametrize("user", USERS)
def test_the_launcher_ends_as_the_command_did(tmp_path, user):
    assert launch(tmp_path, "exit 7", user).returncode == 7
    assert launch(tmp_path, "kill -9 $$", user).returncode == -9
    assert launch(tmp_path, "true", user).returncode == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="the hand-over to another user happens as root only")
def test_the_hand_over_changes_nothing_outside_the_folder(tmp_path):
    """As root the launcher gives the command's folder to the command's user: not a file hard-linked
    into it from outside, not what a link in it points at."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "sudoers").write_text("root ALL\n")
    job = tmp_path / "job"
    job.mkdir()
    os.link(outside / "sudoers", job / "linked")
    (job / "dir-link").symlink_to(outside)
    (job / "own").write_text("x")
    proc = launch(tmp_path, "id -u", "senpai's", uid=65534)
    assert proc.stdout.strip() == "65534", proc.stderr
    assert (outside / "sudoers").stat().st_uid == 0 and outside.stat().st_uid == 0
    assert (job / "own").stat().st_uid == 65534


@pytest.mark.parametrize("user", USERS)
def test_a_folder_given_through_a_link_is_there_by_that_path_too(tmp_path, user):
    """The view puts back the real folders; a path given through a link under a covered folder (a
    Kubernetes pod's mount seen through the stand-in's links, a TMPDIR behind one) still leads there."""
    real = tmp_path / "volumes" / "side"
    real.mkdir(parents=True)
    (tmp_path / "view").mkdir()
    (tmp_path / "view" / "work").symlink_to(real)
    given = tmp_path / "view" / "work"
    wall = Wall(writable=(str(given),), readable=tuple(interpreter_paths()), landlock=bool(landlock_abi()), isolate=True)
    argv = wall.argv(["/bin/sh", "-c", f"echo hi > {given}/f && cat {given}/f"])
    proc = subprocess.run(as_non_root(argv) if user == "non-root" else argv, cwd=real, capture_output=True, text=True)
    assert proc.stdout == "hi\n", proc.stderr
    assert (real / "f").read_text() == "hi\n"
