"""The wall around candidate code: what a command from a PR can reach on the machine it runs on.

Every process that runs code from a PR (a train command, a verifier step, the evaluator, git in a
checkout that code touched, an agent's shell) starts through this module's launcher,

    python -I .../senpai/fleet/wall.py '<Wall as JSON>' -- ARGV...

which applies, in the new process and before it execs ARGV:

1. **no_new_privs** (prctl PR_SET_NO_NEW_PRIVS): no setuid binary gives back what is dropped here.
2. **Landlock** (Linux 5.13+; ABI 1 to 7 handled), where the kernel has it:
   - writes only beneath `writable` (the command's checkout, its own HOME, TMPDIR, W&B dir...);
   - reads everywhere except beneath `hidden` (senpai's state, the fleet's jobs, the sealed holdout,
     the tracker's runs, the forge's data, the user's HOME), except `readable` paths under those
     (the interpreter); of /dev only the null, zero, full, random, urandom, tty and pty devices,
     /dev/shm and the GPU devices;
   - and Landlock's own ptrace rule: no process outside the wall can be traced or have its
     /proc/<pid>/environ, mem or fd read, whatever its uid or dumpable flag. From ABI 6 it cannot
     signal such a process or reach its abstract unix sockets either.
3. **As root**: the command runs as `uid`:`gid` when given (its writable paths are handed to it
   first); otherwise it stays uid 0 with every capability dropped, the bounding set too, and root's
   exec-time capabilities locked off (securebits), so it keeps only what Landlock leaves it.
4. **Its own view** (`isolate`, `senpai.fleet.wall_ns`): new mount and PID namespaces in which
   senpai's folders, the home folder and /run are empty, /tmp and /dev/shm fresh, everything but
   `writable` read-only, and the command the only process tree, killed whole when it ends. This is
   what stops a socket of the same user (tmux, ssh-agent, systemd), a chmod, or a process left
   behind, none of which Landlock covers.

Anything that cannot be applied as asked exits 126 with one `[senpai-wall]` line on stderr: the
command never runs with less of a wall than its caller asked for. Callers check `landlock_abi()`
first and ask for Landlock only where the kernel has it (`Wall.landlock`).

The launcher imports the standard library alone, in isolated mode (it starts in the command's own
folder, and before every step a verifier runs), so the Wall is a plain class read from JSON, not a
pydantic model (nor a dataclass: `dataclasses` imports `inspect`, which doubled the launcher's
start-up), and `wall_ns` is loaded by its path beside this file.
"""

import ctypes
import importlib.util
import json
import os
import stat
import sys

# linux/landlock.h
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # the same on every architecture
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # what a rule on a non-directory may grant
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6
READ = EXECUTE | READ_FILE | READ_DIR
# linux/prctl.h, linux/securebits.h, linux/capability.h
_PR_SET_NO_NEW_PRIVS, _PR_CAPBSET_DROP, _PR_SET_SECUREBITS = 38, 24, 28
_SECURE_LOCKED_ROOT = 0b111111  # NOROOT, NO_SETUID_FIXUP, KEEP_CAPS_LOCKED: root's exec grants nothing
_CAPABILITY_VERSION_3 = 0x20080522
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx")
DEVICE_DIRS = ("/dev/shm", "/dev/pts", "/dev/dri")
SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")  # in its own view: fresh, private and writable (programs expect to write there)
FAILED = 126  # what the launcher exits with when it cannot build the wall (a shell's "cannot execute")


