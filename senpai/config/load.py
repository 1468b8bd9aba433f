"""Load a YAML file into a pydantic model, turning every failure into a ConfigError that names
the file, the field and what was expected."""

import os
import stat
from pathlib import Path
from typing import BinaryIO, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from senpai.config import safe_yaml
from senpai.errors import ConfigError

M = TypeVar("M", bound=BaseModel)
MAX_CONFIG_BYTES = 1024**2  # senpai.yaml and the harness config


def open_regular(path: Path, limit: int, follow: bool = False) -> BinaryIO:
    """The regular file at `path` opened for binary reading, if it holds at most `limit` bytes, and
    unless `follow`, without following a symlink at its last component (a checkout may hold a FIFO,
    a device, a huge file or a link to anything where a config is expected; an operator's config
    mounted from a ConfigMap is a symlink). Raises ConfigError naming the file if it is missing, a
    symlink (unless `follow`), not a regular file or over `limit` bytes. The caller closes it."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        what = "a symlink (not followed)" if e.errno == 40 else e.strerror  # ELOOP: O_NOFOLLOW met a symlink
        raise ConfigError(f"{path}: cannot read: {what}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
        os.close(fd)
        raise ConfigError(f"{path}: " + ("not a regular file" if not stat.S_ISREG(info.st_mode) else f"over {limit} bytes"))
    return os.fdopen(fd, "rb")


def read_bounded(path: Path, limit: int, follow: bool = False) -> str:
    """The UTF-8 text of the regular file at `path` (`open_regular`), never more than `limit` bytes
    read even if it grows meanwhile. Raises ConfigError as `open_regular`, and if it is not UTF-8."""
    with open_regular(path, limit, follow) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ConfigError(f"{path}: over {limit} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 ({e.reason} at byte {e.start})") from None


def describe_validation_error(
    source: str, err: ValidationError, data: object = None, renamed: dict[str, str] | None = None
) -> str:
    """Render a pydantic error as `source: field.path: message (got <input>)` lines.

    With the validated `data`, path parts that are not in it (the tags pydantic adds for
    discriminated unions, e.g. `fleet.kubernetes.images`) are left out of the path. `renamed`: the
    deprecated names the file used, by the path they were read as (`{"caps": "limits"}`), so an
    error inside one names what the file says.
    """
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in _user_path(e["loc"], data))  # "": a check across fields names them itself
        for new, old in (renamed or {}).items():
            if loc == new or loc.startswith(new + "."):
                loc = old + loc.removeprefix(new)
        got = e.get("input")
        shown = f" (got {got!r})" if got is not None and not isinstance(got, dict) else ""
        msg = _as_person_writes(e["type"], e["msg"])
        if e["type"] in ("model_type", "dict_type"):  # pydantic names the class ("instance of CapSettings")
            msg = "is empty: give it its fields or remove the line" if got is None else "must be a mapping of its fields"
        if e["type"] == "union_tag_invalid":
            field = e["ctx"]["discriminator"].strip("'_()")  # "'type'" or "_backend()"
            msg = f"unknown {field} {e['ctx']['tag']!r}; expected one of {e['ctx']['expected_tags']}"
        lines.append(f"{source}: {loc + ': ' if loc else ''}{msg}{shown}")
    return "\n".join(lines)


# pydantic's wording -> a field's sentence ("metric.direction: must be 'maximize' or 'minimize' (got 'up')")
_REWORDED = {"missing": "is missing: add it", "extra_forbidden": "is not a field senpai knows: remove it or check its spelling"}


def _as_person_writes(kind: str, msg: str) -> str:
    if kind in _REWORDED:
        return _REWORDED[kind]
    msg = msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return "must be " + msg.removeprefix("Input should be ") if msg.startswith("Input should be ") else msg


def _user_path(loc: tuple, data: object) -> list:
    if data is None:
        return list(loc)
    path, node = [], data
    for part in loc:
        if isinstance(node, dict) and part in node:
            path.append(part)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            path.append(part)
            node = node[part]
        elif isinstance(node, dict) and isinstance(part, str) and part in {str(v) for v in node.values()}:
            continue  # a union tag (the value of the discriminator field), not a field of the file
        elif part == node:
            continue  # a union tag written as a shorthand (`advisor: openhands`)
        else:
            path.append(part)  # a missing field: name it
            node = None
    return path


def load_yaml_model(path: Path | str, model: type[M], follow: bool = True) -> M:
    """Parse the YAML file at `path` into `model`.

    Raises ConfigError (exit 2) if the file cannot be read (`read_bounded`, MAX_CONFIG_BYTES;
    a symlink is followed only if `follow`: the target's senpai.yaml lives in a checkout), or as
    `parse_yaml_model`; the message names the file and each bad field.
    """
    path = Path(path)
    return parse_yaml_model(read_bounded(path, MAX_CONFIG_BYTES, follow), str(path), model)


def parse_yaml_model(text: str, source: str, model: type[M]) -> M:
    """Parse the YAML document `text` (named `source` in errors, e.g. "senpai.yaml at 1a2b3c4d") into
    `model`, through `safe_yaml.load` with MAX_CONFIG_BYTES: no anchors, aliases or explicit tags
    (a config written in a candidate's checkout is hostile: an alias bomb of a few hundred bytes
    expands to megabytes).

    Raises ConfigError if `text` is over MAX_CONFIG_BYTES, is not YAML senpai reads, is not a
    mapping, or fails the model's validation.
    """
    try:
        data = safe_yaml.load(text, MAX_CONFIG_BYTES)
    except yaml.YAMLError as e:
        raise ConfigError(f"{source}: not valid YAML: {e}") from e
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level, got {type(data).__name__}")
    context: dict = {"source": source, "renamed": {}}  # a deprecated key's warning and errors name the file's words
    try:
        return model.model_validate(data, context=context)
    except ValidationError as e:
        raise ConfigError(describe_validation_error(source, e, data, context["renamed"])) from e
