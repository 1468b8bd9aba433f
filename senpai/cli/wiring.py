"""Build the adapters named by a harness config. The only place that picks implementations."""

from pathlib import Path

from senpai.config.harness import HarnessConfig
from senpai.fleet.base import Fleet
from senpai.forge.base import Forge
from senpai.tracker.base import Tracker


def make_forge(cfg: HarnessConfig) -> Forge:
    from senpai.forge.github import GitHubForge
    from senpai.ledger.redact import register_secret

    register_secret(cfg.forge.token())  # whatever env var holds it, it is never posted
    return GitHubForge(cfg.forge, cfg.forge.token())


def make_tracker(cfg: HarnessConfig) -> Tracker:
    from senpai.tracker.wandb import WandbTracker

    return WandbTracker(cfg.tracker)


def make_fleet(cfg: HarnessConfig) -> Fleet:
    if cfg.fleet.backend != "local":
        raise NotImplementedError(f"fleet backend {cfg.fleet.backend!r}")
    from senpai.fleet.local import LocalFleet

    return LocalFleet(Path(cfg.fleet.dir))
