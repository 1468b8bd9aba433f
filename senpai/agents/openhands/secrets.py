"""Keep secrets out of the agent's reach.

The forge token, the LLM key and every `*_TOKEN` / `*_API_KEY` / `*_SECRET` / `*_PASSWORD` variable
are removed from this process's environment before the agent's terminal starts (its shell
inherits os.environ).  The forge adapter and the work copy captured what they need when they were
built, so senpai's own tools keep working; git credentials live only in the work copy's private
env (never in `.git/config` or the remote URL).  The W&B key, if any, is handed only to the train
command the harness runs.
"""

import os

from senpai.config.harness import HarnessConfig
from senpai.ledger.redact import Redactor, secret_names

TRAIN_SECRETS = ("WANDB_API_KEY",)


def scrub_environment(cfg: HarnessConfig, llm_key_envs: list[str]) -> tuple[Redactor, dict[str, str]]:
    """Remove secrets from os.environ. Returns a redactor for their values and the removed
    variables the train command still needs (the W&B key)."""
    names = secret_names(os.environ, [cfg.forge.token_env, *llm_key_envs])
    removed = {n: os.environ.pop(n) for n in names}
    keep = {n: v for n, v in removed.items() if n in TRAIN_SECRETS}
    return Redactor(removed.values()), keep
