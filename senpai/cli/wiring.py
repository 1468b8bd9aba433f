"""Build the adapters named by a harness config. The only place that picks implementations."""

from pathlib import Path
from typing import TYPE_CHECKING, Any

from senpai.agents.base import Runtime
from senpai.agents.openhands.runtime import OpenHandsRuntime
from senpai.agents.search.runtime import SearchRuntime
from senpai.config import credentials
from senpai.config.harness import ForgeSettings, HarnessConfig, KubernetesFleetSettings, RoleRuntime
from senpai.errors import needs_extra
from senpai.fleet.base import Fleet
from senpai.forge.read import ForgeReader
from senpai.job.walls import senpai_paths
from senpai.ledger.redact import register_secret
from senpai.tracker.base import Tracker

if TYPE_CHECKING:  # the kubernetes client is imported only when a kubernetes fleet is configured
    from senpai.fleet.k8s_cluster import ClusterProbe
    from senpai.forge.github import GitHubForge


def secret_envs(cfg: HarnessConfig) -> list[str]:
    """Names of the env vars holding `cfg`'s secrets: the forge token, each role's LLM key and the
    fleet's `secret_env` (Kubernetes)."""
    llm_keys = [r.llm.api_key_env for r in (cfg.runtime.advisor, cfg.runtime.student) if r.llm]
    return [cfg.forge.token_env, *llm_keys, *(s.env for s in getattr(cfg.fleet, "secret_env", []))]


def hold_secrets(cfg: HarnessConfig) -> None:
    """Move `cfg`'s secrets (`secret_envs`, and `WANDB_API_KEY`) and every secret-looking variable out
    of os.environ into this process's memory (`senpai.config.credentials.adopt`: no child inherits
    them, /proc shows them to nobody), and from now on redact their values, whatever their names,
    from all that this process posts (`senpai.ledger.redact`). Every command calls it once it has
    read its config."""
    credentials.adopt([*secret_envs(cfg), "WANDB_API_KEY"])
    for name in secret_envs(cfg):
        register_secret(credentials.get(name))


def make_forge(cfg: HarnessConfig, role: str = "cli") -> "GitHubForge":
    """The forge adapter of `cfg` whole (`Forge`: its reader, writer and admin parts over one client),
    its requests sent as `role` (`forge_from`): for the wrapper and the jobs, which write, and
    preflight, which sets up. A command that only reads takes `make_reader`."""
    return forge_from(cfg.forge, role)


def make_reader(cfg: HarnessConfig, role: str = "cli") -> ForgeReader:
    """The reading part alone of `cfg`'s forge adapter (`GitHubReader`, over a client built as
    `make_forge`'s), for the commands that only read (`senpai status`, `ledger`, `report`, `sync`):
    nothing can write through it."""
    from senpai.forge.github.http import GitHubHttp
    from senpai.forge.github.reader import GitHubReader

    return GitHubReader(GitHubHttp(cfg.forge, **_client(cfg.forge, role)))


def forge_from(settings: ForgeSettings, role: str = "cli") -> "GitHubForge":
    """The forge adapter for `settings` alone (commands that need no full harness config), its client
    built by `_client`."""
    from senpai.forge.github import GitHubForge

    return GitHubForge(settings, **_client(settings, role))


def _client(settings: ForgeSettings, role: str) -> dict[str, Any]:
    """The client arguments (`GitHubHttp`'s, past `settings`) of every adapter the wiring builds: the
    token of `settings`, and `User-Agent: senpai/<version> (<role>)`: wrapper, advisor, student,
    verifier or cli, so the forge's logs (and bench/forge_requests.py) tell the roles apart."""
    from senpai import __version__

    return {"token": settings.token(), "user_agent": f"senpai/{__version__} ({role})"}


# runtime kind (`runtime.<role>.kind`) -> the runtime; each imports its heavy packages only when a turn starts
RUNTIMES: dict[str, Runtime] = {"search": SearchRuntime(), "openhands": OpenHandsRuntime()}


def make_runtime(settings: RoleRuntime) -> Runtime:
    """The runtime one role's settings name (`cfg.runtime.advisor` or `cfg.runtime.student`)."""
    return RUNTIMES[settings.kind]


def make_tracker(cfg: HarnessConfig) -> Tracker:
    """The W&B tracker of `cfg`, its installation id derived from the config (the repository)."""
    from senpai.tracker.wandb import WandbTracker

    return WandbTracker(cfg.tracker, cfg.tracker.installation_id(cfg.forge.repo))


def make_fleet(cfg: HarnessConfig) -> Fleet:
    """LocalFleet, or KubernetesFleet (in-cluster config in a pod, else kubeconfig; ConfigError if
    neither; MissingExtra if the `kubernetes` extra is not installed)."""
    if cfg.fleet.backend == "kubernetes":
        with needs_extra("kubernetes", "fleet.backend kubernetes"):
            from senpai.fleet.kubernetes import KubernetesFleet

        return KubernetesFleet(cfg.fleet, hidden=[*senpai_paths(cfg), *cfg.wall.hidden])
    from senpai.fleet.local import LocalFleet

    return LocalFleet(Path(cfg.fleet.dir))


def make_cluster_probe(cfg: HarnessConfig) -> "ClusterProbe | None":
    """The cluster of a kubernetes fleet, for `senpai preflight`; None for the local fleet."""
    if isinstance(cfg.fleet, KubernetesFleetSettings):
        with needs_extra("kubernetes", "fleet.backend kubernetes"):
            from senpai.fleet.k8s_cluster import ClusterProbe

        return ClusterProbe(cfg.fleet)
    return None
