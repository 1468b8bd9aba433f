"""Upload offline W&B runs with wandb's own `wandb sync`, then add the ledger's verdict tags.

An offline installation (the demo, any harness without a W&B key) writes its runs under
`<tracker.dir>/wandb/offline-run-<stamp>-<id>/`. `sync_offline` finds them under a folder (a demo's
out folder, a tracker dir, or a `wandb/` folder) and decides, offline and before anything is sent
(`plan`, `tag_path`):

- which runs to upload: those not yet synced whose config names THIS installation
  (`Destination.installation`, the harness config's); a run of another installation, or of none, is
  listed and skipped;
- where: the harness config's entity (unset: the key's default entity) and project, passed to
  `wandb sync --entity/--project`, never the entity or project a run's log names;
- which tags: the ledger's verdicts of each run's group, for every run of this installation under
  the folder, uploaded now or by an earlier sync (offline the server's tags are unknown; adding a
  tag the run already has changes nothing, see `_apply_tags`).

The verdicts are the ledger's (`senpai sync --config`: the bot's decision blocks, read from the
forge) and are read before anything is uploaded, never from a file beside the runs: the tracker
dir is a PR's train command's WANDB_DIR, so any file there, a run's log and its folder's name
included, may be forged (an older senpai queued tags in `<tracker.dir>/senpai-tags.jsonl`: it is
no longer read). `wandb sync` marks a run synced (`run-<id>.wandb.synced`), so a second call
uploads only what is new.
"""

import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from senpai.config import credentials
from senpai.config.harness import INSTALLATION_ID
from senpai.errors import ConfigError, TransientError
from senpai.tracker.wandb import INSTALLATION_KEY, log_bytes, offline_run_id
from senpai.tracker.wandb_log import fold, records

MAX_DEPTH = 3  # <out>/wandb/wandb/offline-run-*: the demo's layout
MAX_LINE = 1_000  # characters shown of one line wandb sync prints
DEFAULT_ENTITY = "<the key's default entity>"  # shown by a dry run when the config names no entity
NO_KEY = (
    "no W&B key: export WANDB_API_KEY=<your key> (`wandb login` shows where to get one; set WANDB_BASE_URL for "
    "a W&B server other than the default), then run senpai sync again; --dry-run lists the runs without a key"
)
MALFORMED_KEY = (
    "WANDB_API_KEY is malformed: {problem} Copy the key again from https://wandb.ai/authorize (or <your W&B server>/authorize "
    "with WANDB_BASE_URL set to it), export WANDB_API_KEY=<key>, then run senpai sync again"
)
NO_CONFIG = (
    "senpai sync uploads only the runs of the installation a harness config names, into its W&B entity and "
    "project: give --config <harness.yaml>, or set $SENPAI_CONFIG to its path (a demo's is <out>/harness.yaml); "
    "--dry-run lists the runs without one"
)


@dataclass(frozen=True)
class Destination:
    """Where `senpai sync` uploads and tags, from the harness config: W&B `project` and `entity`
    (None: the W&B key's default entity), for the runs of installation `installation` alone."""

    installation: str
    project: str
    entity: str | None = None


@dataclass(frozen=True)
class OfflineRun:
    """One offline run folder as its own log tells it (hostile: a PR's code may have written it):
    run `id` (from the folder name), whether `wandb sync` marked it `synced`, the `installation` its
    config names (None if none), its `group` and the `tags` it was logged with."""

    path: Path
    id: str
    synced: bool
    installation: str | None
    group: str | None
    tags: frozenset[str]


@dataclass
class SyncPlan:
    """What `sync_offline` will do: `upload` (this installation's run folders not yet synced),
    `skipped` (not-yet-synced folders of another installation, or of none: never uploaded) and
    `tags` (run id -> the verdict tags to add, for each of this installation's decided runs)."""

    upload: list[Path] = field(default_factory=list)
    skipped: list[Path] = field(default_factory=list)
    tags: dict[str, set[str]] = field(default_factory=dict)


@dataclass
class SyncReport:
    """What `sync_offline` found and did: the run folders uploaded (or listed by a dry run), those
    skipped as another installation's, and the (run id, tag) pairs it added."""

    runs: list[Path] = field(default_factory=list)
    skipped: list[Path] = field(default_factory=list)
    tagged: list[tuple[str, str]] = field(default_factory=list)


def offline_runs(root: Path) -> list[OfflineRun]:
    """The offline run folders under `root` (at most MAX_DEPTH levels down), synced or not, sorted
    by path, each read from its own log (`read_run`)."""
    found: list[Path] = []
    for folder, dirs, _ in os.walk(root):
        depth = len(Path(folder).relative_to(root).parts)
        runs = [d for d in dirs if offline_run_id(Path(folder, d))]
        found += [Path(folder, d) for d in runs]
        dirs[:] = [] if depth >= MAX_DEPTH else sorted(d for d in dirs if d not in runs)
    return [read_run(p) for p in sorted(found)]


