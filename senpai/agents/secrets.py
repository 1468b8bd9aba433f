"""Keep secrets out of the reach of code from a PR: an openhands agent's shell, and the verifier's
train steps (which run the candidate's code as children of the verifier job).

Before the agent's terminal starts (its shell inherits os.environ), or before the verifier runs a
step, every variable outside the
allow-list of `senpai.agents.environ` is removed from this process's environment: the forge
token, the LLM key, and any other key whatever its name (`AWS_SECRET_ACCESS_KEY`, `PGPASSWORD`,
`DATABASE_URL`...). The secret-looking values among them stay registered with the redactor.
The forge adapter and the work copy captured what they need when they were built, so senpai's
own tools keep working; git credentials live only in the private env of senpai's own clones
(never in `.git/config` or the remote URL), and senpai's tools never run credentialed git in the
agent's work copy (see `tools.harness_context`). The W&B key, if any, is handed only to the train
command the harness runs.

The process's *initial* environment stays readable at /proc/<pid>/environ, so on Linux the job
also marks itself non-dumpable (prctl PR_SET_DUMPABLE 0): /proc/<pid>/* then belongs to root and
the agent's shell, running as the same non-root user, cannot read it.  This does not hold when the
job runs as root, nor for other processes that hold the token (the local fleet's supervisor, the
wrapper): run LLM jobs as a non-root user in their own container (the Kubernetes fleet) when the
token matters.
"""

import logging
import os

from senpai.agents.environ import allowed, train_secrets
from senpai.config.harness import HarnessConfig
from senpai.ledger.redact import PR_GET_DUMPABLE as PR_GET_DUMPABLE  # the e2e test reads it here
from senpai.ledger.redact import env_secrets, register_secret, set_not_dumpable

log = logging.getLogger(__name__)


def scrub_environment(cfg: HarnessConfig, llm_key_envs: list[str]) -> dict[str, str]:
    """Remove every variable outside the allow-list from os.environ, registering the forge token,
    the LLM keys and every secret-looking removed value with `senpai.ledger.redact` (so every post
    still masks them). Returns the removed variables the train command still needs (the W&B key)."""
    for name in (cfg.forge.token_env, *llm_key_envs):
        register_secret(os.environ.get(name))
    removed = {n: os.environ.pop(n) for n, v in list(os.environ.items()) if not allowed(n, v)}
    for value in env_secrets(removed):
        register_secret(value)
    keep = train_secrets(removed)
    if removed and not set_not_dumpable():
        log.warning("could not mark the job non-dumpable; its initial environment stays readable in /proc")
    return keep
