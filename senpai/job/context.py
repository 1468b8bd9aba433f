"""What every turn gets: the adapters, the target's config, and a fresh clone of the base branch."""

from dataclasses import dataclass
from pathlib import Path

from senpai import phases
from senpai.config.harness import HarnessConfig
from senpai.config.target import TargetConfig, load_target
from senpai.config.time_limits import TimeLimits
from senpai.forge.mirror import mirror_path
from senpai.forge.port import ForgeReadWrite
from senpai.job.workcopy import WorkCopy
from senpai.ledger.table import LedgerReader, Snapshot
from senpai.tracker.base import Tracker


@dataclass
class TurnContext:
    harness: HarnessConfig
    forge: ForgeReadWrite  # a turn reads, and writes through `senpai.ledger.transitions`
    tracker: Tracker
    ledger: LedgerReader
    target: TargetConfig
    repo: WorkCopy
    workdir: Path
    time_limits: TimeLimits  # of `harness` and `target`: the turn's deadline and the timeouts inside it

    @property
    def base(self) -> str:
        return self.harness.forge.base_branch


def prepare_turn(
    harness: HarnessConfig,
    forge: ForgeReadWrite,
    tracker: Tracker,
    workdir: Path,
    mirrored_base: str | None = None,
    snapshot: str | None = None,
) -> TurnContext:
    """Clone the research base branch into `workdir/repo` and load its senpai.yaml. With
    `mirrored_base` (the sha the wrapper mirrored, `senpai.forge.mirror.handed_base`), the clone is
    copied from the wrapper's mirror if it holds that sha, else it comes from the forge. With
    `snapshot` (`senpai.ledger.table.handed_snapshot`), only that ledger snapshot is loaded.

    Raises TransientError if the clone fails on the network, ConfigError if senpai.yaml is bad or
    does not fit the harness config (`TimeLimits.of`).
    """
    ledger = LedgerReader(forge, tracker, Snapshot.of(harness.state_dir, harness.forge.token(), harness.forge.scope))
    with phases.phase("ledger snapshot"):
        # the wrapper's cache (the one it wrote for this job: `table.handed_snapshot`) and forge memo:
        # the turn reads only what changed since its last refresh
        ledger.load(snapshot)
    mirror = (mirror_path(harness.state_dir), mirrored_base) if mirrored_base else None
    repo = WorkCopy.clone(forge.clone_url, workdir / "repo", forge.git_env(), harness.forge.base_branch, mirror=mirror)
    with phases.phase("config"):
        target = load_target(repo.path)
        time_limits = TimeLimits.of(harness.times(), target)
    return TurnContext(harness, forge, tracker, ledger, target, repo, workdir, time_limits)