class Wall:
    """What a command may reach. Paths are made absolute and resolved when the wall is built.

    writable: directories (or files) it may create, change and remove beneath; it reads them too.
    hidden: directories it may not read (nor write, unless beneath `writable`).
    readable: paths beneath `hidden` it may read and execute all the same (an interpreter there).
    uid, gid: as root, run as this user and group (None: stay uid 0 without capabilities).
    landlock: apply Landlock (exit 126 if the kernel cannot); False where `landlock_abi()` is 0.
    isolate: run it in a view of its own (`wall_ns`; exit 126 if the machine cannot make one).

    A frozen value (equal and hashed by its fields; setting one raises AttributeError).
    """

    FIELDS = ("writable", "hidden", "readable", "uid", "gid", "landlock", "isolate")
    writable: tuple[str, ...]
    hidden: tuple[str, ...]
    readable: tuple[str, ...]
    uid: int | None
    gid: int | None
    landlock: bool
    isolate: bool

    def __init__(
        self,
        writable: tuple[str, ...] = (),
        hidden: tuple[str, ...] = (),
        readable: tuple[str, ...] = (),
        uid: int | None = None,
        gid: int | None = None,
        landlock: bool = True,
        isolate: bool = False,
    ) -> None:
        values = (writable, hidden, readable, uid, gid, landlock, isolate)
        self.__dict__.update(zip(self.FIELDS, values, strict=True))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a Wall is frozen: cannot set {name}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"a Wall is frozen: cannot delete {name}")

    def _values(self) -> tuple:
        return tuple(self.__dict__[k] for k in self.FIELDS)

    def __eq__(self, other: object) -> bool:
        return self._values() == other._values() if isinstance(other, Wall) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return "Wall(" + ", ".join(f"{k}={v!r}" for k, v in zip(self.FIELDS, self._values(), strict=True)) + ")"

    def to_json(self) -> str:
        """This wall as the JSON `from_json` reads."""
        return json.dumps({k: list(v) if isinstance(v, tuple) else v for k, v in zip(self.FIELDS, self._values(), strict=True)})

    def argv(self, command: list[str]) -> list[str]:
        """`command` behind this wall: the launcher's argv. The launcher is this file run by the
        interpreter running senpai in isolated mode (`-I`): it starts where the command runs, in a
        folder of the command's, so neither that folder nor PYTHON* variables may reach its imports
        (a `json.py` there would run before the wall stands). It needs only the standard library, so
        `-S` skips `site` too: no `.pth` file of the environment runs before the wall stands."""
        return [sys.executable, "-I", "-S", os.path.abspath(__file__), self.to_json(), "--", *command]

    @classmethod
    def from_json(cls, text: str) -> "Wall":
        """The Wall of `text` (what `argv` wrote). Raises ValueError on anything else."""
        raw = json.loads(text)
        if not isinstance(raw, dict) or set(raw) - {"writable", "hidden", "readable", "uid", "gid", "landlock", "isolate"}:
            raise ValueError("not a wall")
        lists = {k: raw.get(k, []) for k in ("writable", "hidden", "readable")}
        if not all(isinstance(ps, list) and all(isinstance(p, str) and p.startswith("/") for p in ps) for ps in lists.values()):
            raise ValueError("wall paths must be lists of absolute paths")
        ids = {k: raw.get(k) for k in ("uid", "gid")}
        # bool is an int to Python: `"uid": true` must not become uid 1
        if not all(v is None or (type(v) is int and v >= 0) for v in ids.values()):
            raise ValueError("uid and gid are non-negative integers")
        flags = {"landlock": raw.get("landlock", True), "isolate": raw.get("isolate", False)}
        if not all(type(v) is bool for v in flags.values()):
            raise ValueError("landlock and isolate are true or false")
        return cls(**{k: tuple(ps) for k, ps in lists.items()}, **ids, **flags)


class WallError(Exception):
    """The wall could not be built as asked."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def landlock_abi() -> int:
    """The Landlock ABI version this kernel offers (1..); 0 if it has none (not Linux, too old, not
    enabled at boot, or a seccomp filter refuses the syscall)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        version = _libc().syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(int(version), 0)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def visible_roots(root: str, hidden: list[str]) -> list[str]:
    """The largest paths under `root` that lie under no path of `hidden` and hold none: `root` itself
    if no hidden path is in it, else (recursively) its entries, symlinks skipped (Landlock checks
    the object a link resolves to, under that object's own parents)."""
    if any(_inside(root, h) for h in hidden):
        return []
    if not any(_inside(h, root) for h in hidden):
        return [root]
    out: list[str] = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    for entry in entries:
        if not entry.is_symlink():
            out += visible_roots(entry.path, hidden)
    return out


