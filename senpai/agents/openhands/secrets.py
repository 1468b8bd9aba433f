"""Keep secrets out of the agent's reach.

The forge token, the LLM key and every `*_TOKEN` / `*_API_KEY` / `*_SECRET` / `*_PASSWORD` variable
are removed from this process's environment before the agent's terminal starts (its shell
inherits os.environ).  The forge adapter and the work copy captured what they need when they were
built, so senpai's own tools keep working; git credentials live only in the private env of
senpai's own clones (never in `.git/config` or the remote URL), and senpai's tools never run
credentialed git in the agent's work copy (see `tools.harness_context`).  The W&B key, if any, is handed only to the train
command the harness runs.

The process's *initial* environment stays readable at /proc/<pid>/environ, so on Linux the job
also marks itself non-dumpable (prctl PR_SET_DUMPABLE 0): /proc/<pid>/* then belongs to root and
the agent's shell, running as the same non-root user, cannot read it.  This does not hold when the
job runs as root, nor for other processes that hold the token (the local fleet's supervisor, the
wrapper): run LLM jobs as a non-root user in their own container (the Kubernetes fleet) when the
token matters.
"""

import ctypes
import ctypes.util
import logging
import os
import sys

from senpai.config.harness import HarnessConfig
from senpai.ledger.redact import register_secret, secret_names

log = logging.getLogger(__name__)
TRAIN_SECRETS = ("WANDB_API_KEY",)
PR_SET_DUMPABLE, PR_GET_DUMPABLE = 4, 3


def scrub_environment(cfg: HarnessConfig, llm_key_envs: list[str]) -> dict[str, str]:
    """Remove secrets from os.environ, registering their values with `senpai.ledger.redact` (so
    every post still masks them). Returns the removed variables the train command still needs
    (the W&B key)."""
    names = secret_names(os.environ, [cfg.forge.token_env, *llm_key_envs])
    removed = {n: os.environ.pop(n) for n in names}
    for value in removed.values():
        register_secret(value)
    keep = {n: v for n, v in removed.items() if n in TRAIN_SECRETS}
    if removed and not set_not_dumpable():
        log.warning("could not mark the job non-dumpable; its initial environment stays readable in /proc")
    return keep


def set_not_dumpable() -> bool:
    """prctl(PR_SET_DUMPABLE, 0) on Linux; True if the process is now non-dumpable."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    return libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0
