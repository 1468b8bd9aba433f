"""`senpai init` run again on a repository it scaffolded before: idempotent, and never silent about
a file the user changed.

- `previous(root)` reads the answers of the `senpai.yaml` there (the train command, the metric and
  its direction, the params file, the holdout quantity), so a re-run, after a failed check or a
  fixed script, asks nothing it was told before. A flag still wins.
  `holdout.python` is read as an answer too: one the user added by hand stays.
- `plan(...)` merges each file init would write with what is there, three ways: what init wrote
  last time (the earlier answers rendered again), the user's file, and init's new text. A missing
  file, or one still exactly as init wrote it, is written; one that only the user changed is kept
  (init would write what it wrote before: the re-run after a failed check keeps every fix); one
  both changed, in lines apart, is merged line by line (the user's edits kept, the diff shown; a
  senpai.yaml only if the result loads). The rest (edits in the lines init changes, or no earlier
  answers to tell what init wrote) is refused without `--force`; with `--force` it is shown as a
  unified diff and replaced only once confirmed, with the senpai.yaml fields of the user's it would
  drop named (`--yes` confirms, except such a senpai.yaml, which it keeps).
"""

import difflib
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import yaml
from pydantic import ValidationError

from senpai.cli.confine import inside
from senpai.cli.quantities import QUANTITIES
from senpai.config import safe_yaml
from senpai.config.load import MAX_CONFIG_BYTES, read_bounded
from senpai.config.target import CONFIG_FILE, TargetConfig
from senpai.errors import ConfigError

UNREADABLE = "\0"  # a regular file whose text cannot be shown (over the limit, not UTF-8): never replaced unasked


def _existing(root: Path, rel: str, limit: int = MAX_CONFIG_BYTES) -> str | None:
    """The text of repo-relative `rel` if it is a regular file inside the repository (no link on the
    way; UNREADABLE if it cannot be read as text), else None (missing, or something `write_inside`
    refuses with its own message)."""
    try:
        path = inside(root, rel)
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
    except (ConfigError, OSError):
        return None
    try:
        return read_bounded(path, limit)
    except ConfigError:
        return UNREADABLE


def previous(root: Path) -> dict[str, str]:
    """The answers of the `senpai.yaml` in `root` (keys of `scaffold.Answers`; only those it holds
    as strings), {} if there is none or it is not a YAML mapping."""
    text = _existing(root, CONFIG_FILE)
    try:
        data = safe_yaml.load(text) if text and text != UNREADABLE else None
    except yaml.YAMLError:  # a hand-broken file: init asks again, and refuses to overwrite it without --force
        return {}
    if not isinstance(data, dict):
        return {}

    def get(*path: str) -> str | None:
        node = data
        for p in path:
            node = node.get(p) if isinstance(node, dict) else None
        return node if isinstance(node, str) and node else None

    quantity = (get("holdout", "metric") or "").removeprefix("holdout_")
    found = {
        "train_cmd": get("train"),
        "metric": get("metric", "name"),
        "direction": get("metric", "direction") if get("metric", "direction") in ("maximize", "minimize") else None,
        "params_file": get("params", "file"),
        "quantity": quantity if quantity in QUANTITIES else None,
        "python": get("holdout", "python"),
    }
    return {k: v for k, v in found.items() if v}


def plan(
    root: Path, files: dict[str, str], before: dict[str, str], force: bool, confirm: Callable[[str, list[str]], bool]
) -> tuple[dict[str, str], dict[str, str]]:
    """(the files to write: path -> text, what init says of each of `files`: path -> a line) for
    `files` (path -> the text init would write now); `before` is what init wrote last time (same
    shape, {} if unknown). A missing file, or one still as init wrote it, is written; one whose only
    changes are the user's is kept; one both changed is merged (`merge3`) and its diff shown. Raises
    ConfigError, without `force`, naming every file init cannot merge. With `force`, each such file
    is shown as a diff and written only if `confirm(rel, lost)`, `lost` naming the senpai.yaml
    fields of the user's that the replacement drops or changes."""
    write, said, differ = {}, {}, []
    for rel, text in files.items():
        old, base, path = _existing(root, rel), before.get(rel), root / rel
        merged = _merged(rel, base, old, text) if old not in (None, UNREADABLE) and base is not None else None
        if old == text:
            said[rel] = f"kept {path} as it is"
        elif old is None or old == base:  # new, or still init's: `write_inside` refuses a link or odd file by name
            write[rel], said[rel] = text, f"wrote {path}"
        elif text == base:
            said[rel] = f"kept {path} with your edits (init would write what it wrote before)"
        elif merged is not None:
            _show(rel, old, merged, f"{rel} has your edits; init merged its changes in, keeping yours:", "merged")
            write[rel], said[rel] = merged, f"wrote {path}: your edits kept, init's changes merged in"
        elif not force:
            differ.append(rel)
        elif _confirmed(rel, old, text, lost := _lost(rel, base, old, text), confirm):
            write[rel], said[rel] = text, f"wrote {path}"
        else:
            lost_said = f": replacing it would drop or change your {', '.join(lost)}; edit it by hand" if lost else ""
            said[rel] = f"kept {path} as you have it{lost_said}"
    if differ:
        raise ConfigError(
            f"{root}: {', '.join(sorted(differ))} already exist and differ from what init would write now, in lines "
            "init cannot merge your edits with; pass --force to see the diff and replace them"
        )
    return write, said


