"""What a train step may leave in its artifact directory: safe formats only, never pickle.

The score step loads what the candidate's code wrote, so a format that runs code on load (pickle,
and archives holding one: joblib, `torch.save`) would run the candidate's code inside the trusted
evaluation. `refusal(dir)` checks the directory before scoring: a real directory (not a symlink)
holding regular files only (no symlink, device or FIFO), each named `.skops`, `.safetensors`,
`.onnx` or `.json`, none that is a pickle by content (protocol 2+ magic, or a zip holding a
`.pkl`), a `.json` that parses, an `.onnx` that holds all its tensors' data itself (external data
would make the loader read another file, the holdout say: `senpai.verifier.onnx_refs`), and at most
MAX_BYTES in all. skops files are still loaded with trusted types only: that is the evaluator's job.
`digest(dir)` fingerprints an accepted directory, so an artifact changed after its train step (by a
later train step, or a forged `train.json`) is caught before scoring. `snapshot(dir, dest)` copies
it where no code from a PR can write, so what is checked is what is scored.
"""

import hashlib
import json
import os
import zipfile
from pathlib import Path

from senpai import trees
from senpai.verifier.onnx_refs import external_data

SAFE_SUFFIXES = (".skops", ".safetensors", ".onnx", ".json")
MAX_BYTES = 2 * 1024**3  # all files of one artifact directory, bytes
MAX_FILES = 1000
MAX_JSON_BYTES = 64 * 1024**2  # a larger .json is refused rather than parsed
_ZIP_MAGIC = b"PK\x03\x04"


def _files(directory: Path) -> list[Path]:
    """Every file under `directory` (sorted); raises ValueError on a symlink, or once the walk has
    met more than MAX_FILES entries (files and directories: it stops there, however many remain)."""
    out, seen = [], 0
    for root, dirs, names in os.walk(directory, followlinks=False):
        seen += len(dirs) + len(names)
        if seen > MAX_FILES:
            raise ValueError(f"the artifact directory holds more than {MAX_FILES} files and directories")
        for name in sorted(dirs + names):
            path = Path(root) / name
            if path.is_symlink():
                raise ValueError(f"artifact {path.relative_to(directory)} is a symlink (refused: it may point anywhere)")
            if name in names:
                out.append(path)
        dirs.sort()
    return sorted(out)


def _is_pickle(head: bytes) -> bool:
    return len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5


def _zip_pickles(path: Path) -> list[str]:
    try:
        with zipfile.ZipFile(path) as z:
            return [n for n in z.namelist() if n.endswith((".pkl", ".pickle")) or n.rsplit("/", 1)[-1] == "data.pkl"]
    except (zipfile.BadZipFile, OSError):
        return []


def _file_refusal(path: Path, name: str) -> str | None:
    if not path.is_file():
        return f"artifact {name} is not a regular file"
    if not name.endswith(SAFE_SUFFIXES):
        return f"artifact {name} is not a safe format (allowed: {', '.join(SAFE_SUFFIXES)}; pickle and joblib are refused)"
    with open(path, "rb") as f:
        head = f.read(4)
    if _is_pickle(head):
        return f"artifact {name} is a pickle (it could run code when loaded), whatever its name"
    if head == _ZIP_MAGIC and (inner := _zip_pickles(path)):
        return f"artifact {name} is an archive holding a pickle ({inner[0]}): it could run code when loaded"
    if name.endswith(".json"):
        if path.stat().st_size > MAX_JSON_BYTES:
            return f"artifact {name} is a JSON file over {MAX_JSON_BYTES} bytes"
        try:
            json.loads(path.read_bytes())
        except (ValueError, RecursionError):
            return f"artifact {name} is not valid JSON"
    if name.endswith(".onnx") and (why := external_data(path)):
        return f"artifact {name} {why}"
    return None


def refusal(directory: Path, max_bytes: int = MAX_BYTES) -> str | None:
    """Why the artifact directory must not be scored (naming the file), or None if it may be."""
    if directory.is_symlink() or not directory.is_dir():  # the train step replaced its own directory
        return f"the artifact directory {directory.name} is a symlink or not a directory (refused: it may point anywhere)"
    try:
        files = _files(directory)
    except ValueError as e:
        return str(e)
    if not files:
        return "the train step wrote no artifact (expected a model file in $SENPAI_ARTIFACT_DIR)"
    total = 0
    for path in files:
        name = path.relative_to(directory).as_posix()
        total += path.lstat().st_size
        if total > max_bytes:  # first: it bounds what the file's check reads
            return f"the artifacts are over {max_bytes} bytes in all (reached at {name})"
        if reason := _file_refusal(path, name):
            return reason
    return None


def digest(directory: Path) -> str:
    """sha256 over the relative names and contents of every file under `directory` (hex). Reads
    every byte: call it on a directory `refusal` accepted (at most MAX_FILES, MAX_BYTES)."""
    h = hashlib.sha256()
    for root, dirs, names in os.walk(directory, followlinks=False):
        dirs.sort()
        for name in sorted(names):
            path = Path(root) / name
            h.update(path.relative_to(directory).as_posix().encode() + b"\0")
            if path.is_file() and not path.is_symlink():
                with open(path, "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        h.update(chunk)
            h.update(b"\0")
    return h.hexdigest()


def set_read_only(directory: Path, read_only: bool = True) -> None:
    """Make every file and directory under `directory` read-only (or writable again, owner only)."""
    for root, dirs, names in os.walk(directory, followlinks=False):
        for name in names:
            path = Path(root) / name
            if not path.is_symlink():
                path.chmod(0o444 if read_only else 0o644)
        for name in dirs:
            path = Path(root) / name
            if not path.is_symlink():
                path.chmod(0o555 if read_only else 0o755)
    directory.chmod(0o555 if read_only else 0o755)


def snapshot(directory: Path, dest: Path, max_bytes: int = MAX_BYTES) -> str | None:
    """Copy `directory` to the new folder `dest` (its parent must be senpai's own, one no wall lets
    a command write) by folder handle (`senpai.trees.copy`): folders and regular files only, at
    most MAX_FILES entries, `max_bytes` in all and `trees.MAX_DEPTH` folders deep. Returns why it
    was not copied (a link, a FIFO, too much: a refusal), or None. Raises OSError if `dest` cannot
    be written."""
    why, _ = trees.copy(directory, dest, trees.Limits(entries=MAX_FILES, bytes=max_bytes))
    return None if why is None else f"artifact {why}"
