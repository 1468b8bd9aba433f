"""Upload offline W&B runs with wandb's own `wandb sync`, then add the ledger's verdict tags.

An offline installation (the demo, any harness without a W&B key) writes its runs under
`<tracker.dir>/wandb/offline-run-<stamp>-<id>/`. `sync_offline` finds the runs not yet synced under
a folder (a demo's out folder, a tracker dir, or a `wandb/` folder), runs `python -m wandb sync` on
them (wandb prints its own progress), and then adds each verdict to the uploaded runs of that
group and installation through the W&B API. `wandb sync` marks a run synced
(`run-<id>.wandb.synced`), so a second call uploads only what is new.

The verdicts are the ledger's (`senpai sync --config`: the bot's decision blocks, read from the
forge), never a file beside the runs: the tracker dir is a PR's train command's WANDB_DIR, so any
file there may be forged (an older senpai queued tags in `<tracker.dir>/senpai-tags.jsonl`: it is
no longer read).
"""

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from senpai.errors import ConfigError, TransientError
from senpai.tracker.wandb import INSTALLATION_KEY, log_bytes, offline_run_id
from senpai.tracker.wandb_log import fold, records

MAX_DEPTH = 3  # <out>/wandb/wandb/offline-run-*: the demo's layout
MAX_LINE = 1_000  # characters shown of one line wandb sync prints
NO_KEY = (
    "no W&B key: export WANDB_API_KEY=<your key> (`wandb login` shows where to get one; set WANDB_BASE_URL for "
    "a W&B server other than the default), then run senpai sync again; --dry-run lists the runs without a key"
)


@dataclass(frozen=True)
class Verdicts:
    """The verdict tags `senpai sync` may add: `tags` by group (`pr-<n>` -> {`verdict:merge`, ...},
    from the ledger's decisions), to the runs of installation `installation` alone."""

    installation: str
    tags: dict[str, set[str]]


@dataclass
class SyncReport:
    """What `sync_offline` found and did: the run folders (synced, or listed by a dry run) and the
    (run id, tag) pairs it added."""

    runs: list[Path] = field(default_factory=list)
    tagged: list[tuple[str, str]] = field(default_factory=list)


def offline_runs(root: Path) -> list[Path]:
    """The offline run folders under `root` (at most MAX_DEPTH levels down) that `wandb sync` has
    not marked synced, sorted by path."""
    found: list[Path] = []
    for folder, dirs, _ in os.walk(root):
        depth = len(Path(folder).relative_to(root).parts)
        runs = [d for d in dirs if offline_run_id(Path(folder, d))]
        found += [Path(folder, d) for d in runs if not any(Path(folder, d).glob("run-*.wandb.synced"))]
        dirs[:] = [] if depth >= MAX_DEPTH else sorted(d for d in dirs if d not in runs)
    return sorted(found)


def sync_offline(
    root: Path, echo: Callable[[str], None], dry_run: bool = False, verdicts: Callable[[], Verdicts] | None = None
) -> SyncReport:
    """Upload the offline runs under `root` (`offline_runs`) with `wandb sync`, then add the tags
    `verdicts()` gives (read only then; none if None) to the runs that lack them; `echo` gets one
    line per step. `dry_run`: list the
    runs and the tags they would get, upload nothing (no key needed). Raises ConfigError if `root`
    is not a folder or no W&B key is set, TransientError if `wandb sync` fails or the W&B API
    cannot be reached."""
    if not root.is_dir():
        raise ConfigError(f"{root} is not a folder: give a demo's out folder or a tracker dir")
    report = SyncReport(runs=offline_runs(root))
    if not report.runs:
        echo(f"no offline W&B runs left to sync under {root}")
        return report
    if not dry_run and not os.environ.get("WANDB_API_KEY"):
        raise ConfigError(NO_KEY)
    echo(f"{'would sync' if dry_run else 'syncing'} {len(report.runs)} offline W&B run(s) under {root}")
    env = {k: v for k, v in os.environ.items() if k != "WANDB_MODE"}  # an offline mode would keep wandb sync offline
    args = [sys.executable, "-m", "wandb", "sync", *(["--dry-run"] if dry_run else []), *map(str, report.runs)]
    with subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace") as proc:
        for line in proc.stdout:  # wandb's own progress, line by line
            echo(line.rstrip()[:MAX_LINE])
    if proc.returncode != 0:
        raise TransientError(f"wandb sync exited {proc.returncode}; its output is above")
    if verdicts is None:
        echo("no verdict tags added: give --config (and --local-forge for a demo) to read them from the ledger")
        return report
    decided = verdicts()
    planned = [tags for run_dir in report.runs if (tags := run_tags(run_dir, decided))[3]]
    if dry_run:
        for run_id, _, _, tags in planned:
            echo(f"would tag {run_id}: {', '.join(sorted(tags))}")
    else:  # pragma: no cover - needs a W&B server
        report.tagged = _apply_tags(planned, echo)
    return report


def run_tags(run_dir: Path, verdicts: Verdicts) -> tuple[str, str, str, set[str]]:
    """(run id, entity, project, the verdict tags it lacks) of the offline run in `run_dir`: those
    of its group, if its config names `verdicts.installation`."""
    run_id = offline_run_id(run_dir)[1]
    log_file = run_dir / f"run-{run_id}.wandb"
    data = log_bytes(log_file) if log_file.is_file() else b""
    run = fold(records(data))
    ours = str(run["config"].get(INSTALLATION_KEY)) == verdicts.installation
    tags = verdicts.tags.get(run["group"] or "", set()) if ours else set()
    return run_id, run["entity"] or "", run["project"] or "", tags - set(run["tags"])


def _apply_tags(
    planned: list[tuple[str, str, str, set[str]]], echo: Callable[[str], None]
) -> list[tuple[str, str]]:  # pragma: no cover - needs a server
    import wandb

    api, done = wandb.Api(timeout=30), []
    for run_id, entity, project, tags in planned:
        try:
            run = api.run(f"{entity or api.default_entity}/{project}/{run_id}")
            run.tags = sorted({*run.tags, *tags})
            run.update()
        except (wandb.errors.CommError, ValueError) as e:
            raise TransientError(f"tagging W&B run {run_id}: {e}") from e
        done += [(run_id, t) for t in sorted(tags)]
        echo(f"tagged {run_id}: {', '.join(sorted(tags))}")
    return done
