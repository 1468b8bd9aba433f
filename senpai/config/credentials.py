"""The secrets a senpai process holds: taken out of its environment once, kept in this process's
memory, handed to the processes it starts on a private pipe, never in their environment (design §4).

- A process a person or Kubernetes starts (`senpai wrapper run`, `senpai demo`, a Job's container)
  is given its secrets in its environment. `adopt` moves them here when the CLI starts: the names
  it is told of (the forge token's, the LLM keys', `WANDB_API_KEY`), and every name that looks
  secret (`senpai.config.secret_env.SECRET_ENV`), so no child it starts inherits one.
- A process senpai starts that needs them (the local fleet's supervisor, and the job it runs) is
  given them on the pipe whose read end ENV_FD names (`pipe_to_child`); `adopt` reads it whole and
  closes it.
- Either way the process is made non-dumpable first (prctl PR_SET_DUMPABLE 0): another process of
  the same user can then read neither its /proc/<pid>/environ (which still holds the environment
  it started with) nor its memory. A process started with ENV_FD makes itself non-dumpable as
  `senpai` is imported (`senpai/__init__.py`), before any other module loads.

`get(name)` is how senpai reads a secret: the environment's value, if one was set after `adopt` (a
library's caller, a test), else the held one.
"""

import ctypes
import json
import os
import sys
from collections.abc import Iterable

from senpai.config.secret_env import SECRET_ENV

ENV_FD = "SENPAI_SECRETS_FD"
MAX_BYTES = 60 * 1024  # under a pipe's 64 KiB: written before the child reads, it never blocks
PR_SET_DUMPABLE, PR_GET_DUMPABLE = 4, 3  # linux/prctl.h
_held: dict[str, str] = {}


def set_not_dumpable() -> bool:
    """prctl(PR_SET_DUMPABLE, 0) on Linux, so processes of the same user cannot read this one's
    /proc/<pid>/environ or memory; True if the process is now non-dumpable."""
    if not sys.platform.startswith("linux"):
        return False
    # the process's own symbols hold libc's: `find_library("c")` would run `ldconfig -p`
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    return libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0


def adopt(names: Iterable[str] = ()) -> None:
    """Make this process non-dumpable, read the secrets on the ENV_FD pipe if it has one, and move
    every variable of `names`, and every secret-looking one, from os.environ into memory. Raises
    ValueError if the pipe holds anything but a JSON object of strings (at most MAX_BYTES)."""
    set_not_dumpable()
    if (fd := os.environ.pop(ENV_FD, None)) is not None:
        _held.update(_read_pipe(int(fd)))
    wanted = set(names)
    for name, value in list(os.environ.items()):
        if name in wanted or SECRET_ENV.search(name):  # by name: a proxy URL with a password stays (requests reads it)
            if value:
                _held[name] = value
            del os.environ[name]


def _read_pipe(fd: int) -> dict[str, str]:
    with open(fd, "rb", closefd=True) as f:
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError(f"the secrets pipe holds over {MAX_BYTES} bytes")
    raw = json.loads(data or b"{}")
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise ValueError("the secrets pipe holds no JSON object of strings")
    return raw


def hold(name: str, value: str) -> None:
    """Hold `value` as secret `name` (e.g. a token this process made), for `get` and for children."""
    _held[name] = value


def forget(name: str) -> None:
    """Hold secret `name` no more (a token this process made and revoked)."""
    _held.pop(name, None)


def get(name: str) -> str | None:
    """Secret `name`: os.environ's if it holds one (set after `adopt`, by hand), else the held value;
    None if neither has a non-empty one."""
    return os.environ.get(name) or _held.get(name) or None


def held() -> dict[str, str]:
    """Every secret this process holds, by name (a copy)."""
    return dict(_held)


def pipe_to_child(secrets: dict[str, str]) -> tuple[int, dict[str, str]]:
    """A pipe holding `secrets` for a child: (the read end, to pass with `pass_fds`; the env entry
    naming it). The caller closes the read end once the child is started."""
    data = json.dumps(secrets).encode()
    if len(data) > MAX_BYTES:
        raise ValueError(f"secrets of {len(data)} bytes do not fit the pipe's limit of {MAX_BYTES}")
    read, write = os.pipe()
    os.set_inheritable(read, True)
    with open(write, "wb") as f:  # at most MAX_BYTES: the pipe holds it all before the child reads
        f.write(data)
    return read, {ENV_FD: str(read)}
