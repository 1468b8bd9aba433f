"""The command's own view of the machine, for the wall's launcher (`senpai.fleet.wall`): new mount and
PID namespaces (and a user namespace, to be allowed them, when not root).

What a file rule cannot stop, a view can. Landlock decides what may be opened, read and written; it
does not decide what may be `connect()`ed (a tmux, ssh-agent, D-Bus or systemd socket of the same
user starts a process outside the wall), what may be `chmod`ed, or which processes live on after
the command. So, before the command starts:

- **masks**: an empty tmpfs over every hidden folder (senpai's, the home folder) and over /run;
  a fresh, private, writable tmpfs over /tmp, /var/tmp and /dev/shm; the folders the command may
  use under a mask (its own, the interpreter, `readable`) are put back as they were (`open_tree`
  before the mask, `move_mount` after it). A hidden file is covered by /dev/null;
- **read-only**: every mount is read-only but the `writable` paths and the scratch folders, so
  nothing else can be written, created, chmodded or chowned, whatever the uid;
- **its own processes**: the command runs under a small init, PID 1 of a new PID namespace, with
  a /proc of that namespace (it sees no other process) and a private /dev/pts. The init reaps
  orphans and, when the command ends, ends too: the kernel then kills whatever the command left
  behind, however it forked, setsid or renamed itself.

The init passes the command's wait status to the launcher, which ends the same way (exit code, or
the same signal), so callers see the command's own outcome. Everything here needs Linux 5.12+ and
the right to create the namespaces (root, or unprivileged user namespaces); `senpai.job.walls`
asks for it only where a trial run worked (`Wall.isolate`).

Standard library only: the launcher imports this file by path (see `senpai.fleet.wall`).
"""

import ctypes
import os
import resource
import signal
import sys
from collections.abc import Callable, Sequence

# linux/mount.h, fcntl.h, sched.h
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 4096, 16384, 1 << 18
OPEN_TREE_CLONE, AT_RECURSIVE, AT_FDCWD, MOVE_MOUNT_F_EMPTY_PATH, MOUNT_ATTR_RDONLY = 1, 0x8000, -100, 0x4, 0x1
_SYS_OPEN_TREE, _SYS_MOVE_MOUNT, _SYS_MOUNT_SETATTR = 428, 429, 442  # the same on every architecture
EMPTY = ("/run",)  # every socket of every daemon and user session: systemd, D-Bus, tmux, docker...
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


class ViewError(Exception):
    """The view could not be built as asked."""


class _MountAttr(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in ("attr_set", "attr_clr", "propagation", "userns_fd")]


_libc = ctypes.CDLL(None, use_errno=True)
_FDCWD = ctypes.c_int(AT_FDCWD)


