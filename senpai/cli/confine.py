"""Reading and writing the files of a repository that may be hostile, for `senpai init`: never
outside it.

A cloned repository may hold a symlink where init writes: `program.md` -> ~/.bashrc, a dangling
`params.json` -> /etc/cron.d/job, `eval/` -> a folder elsewhere. A write by path follows them. So:

- `inside(root, rel)` checks one repo-relative path before anything is read or written: relative,
  no `..`, and no component below the root (each parent folder, and the file itself) a symlink,
  looked up with lstat; a parent that exists must be a folder, and the resolved path must stay
  under the resolved root. The root itself is the user's choice and may be reached through links.
- `write_inside(root, files, force)` checks every path first (a missing file, or with `force` a
  regular file), so a refusal writes nothing. Then it writes each file through folder descriptors
  opened from the root down with O_NOFOLLOW (a symlink swapped in after the check is still not
  followed), into a new temporary file created with O_EXCL | O_NOFOLLOW, and renames the
  temporaries over their names only once all of them are written: a failed write leaves the
  repository as it was (its temporaries and the folders it created are removed). A rename
  replaces the folder entry, so a hard link to a file outside is unlinked, never written through.
"""

import errno
import os
import secrets
import stat
from pathlib import Path, PurePosixPath

from senpai.errors import ConfigError

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _parts(rel: str) -> tuple[str, ...]:
    path = PurePosixPath(rel)
    if not rel or path.is_absolute() or ".." in path.parts or not path.parts or "\0" in rel:
        raise ConfigError(f"{rel!r}: not a path inside the repository (relative, no ..); senpai init writes only there")
    return path.parts


def inside(root: Path, rel: str) -> Path:
    """`root`/`rel` after checking that it stays inside the repository at `root`: raises ConfigError
    naming the path if `rel` is absolute or has `..`, if any component below `root` is a symlink,
    or if a parent is not a folder. The file itself may be missing (then so may its parents)."""
    base = root.resolve()
    parts, cur = _parts(rel), base
    for i, part in enumerate(parts):
        cur = cur / part
        try:
            mode = os.lstat(cur).st_mode
        except FileNotFoundError:
            break
        if stat.S_ISLNK(mode):
            target = os.readlink(cur)
            raise ConfigError(
                f"{cur}: a symlink (to {target}); senpai init reads and writes only inside {base} and never through a link: "
                "remove it, or put a real file or folder there"
            )
        if i < len(parts) - 1 and not stat.S_ISDIR(mode):
            raise ConfigError(f"{cur}: not a folder, but {rel} must go inside it")
    path = base.joinpath(*parts)
    if not path.resolve().is_relative_to(base):  # no link was met, so this holds; a last guard
        raise ConfigError(f"{path}: resolves outside {base}")
    return path


def write_inside(root: Path, files: dict[str, str], force: bool = False) -> list[Path]:
    """Write `files` (repo-relative path -> UTF-8 text) into the repository at `root`, all or
    nothing; returns the paths written. Raises ConfigError naming each path that `inside` refuses
    or that is not a regular file, then, without `force`, listing the files that already exist;
    nothing is written then. An OSError while writing (a full disk) is a ConfigError naming the
    file, with the repository left as it was."""
    problems, existing = [], []
    for rel in files:
        try:
            path = inside(root, rel)
        except ConfigError as e:
            problems.append(str(e))
            continue
        if os.path.lexists(path):
            if not stat.S_ISREG(os.lstat(path).st_mode):
                problems.append(f"{path}: exists and is not a regular file")
            existing.append(rel)
    if problems:
        raise ConfigError("\n".join(problems))
    if existing and not force:
        raise ConfigError(f"{root}: {', '.join(sorted(existing))} already exist; pass --force to overwrite them")
    return _write(root.resolve(), files, force)


def _write(base: Path, files: dict[str, str], force: bool) -> list[Path]:
    made: list[Path] = []  # folders this call created, parents first
    fds: list[int] = []
    temps: list[tuple[int, str, str, Path]] = []  # (folder fd, temporary name, name, path), each created
    done = False
    try:
        for rel, text in files.items():
            *folders, name = _parts(rel)
            fds.append(fd := _open_folder(base, folders, made))
            tmp = f".{name}.{secrets.token_hex(6)}.senpai-init"
            out = os.open(tmp, _NEW, 0o666, dir_fd=fd)  # the umask applies, as for any new file
            temps.append((fd, tmp, name, base.joinpath(*folders, name)))
            _write_all(out, text.encode())
        for i, (fd, tmp, name, path) in enumerate(temps):
            if not force and _lexists(fd, name):  # created since the check: not ours to replace
                raise ConfigError(f"{path}: appeared while senpai init was writing; nothing was overwritten")
            os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
            temps[i] = (fd, "", name, path)
        done = True
        return [path for *_, path in temps]
    except OSError as e:
        raise ConfigError(f"cannot write {e.filename or base}: {e.strerror}") from None
    finally:
        for fd, tmp, _, _ in temps:
            if tmp:
                os.unlink(tmp, dir_fd=fd)
        for fd in fds:
            os.close(fd)
        for path in reversed(made if not done else []):
            try:
                path.rmdir()  # empty once its temporaries are gone; a link swapped in is not a folder: left
            except OSError:
                pass


def _open_folder(base: Path, folders: list[str], made: list[Path]) -> int:
    """A descriptor of `base`/`folders`, each opened with O_NOFOLLOW from the one above (created if
    missing, and then recorded in `made`). Raises ConfigError on a symlink."""
    fd, path = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), base
    try:
        for folder in folders:
            path = path / folder
            try:
                os.mkdir(folder, 0o777, dir_fd=fd)
                made.append(path)
            except FileExistsError:
                pass
            try:
                child = os.open(folder, _DIR, dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):  # a symlink or a file swapped in after the check
                    raise ConfigError(f"{path}: a symlink or not a folder; senpai init writes only inside {base}") from None
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _write_all(out: int, data: bytes) -> None:
    """Write `data` to descriptor `out`, flush it to disk and close it."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(out, view) :]
        os.fsync(out)
    finally:
        os.close(out)


def _lexists(fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True