def read_run(run_dir: Path) -> OfflineRun:
    """The offline run in `run_dir` (an `offline-run-*` folder), read from its bounded log
    (`run-<id>.wandb`, empty if absent)."""
    run_id = offline_run_id(run_dir)[1]
    log_file = run_dir / f"run-{run_id}.wandb"
    run = fold(records(log_bytes(log_file) if log_file.is_file() else b""))
    installation = run["config"].get(INSTALLATION_KEY)
    return OfflineRun(
        path=run_dir, id=run_id, synced=any(run_dir.glob("run-*.wandb.synced")),
        installation=None if installation is None else str(installation), group=run["group"],
        tags=frozenset(map(str, run["tags"])),
    )  # fmt: skip


def plan(runs: list[OfflineRun], installation: str, verdicts: dict[str, set[str]]) -> SyncPlan:
    """Which of `runs` to upload (installation `installation`'s, not yet synced), which to skip
    (the others not yet synced), and the tags to add by run id: `verdicts[group]` (group `pr-<n>` ->
    {`verdict:merge`, ...}) less the tags it was logged with, for each of `installation`'s runs,
    synced before or not (a run id in several folders, a retried job's, gets the union)."""
    out = SyncPlan()
    for run in runs:
        ours = run.installation == installation
        if not run.synced:
            (out.upload if ours else out.skipped).append(run.path)
        if ours and (missing := verdicts.get(run.group or "", set()) - run.tags):
            out.tags.setdefault(run.id, set()).update(missing)
    return out


def tag_path(destination: Destination, entity: str, run_id: str) -> str:
    """The W&B API path `<entity>/<project>/<run id>` of an uploaded run: the destination's project
    and `entity` (the config's, or the key's default), never those its log names."""
    return f"{entity}/{destination.project}/{run_id}"


def sync_offline(
    root: Path,
    echo: Callable[[str], None],
    dry_run: bool = False,
    destination: Destination | None = None,
    verdicts: Callable[[], dict[str, set[str]]] | None = None,
) -> SyncReport:
    """Upload this installation's offline runs under `root` to `destination`'s entity and project
    with `wandb sync`, then add the tags `verdicts()` gives (group -> tags; read before uploading;
    none if None) to this installation's runs under `root` (`plan`); `echo` gets one line per step.
    `dry_run`: list the runs, where they would go and the tags they would get; send nothing (no key
    needed). Without `destination` only a dry run is allowed. Raises ConfigError if `root` is not a
    folder, if there is something to upload without `destination`, with no W&B key set or with a
    malformed one (`wandb_key_problem`: wandb would refuse it on every try), what
    `verdicts()` raises (before anything is uploaded), TransientError if `wandb sync` fails or the
    W&B API cannot be reached."""
    if not root.is_dir():
        raise ConfigError(f"{root} is not a folder: give a demo's out folder or a tracker dir")
    runs = offline_runs(root)
    if destination is None:
        if not (pending := [r.path for r in runs if not r.synced]):
            echo(f"no offline W&B runs left to sync under {root}")
            return SyncReport()
        if not dry_run:
            raise ConfigError(NO_CONFIG)
        echo(f"{len(pending)} offline W&B run(s) not yet synced under {root}; none is uploaded without --config")
        return SyncReport(skipped=pending)
    if not any(r.installation == destination.installation for r in runs):
        echo(f"no offline W&B runs of installation {destination.installation} under {root}" + _others(runs))
        return SyncReport(skipped=[r.path for r in runs if not r.synced])
    if not dry_run and not (key := credentials.get("WANDB_API_KEY")):
        raise ConfigError(NO_KEY)
    if not dry_run and (problem := wandb_key_problem(key)):  # wandb would refuse it on each try: no retry can fix it
        raise ConfigError(MALFORMED_KEY.format(problem=problem))
    decided = verdicts() if verdicts else {}  # before any upload: a ledger that cannot be read stops the sync here
    todo = plan(runs, destination.installation, decided)
    report = SyncReport(runs=todo.upload, skipped=todo.skipped)
    if todo.skipped:
        echo(f"skipping {len(todo.skipped)} offline W&B run(s) not of installation {destination.installation}")
    if verdicts is None:
        echo("no verdict tags added: no ledger to read them from")
    if not todo.upload and not todo.tags:
        echo(f"no offline W&B runs left to sync or tag under {root}")
        return report
    entity = destination.entity or (DEFAULT_ENTITY if dry_run else _default_entity())
    if todo.upload:
        echo(f"{'would sync' if dry_run else 'syncing'} {len(todo.upload)} offline W&B run(s) under {root} "
             f"to {entity}/{destination.project}")  # fmt: skip
        _wandb_sync(sync_args(todo.upload, entity, destination.project, dry_run), echo)
    targets = [(tag_path(destination, entity, run_id), tags) for run_id, tags in sorted(todo.tags.items())]
    if dry_run:
        for path, tags in targets:
            echo(f"would tag {path} (if it lacks them): {', '.join(sorted(tags))}")
    else:  # pragma: no cover - needs a W&B server
        report.tagged = _apply_tags(targets, echo)
    return report