def merge3(base: str, ours: str, theirs: str) -> str | None:
    """`base` with the line changes of both `ours` and `theirs` applied (a change made on both sides
    once), None if two changes overlap or touch (which goes first is not known): a line-wise diff3."""
    b = base.splitlines(keepends=True)
    changes = sorted({*_changes(b, ours), *_changes(b, theirs)})
    out: list[str] = []
    at, last = 0, None
    for i1, i2, lines in changes:
        if last is not None and (i1 < last[1] or (i1 == last[1] and (i1 == i2 or last[0] == last[1]))):
            return None
        out += b[at:i1] + list(lines)
        at, last = i2, (i1, i2)
    return "".join(out + b[at:])


def _changes(base: list[str], other: str) -> list[tuple[int, int, tuple[str, ...]]]:
    """(first, end) of each run of `base`'s lines that `other` changes, with the lines it puts there."""
    lines = other.splitlines(keepends=True)
    opcodes = difflib.SequenceMatcher(None, base, lines, autojunk=False).get_opcodes()
    return [(i1, i2, tuple(lines[j1:j2])) for tag, i1, i2, j1, j2 in opcodes if tag != "equal"]


def _merged(rel: str, base: str, old: str, new: str) -> str | None:
    """`merge3` of the user's `old` and init's `new` over `base`, None if it does not merge, or for
    senpai.yaml if the merged file would not load (a key set on both sides in other lines)."""
    merged = merge3(base, old, new)
    if merged is None or rel != CONFIG_FILE:
        return merged
    try:
        TargetConfig.model_validate(safe_yaml.load(merged))
    except (yaml.YAMLError, ValidationError):
        return None
    return merged


def _fields(text: str | None) -> dict[str, Any]:
    """Dotted path -> value of each leaf of a YAML mapping (`holdout.python`), {} if `text` is not one."""
    try:
        data = safe_yaml.load(text) if text and text != UNREADABLE else None
    except yaml.YAMLError:
        return {}
    out: dict[str, Any] = {}

    def walk(node: Any, prefix: str) -> None:
        for key, value in node.items():
            if isinstance(value, dict) and value:
                walk(value, f"{prefix}{key}.")
            else:
                out[f"{prefix}{key}"] = value

    if isinstance(data, dict):
        walk(data, "")
    return out


def _lost(rel: str, base: str | None, old: str, new: str) -> list[str]:
    """The senpai.yaml fields the user set (not as init wrote them, when that is known) that `new` drops or changes."""
    if rel != CONFIG_FILE:
        return []
    mine, theirs, was = _fields(old), _fields(new), _fields(base)
    gone = object()
    return [k for k, v in mine.items() if theirs.get(k, gone) != v and (base is None or was.get(k, gone) != v)]


def _show(rel: str, old: str, new: str, title: str, label: str = "init") -> None:
    lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    diff = difflib.unified_diff(*lines, f"{rel} (yours)", f"{rel} ({label})")
    click.echo(f"\n{title}\n")
    click.echo("".join(diff).rstrip("\n"))


def _confirmed(rel: str, old: str, new: str, lost: list[str], confirm: Callable[[str, list[str]], bool]) -> bool:
    if old == UNREADABLE:
        click.echo(f"\n{rel} was changed since init wrote it, and is too large or not UTF-8 to show a diff of.")
        return confirm(rel, lost)
    _show(rel, old, new, f"{rel} was changed since init wrote it; --force would make these changes:")
    if lost:
        click.echo(f"That drops or changes your {', '.join(lost)}.")
    return confirm(rel, lost)