def _check(result: int, what: str) -> int:
    if result < 0:
        raise ViewError(f"{what}: {os.strerror(ctypes.get_errno())}")
    return result


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    _check(_libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {target}")


def _setattr(path: str, set_: int, clear: int, recursive: bool = True) -> None:
    attr, flags = _MountAttr(set_, clear, 0, 0), ctypes.c_uint(AT_RECURSIVE if recursive else 0)
    size = ctypes.c_size_t(ctypes.sizeof(attr))
    _check(_libc.syscall(_SYS_MOUNT_SETATTR, _FDCWD, path.encode(), flags, ctypes.byref(attr), size), f"mount_setattr {path}")


def _clone_tree(path: str) -> int:
    """A detached copy of the mounts at `path` and below (open_tree OPEN_TREE_CLONE): a file descriptor."""
    flags = ctypes.c_uint(OPEN_TREE_CLONE | AT_RECURSIVE | os.O_CLOEXEC)
    return _check(_libc.syscall(_SYS_OPEN_TREE, _FDCWD, path.encode(), flags), f"open_tree {path}")


def _attach(tree: int, path: str) -> None:
    """Mount the detached `tree` at `path` (move_mount)."""
    flags = ctypes.c_uint(MOVE_MOUNT_F_EMPTY_PATH)
    _check(_libc.syscall(_SYS_MOVE_MOUNT, ctypes.c_int(tree), b"", _FDCWD, path.encode(), flags), f"move_mount {path}")


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _outermost(paths: Sequence[str]) -> list[str]:
    out: list[str] = []
    for p in sorted(set(paths), key=len):
        if not any(_inside(p, o) for o in out):
            out.append(p)
    return out


def _keep_dns() -> list[str]:
    """The folder /etc/resolv.conf points into under /run (systemd-resolved, resolvconf): kept, for name lookups."""
    target = os.path.realpath("/etc/resolv.conf")
    return [os.path.dirname(target)] if _inside(target, "/run") and os.path.exists(target) else []


def masks(scratch: Sequence[str], hidden: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the scratch folders, the folders and files covered empty) for `hidden`, outermost only, as
    they exist on this machine, links resolved."""
    real = lambda ps: [os.path.realpath(p) for p in ps if os.path.lexists(p)]  # noqa: E731
    fresh = real(scratch)
    empty = [p for p in _outermost(real([*EMPTY, *hidden])) if not any(_inside(p, s) for s in fresh)]
    return fresh, empty


def _unshare() -> None:
    """New mount and PID namespaces; not as root, in a new user namespace that maps our own ids."""
    uid, gid = os.getuid(), os.getgid()
    if uid == 0:
        os.unshare(os.CLONE_NEWNS | os.CLONE_NEWPID)
        return
    os.unshare(os.CLONE_NEWUSER | os.CLONE_NEWNS | os.CLONE_NEWPID)
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def build(writable: Sequence[str], readable: Sequence[str], hidden: Sequence[str], scratch: Sequence[str]) -> None:
    """Enter new namespaces and build the view (see the module docstring) in this process: `scratch`
    fresh and writable. Paths must be absolute. Raises ViewError or OSError."""
    _unshare()
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    scratch, empty = masks(scratch, hidden)
    real = {p: os.path.realpath(p) for p in [*writable, *readable] if os.path.lexists(p)}
    writable = [real[p] for p in writable if p in real]
    keeps = _outermost([*real.values(), *_keep_dns()])
    covered = [m for m in [*scratch, *empty] if not any(_inside(m, k) for k in keeps)]  # a kept one stays
    old = os.umask(0o022)
    try:
        for mask in covered:
            _cover(mask, [k for k in keeps if _inside(k, mask)], mode="1777" if mask in scratch else "0755")
        for given, path in real.items():  # a path given through a link the cover took away: the link again
            if given != path and any(_inside(given, m) for m in covered) and not os.path.lexists(given):
                if not any(_inside(os.path.dirname(given), k) for k in keeps):  # never in a kept folder
                    os.makedirs(os.path.dirname(given), exist_ok=True)
                    os.symlink(path, given)
        for path in writable:  # each its own mount, so it can stay writable below
            if os.path.lexists(path):
                _mount(path, path, None, MS_BIND | MS_REC)
        _setattr("/", MOUNT_ATTR_RDONLY, 0)
        for path in writable:
            if os.path.lexists(path):
                _setattr(path, 0, MOUNT_ATTR_RDONLY)
        for path in scratch:  # not below: what is kept under /tmp (a holdout) stays read-only
            _setattr(path, 0, MOUNT_ATTR_RDONLY, recursive=False)
    finally:
        os.umask(old)


def _cover(mask: str, keeps: Sequence[str], mode: str) -> None:
    """Cover `mask` (a folder: a new tmpfs; a file: /dev/null), then put `keeps` back where they were."""
    trees = [(k, _clone_tree(k)) for k in keeps]
    try:
        if os.path.isdir(mask) and not os.path.islink(mask):
            _mount("tmpfs", mask, "tmpfs", MS_NOSUID | MS_NODEV, f"mode={mode}")
        else:
            _mount("/dev/null", mask, None, MS_BIND)
        for path, tree in trees:
            if os.path.isdir(f"/proc/self/fd/{tree}"):
                os.makedirs(path, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o644))
            _attach(tree, path)
    finally:
        for _, tree in trees:
            os.close(tree)


def _own_proc_and_pts() -> None:
    """In the new PID namespace: its own /proc, and a /dev/pts of its own (best effort: a container
    may refuse a new proc; the old one then stays, behind Landlock's ptrace rule)."""
    try:
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except ViewError:
        pass
    try:
        _mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620")
        _mount("/dev/pts/ptmx", "/dev/ptmx", None, MS_BIND)
    except ViewError:
        _mount("tmpfs", "/dev/pts", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755")  # no other terminal, then


def _forward(to: int) -> None:
    for sig in FORWARDED:
        signal.signal(sig, lambda s, _frame: _kill(to, s))


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _init(start: Callable[[], None], report: int) -> int:
    """PID 1 of the new namespace: start the command, reap every orphan, and when the command ends
    write its wait status to `report` and end (the kernel then kills the rest of the namespace)."""
    _own_proc_and_pts()
    command = os.fork()
    if command == 0:
        os.close(report)
        start()  # does not return
    _forward(command)
    while True:
        pid, status = os.wait()
        if pid == command:
            os.write(report, str(status).encode())
            return 0


def run(
    writable: Sequence[str], readable: Sequence[str], hidden: Sequence[str], scratch: Sequence[str], start: Callable[[], None]
) -> int:
    """Build the view, run `start` (which puts the process behind the rest of the wall and execs the
    command; it must not return) under an init in it, and return the exit code to end with: the
    command's, or after re-raising the signal that killed it. Raises ViewError or OSError before
    anything runs."""
    cwd = os.getcwd()
    build(writable, readable, hidden, scratch)
    os.chdir(cwd)  # through the view: the old cwd would still reach the folders the view covers
    read, write = os.pipe()
    init = os.fork()
    if init == 0:
        os.close(read)
        try:
            code = _init(start, write)
        except BaseException as e:  # noqa: BLE001 - PID 1 must end, and say why
            print(f"[senpai-wall] the command's init failed: {e}", file=sys.stderr, flush=True)
            code = 126
        os._exit(code)
    os.close(write)
    _forward(init)
    _, status = os.waitpid(init, 0)
    reported = os.read(read, 32)
    status = int(reported) if reported else status
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the command's death, not a core of ours
        if sig in FORWARDED:
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        return 128 + sig
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 126
