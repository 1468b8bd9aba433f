"""Build the adapters named by a harness config. The only place that picks implementations."""

from pathlib import Path

from senpai.config.harness import HarnessConfig
from senpai.fleet.base import Fleet
from senpai.forge.base import Forge
from senpai.tracker.base import Tracker


def make_forge(cfg: HarnessConfig) -> Forge:
    from senpai.forge.github import GitHubForge

    _register_secrets(cfg)
    return GitHubForge(cfg.forge, cfg.forge.token())


def _register_secrets(cfg: HarnessConfig) -> None:
    """The forge token and the LLM keys, whatever env vars hold them, are redacted from all posts."""
    from senpai.ledger.redact import register_secret

    register_secret(cfg.forge.token())
    for role in (cfg.runtime.advisor, cfg.runtime.student):
        if role.llm is not None:
            register_secret(role.llm.api_key())


def make_tracker(cfg: HarnessConfig) -> Tracker:
    from senpai.tracker.wandb import WandbTracker

    return WandbTracker(cfg.tracker)


def make_fleet(cfg: HarnessConfig) -> Fleet:
    if cfg.fleet.backend != "local":
        raise NotImplementedError(f"fleet backend {cfg.fleet.backend!r}")
    from senpai.fleet.local import LocalFleet

    return LocalFleet(Path(cfg.fleet.dir))
