"""`senpai init` run again on a repository it scaffolded before: idempotent, and never silent about
a file the user changed.

- `previous(root)` reads the answers of the `senpai.yaml` there (the train command, the metric and
  its direction, the params file, the holdout quantity), so a re-run, after a failed check or a
  fixed script, asks nothing it was told before. A flag still wins.
- `plan(...)` sorts each file init would write: missing (written), identical (left alone),
  different. A different file is refused without `--force`. With `--force`, a file that is still
  exactly what init wrote last time (the same answers rendered again) is replaced; one the user
  edited is shown as a unified diff first, and replaced only once confirmed (`--yes` confirms).
"""

import difflib
import os
import stat
from collections.abc import Callable
from pathlib import Path

import click
import yaml

from senpai.cli.confine import inside
from senpai.cli.quantities import QUANTITIES
from senpai.config import safe_yaml
from senpai.config.load import MAX_CONFIG_BYTES, read_bounded
from senpai.config.target import CONFIG_FILE
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
    }
    return {k: v for k, v in found.items() if v}


def plan(
    root: Path, files: dict[str, str], before: dict[str, str], force: bool, confirm: Callable[[str], bool]
) -> tuple[dict[str, str], list[str]]:
    """(the files to write, the repo-relative ones left as they are) of `files` (path -> new text);
    `before` is what init wrote last time (same shape, {} if unknown). Raises ConfigError, without
    `force`, naming every existing file whose text differs. With `force`, each such file that is
    not `before`'s is shown as a diff and written only if `confirm(rel)`."""
    write, kept, differ = {}, [], []
    for rel, text in files.items():
        old = _existing(root, rel)
        if old is None:
            write[rel] = text  # new, or a link or odd file that write_inside refuses by name
        elif old == text:
            kept.append(rel)
        elif not force:
            differ.append(rel)
        elif old == before.get(rel) or _confirmed(rel, old, text, confirm):
            write[rel] = text
        else:
            kept.append(rel)
    if differ:
        raise ConfigError(
            f"{root}: {', '.join(sorted(differ))} already exist and differ from what init would write now; "
            "pass --force to see the diff and replace them"
        )
    return write, kept


def _confirmed(rel: str, old: str, new: str, confirm: Callable[[str], bool]) -> bool:
    if old == UNREADABLE:
        click.echo(f"\n{rel} was changed since init wrote it, and is too large or not UTF-8 to show a diff of.")
        return confirm(rel)
    diff = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), f"{rel} (yours)", f"{rel} (init)")
    click.echo(f"\n{rel} was changed since init wrote it; --force would make these changes:\n")
    click.echo("".join(diff).rstrip("\n"))
    return confirm(rel)
