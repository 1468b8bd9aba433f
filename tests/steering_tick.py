"""One wrapper refresh's steering, through the wrapper's own parts: read what humans wrote
(`HumanReader`), decide (`steering_actions` over a fresh `World`), carry it out (`Dispatcher`).
For tests that steer without a running loop (no fleet jobs are launched)."""

from datetime import UTC, datetime

from senpai.config.harness import HarnessConfig
from senpai.errors import SenpaiError
from senpai.fleet.base import JobStatus
from senpai.forge.port import Forge
from senpai.ledger.experiment import Experiment
from senpai.ledger.table import LedgerReader
from senpai.wrapper.dispatch import Dispatcher
from senpai.wrapper.humans import HumanReader, HumansView
from senpai.wrapper.loop import base_target
from senpai.wrapper.steering import steering_actions
from senpai.wrapper.world import World


def read(forge: Forge, cfg: HarnessConfig) -> tuple[LedgerReader, list[Experiment], HumansView]:
    """A fresh wrapper's re-read: (its ledger reader, the experiments, what humans wrote)."""
    ledger = LedgerReader(forge)
    exps = ledger.experiments()
    return ledger, exps, HumanReader(cfg, forge, ledger).read()


def act(
    forge: Forge,
    cfg: HarnessConfig,
    read_: tuple[LedgerReader, list[Experiment], HumansView],
    base: str = "advisor",
    jobs: list[JobStatus] | None = None,
    fleet=None,
) -> tuple[list[str], list[str]]:
    """Plan the steering actions on `read_` (base branch `base`) and carry them out: (the lines of
    what was done, the errors)."""
    ledger, exps, view = read_
    sha = forge.branch_sha(base)
    w = World(
        exps, sha, jobs or [], datetime.now(UTC), {}, view.state, view.free_text,
        commands=view.commands, issues=view.issues, target=base_target(forge, sha), fresh=True, bot=forge.login,
    )  # fmt: skip
    dispatcher, by_pr = Dispatcher(forge, fleet, "harness.yaml", {}, {}, ledger), {e.pr: e for e in exps}
    lines, errors = [], []
    for action in steering_actions(w, cfg):
        try:
            if line := dispatcher.apply(action, by_pr):
                lines.append(line)
        except SenpaiError as e:
            errors.append(f"{type(action).__name__}: {e}")
    return lines, errors


def tick(forge: Forge, cfg: HarnessConfig, base: str = "advisor") -> tuple[list[str], HumansView]:
    """A re-read, the steering it calls for, and a re-read after: (what was done, the view then)."""
    lines, errors = act(forge, cfg, read(forge, cfg), base)
    assert not errors, errors
    return lines, read(forge, cfg)[2]