def wandb_key_problem(key: str) -> str | None:
    """What wandb finds wrong with the form of the W&B key `key` (empty, a character outside
    A-Z, digits and underscores, fewer than 40 of them after an on-prem prefix), as a sentence that
    does not quote the key; None if it is well formed. Offline: a well-formed key the server does
    not know is refused later, by the upload."""
    from wandb.sdk.lib.wbauth.validation import check_api_key  # what wandb.Api and `wandb sync` check first

    return check_api_key(key)


def _others(runs: list[OfflineRun]) -> str:
    """The installations the runs name instead, with how to sync one (an id an older senpai kept in
    a file is not read: tracker.installation pins it), or ""."""
    seen = Counter(r.installation for r in runs if r.installation and re.fullmatch(INSTALLATION_ID, r.installation))
    if not seen:
        return ""
    listed = ", ".join(f"{i} ({n} runs)" for i, n in seen.most_common(5))
    return f"; runs of other installations: {listed}. To sync one of them, set tracker.installation to its id in the config"


def sync_args(paths: list[Path], entity: str, project: str, dry_run: bool) -> list[str]:
    """The `wandb sync` command line that uploads `paths` into `entity`/`project` (overriding those
    each run's log names; `-I`: no folder a job's code wrote reaches its imports; no `--entity` when
    it is DEFAULT_ENTITY, which only a dry run, that uploads nothing, leaves unresolved)."""
    where = [f"--project={project}", *([f"--entity={entity}"] if entity != DEFAULT_ENTITY else [])]
    return [sys.executable, "-I", "-m", "wandb", "sync", *where, *(["--dry-run"] if dry_run else []), *map(str, paths)]


def upload(paths: list[Path], entity: str | None, project: str, key: str | None) -> None:  # pragma: no cover - W&B server
    """Upload the offline run folders `paths` into `entity` (None: the key's default) / `project`
    with `wandb sync` and the W&B key `key` (a job's collected run). Raises TransientError if it fails."""
    lines: list[str] = []
    try:
        _wandb_sync(sync_args(paths, entity or _default_entity(), project, False), lines.append, key)
    except TransientError as e:
        raise TransientError(f"{e}: {' | '.join(lines[-5:])}") from None


def _wandb_sync(args: list[str], echo: Callable[[str], None], key: str | None = None) -> None:
    """Run `args` (`sync_args`) with the W&B key (`key`, else the one held), echoing wandb's output
    line by line. Raises TransientError if it fails."""
    env = {k: v for k, v in os.environ.items() if k != "WANDB_MODE"}  # an offline mode would keep wandb sync offline
    env["WANDB_API_KEY"] = key or credentials.get("WANDB_API_KEY") or ""
    with subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace") as proc:
        for line in proc.stdout:
            echo(line.rstrip()[:MAX_LINE])
    if proc.returncode != 0:
        raise TransientError(f"wandb sync exited {proc.returncode}; its output is above")


def _default_entity() -> str:  # pragma: no cover - needs a W&B server
    """The W&B key's default entity: without `--entity`, `wandb sync` would use the one a run's
    log names."""
    import wandb

    try:
        entity = wandb.Api(timeout=30, api_key=credentials.get("WANDB_API_KEY")).default_entity
    except (wandb.errors.CommError, ValueError) as e:
        raise TransientError(f"reading the W&B key's default entity: {e}") from e
    if not entity:
        raise ConfigError("the W&B key has no default entity: set tracker.entity in the harness config")
    return entity


def _apply_tags(
    targets: list[tuple[str, set[str]]], echo: Callable[[str], None]
) -> list[tuple[str, str]]:  # pragma: no cover - needs a server
    """Add each target's tags to the run at its API path, one read and, if a tag is missing, one
    update per run; returns the (run id, tag) pairs added. A run the server does not hold (its
    folder's `.synced` mark may be a PR's forgery) is reported and skipped, so it cannot hold up the
    others; any other API error raises TransientError."""
    import wandb

    api, done = wandb.Api(timeout=30, api_key=credentials.get("WANDB_API_KEY")), []
    for path, tags in targets:
        try:
            run = api.run(path)
            if missing := tags - set(run.tags):
                run.tags = sorted({*run.tags, *missing})
                run.update()
        except ValueError as e:  # wandb 0.31: RunNotFoundError, "Could not find run"
            echo(f"not tagged {path}: {str(e)[:MAX_LINE]}")
            continue
        except wandb.errors.CommError as e:
            raise TransientError(f"tagging W&B run {path}: {e}") from e
        done += [(run.id, t) for t in sorted(missing)]
        if missing:
            echo(f"tagged {path}: {', '.join(sorted(missing))}")
    return done
