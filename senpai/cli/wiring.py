"""Build the adapters named by a harness config. The only place that picks implementations."""

from pathlib import Path
from typing import TYPE_CHECKING

from senpai.config.harness import HarnessConfig, KubernetesFleetSettings
from senpai.fleet.base import Fleet
from senpai.forge.base import Forge
from senpai.tracker.base import Tracker

if TYPE_CHECKING:  # the kubernetes client is imported only when a kubernetes fleet is configured
    from senpai.fleet.k8s_cluster import ClusterProbe


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


def make_cluster_probe(cfg: HarnessConfig) -> "ClusterProbe | None":
    """The cluster of a kubernetes fleet, for `senpai preflight`; None for the local fleet."""
    if isinstance(cfg.fleet, KubernetesFleetSettings):
        from senpai.fleet.k8s_cluster import ClusterProbe

        return ClusterProbe(cfg.fleet)
    return None
