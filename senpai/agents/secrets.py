"""What a job strips from its own environment before it starts code it does not trust.

A job's secrets never were in its environment to begin with: the wrapper hands them over on a
private pipe, or the job moved them into memory when it started (`senpai.config.credentials`). Before
an openhands agent's terminal starts, or the verifier runs a step, `scrub_environment` removes every
other variable outside the allow-list of `senpai.job.environ` as well (`AWS_SECRET_ACCESS_KEY`,
`DATABASE_URL`, whatever an operator's environment held), registering the secret-looking values with
the redactor, and makes the job non-dumpable. The code itself runs behind its wall
(`senpai.fleet.wall`): it reads no file of senpai's, and no process outside the wall in /proc.
"""

import logging
import os

from senpai.config.credentials import set_not_dumpable
from senpai.config.harness import HarnessConfig
from senpai.job.environ import allowed
from senpai.ledger.redact import env_secrets, register_secret

log = logging.getLogger(__name__)


def scrub_environment(cfg: HarnessConfig, llm_key_envs: list[str]) -> None:
    """Remove every variable outside the allow-list from os.environ, registering the forge token,
    the LLM keys and every secret-looking removed value with `senpai.ledger.redact` (so every post
    still masks them), and make this process non-dumpable."""
    for name in (cfg.forge.token_env, *llm_key_envs):
        register_secret(os.environ.get(name))
    removed = {n: os.environ.pop(n) for n, v in list(os.environ.items()) if not allowed(n, v)}
    for value in env_secrets(removed):
        register_secret(value)
    if not set_not_dumpable():
        log.warning("could not mark the job non-dumpable; its initial environment stays readable in /proc")
