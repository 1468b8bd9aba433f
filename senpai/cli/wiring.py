"""Build the adapters named by a harness config. The only place that picks implementations."""

from pathlib import Path

from senpai.config.harness import HarnessConfig
from senpai.fleet.base import Fleet
from senpai.forge.base import Forge
from senpai.tracker.base import Tracker


def make_forge(cfg: HarnessConfig) -> Forge:
    from senpai.forge.github import GitHubForge

    return GitHubForge(cfg.forge, cfg.forge.token())


def make_tracker(cfg: HarnessConfig) -> Tracker:
    from senpai.tracker.wandb import WandbTracker

    return WandbTracker(cfg.tracker)


def make_fleet(cfg: HarnessConfig) -> Fleet:
    """LocalFleet, or KubernetesFleet (in-cluster config in a pod, else kubeconfig; ConfigError if neither)."""
    if cfg.fleet.backend == "kubernetes":
        from senpai.fleet.kubernetes import KubernetesFleet

        return KubernetesFleet(cfg.fleet)
    from senpai.fleet.local import LocalFleet

    return LocalFleet(Path(cfg.fleet.dir))