def rules(wall: Wall) -> list[tuple[str, int]]:
    """(path, access) pairs of `wall`'s Landlock ruleset, before masking to the kernel's ABI: READ on
    what is visible (`visible_roots` of / without `hidden` and /dev), READ on `readable`, everything
    on `writable`, read and write on the devices. Raises WallError if a hidden path lies beneath a
    writable or a readable one (Landlock's rules only add: it would not be hidden)."""
    scratch = _real(SCRATCH) if wall.isolate else []
    hidden = [h for h in _real(wall.hidden) if not any(_inside(h, s) for s in scratch)]  # not in its view at all
    writable = [*_real(wall.writable), *scratch]
    readable = _real(wall.readable)
    for h in hidden:
        if any(_inside(h, w) for w in writable) or any(_inside(h, r) for r in readable):
            raise WallError(f"hidden path {h} lies beneath a writable or readable one")
    out = [(p, READ) for p in visible_roots("/", [*hidden, "/dev"])]
    out += [(p, READ) for p in readable]
    out += [(p, READ | WRITE_FILE | TRUNCATE | IOCTL_DEV) for p in DEVICES]
    out += [(p, -1) for p in DEVICE_DIRS]
    out += [(f"/dev/{e}", -1) for e in _listdir("/dev") if e.startswith("nvidia")]
    return out + [(p, -1) for p in writable]


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _landlock(wall: Wall, abi: int) -> None:
    libc = _libc()
    handled = _FS_BY_ABI.get(abi, _FS_BY_ABI[5])
    attr = _RulesetAttr(handled, 0, (_SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL) if abi >= 6 else 0)
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else 8  # older kernels refuse fields they do not know
    ruleset = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise WallError(f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    try:
        for path, access in rules(wall):
            _add_rule(libc, ruleset, path, handled if access == -1 else access & handled)
        if libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise WallError(f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(ruleset)


def _add_rule(libc: ctypes.CDLL, ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # not there: nothing to allow
    try:
        if not os.path.isdir(f"/proc/self/fd/{fd}"):
            access &= _FILE_RIGHTS
        if not access:
            return
        attr = _PathBeneath(access, fd)
        if libc.syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(attr), 0) != 0:
            raise WallError(f"landlock_add_rule {path}: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(fd)


def _hand_over(paths: tuple[str, ...], uid: int, gid: int) -> None:
    """chown every writable path (recursively) to the user the command runs as. Walked by folder
    handle, never following a link, so a link swapped in on the way cannot lead it outside; a file
    with other hard links (which may live outside) stays as it is."""
    for top in paths:
        if not os.path.lexists(top):
            continue
        os.chown(top, uid, gid, follow_symlinks=False)
        if not os.path.isdir(top) or os.path.islink(top):
            continue
        for _, dirs, files, fd in os.fwalk(top, follow_symlinks=False):
            for name in [*dirs, *files]:
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    if stat.S_ISDIR(st.st_mode) or st.st_nlink == 1:
                        os.chown(name, uid, gid, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue


def _drop_root(wall: Wall, libc: ctypes.CDLL) -> None:
    """As root: become `wall.uid` (groups none), or stay uid 0 with no capability at all."""
    if wall.uid is not None:
        gid = wall.gid if wall.gid is not None else wall.uid
        _hand_over(wall.writable, wall.uid, gid)
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(wall.uid, wall.uid, wall.uid)
        return
    last = int(open("/proc/sys/kernel/cap_last_cap").read())
    for cap in range(last + 1):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise WallError(f"PR_CAPBSET_DROP {cap}: {os.strerror(ctypes.get_errno())}")
    if libc.prctl(_PR_SET_SECUREBITS, _SECURE_LOCKED_ROOT, 0, 0, 0) != 0:
        raise WallError(f"PR_SET_SECUREBITS: {os.strerror(ctypes.get_errno())}")
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable x 2: all zero
    if libc.capset(header, data) != 0:
        raise WallError(f"capset: {os.strerror(ctypes.get_errno())}")


def enter(wall: Wall) -> None:
    """Put this process behind `wall` (see the module docstring). Raises WallError or OSError."""
    libc = _libc()
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise WallError(f"PR_SET_NO_NEW_PRIVS: {os.strerror(ctypes.get_errno())}")
    if wall.landlock:
        if not (abi := landlock_abi()):
            raise WallError("the kernel offers no Landlock")
        _landlock(wall, abi)
    if os.geteuid() == 0:
        _drop_root(wall, libc)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 3 or args[1] != "--":
        print("usage: python -I -S senpai/fleet/wall.py '<wall json>' -- ARGV...", file=sys.stderr)
        return 2
    command = args[2:]

    def fail(e: Exception) -> int:
        print(f"[senpai-wall] cannot run {command[0]!r} behind the wall: {e}", file=sys.stderr, flush=True)
        return FAILED

    try:
        wall = Wall.from_json(args[0])
    except ValueError as e:
        return fail(e)

    def start() -> None:
        try:
            enter(wall)
            os.execvp(command[0], command)
        except (WallError, OSError, ValueError) as e:
            os._exit(fail(e))

    if not wall.isolate:
        start()
    view = _wall_ns()
    try:
        given = [[os.path.abspath(p) for p in paths] for paths in (wall.writable, wall.readable)]
        return view.run(*given, _real(wall.hidden), _real(SCRATCH), start)
    except (view.ViewError, OSError) as e:
        return fail(e)


def _real(paths: tuple[str, ...]) -> list[str]:
    return [os.path.realpath(p) for p in paths if os.path.lexists(p)]


def _wall_ns():  # noqa: ANN202 - a module loaded by path
    """`senpai.fleet.wall_ns`, loaded by its path: the launcher runs as a script, with no package."""
    spec = importlib.util.spec_from_file_location(
        "senpai_wall_ns", os.path.join(os.path.dirname(os.path.abspath(__file__)), "wall_ns.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    sys.exit(main())
