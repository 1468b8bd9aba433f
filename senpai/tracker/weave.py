"""Live traces of an agent turn's LLM calls in W&B Weave, when a W&B key is set and the optional
`trace` extra (`pip install 'senpai[trace]'`, the `weave` package) is installed.

`weave.init` patches LiteLLM, which OpenHands calls, so every LLM call of the turn (prompt,
completion, tokens, cost) is traced to the project of the harness's tracker. Without a key, or
without `weave`, nothing happens: the turn's calls are still logged as a W&B Table
(`senpai.agents.openhands.trace`).
"""

import importlib.util
import logging
import os

from senpai.config import credentials
from senpai.config.harness import TrackerSettings

log = logging.getLogger(__name__)


def start(settings: TrackerSettings) -> bool:
    """Start Weave tracing for this process if W&B is online (a key is held) and `weave` is
    installed; returns whether it started. A Weave failure is logged, never raised: the turn runs
    untraced."""
    if settings.resolved_mode() != "online" or not credentials.get("WANDB_API_KEY"):
        return False
    if importlib.util.find_spec("weave") is None:
        log.info("W&B is online but weave is not installed (pip install 'senpai[trace]'): no live trace")
        return False
    return _init(f"{settings.entity}/{settings.project}" if settings.entity else settings.project)


def _init(project: str) -> bool:  # pragma: no cover - needs a W&B server
    import weave

    os.environ["WANDB_API_KEY"] = credentials.get("WANDB_API_KEY") or ""  # weave reads it there, at init only
    try:
        weave.init(project)
    except Exception as e:  # noqa: BLE001 - weave raises many kinds; a trace is never worth a turn
        log.warning("weave tracing not started: %s", e)
        return False
    finally:
        os.environ.pop("WANDB_API_KEY", None)  # no process this job starts may inherit it
    return True
