"""Redaction of secrets from anything senpai posts or logs (log tails, budget reports, agent text).

A secret is the value of an environment variable whose name is listed explicitly (the forge's
`token_env`, the LLM's `api_key_env`) or looks like one (`*_TOKEN`, `*_API_KEY`, `*_SECRET`,
`*_PASSWORD`).  Values are matched literally, and also in the Basic-auth form git sends them in
(`base64("x-access-token:<token>")`), so a token copied out of a git header is caught too.
"""

import base64
import re
from collections.abc import Iterable, Mapping

SECRET_NAME = re.compile(r"(^|_)(TOKEN|API_KEY|SECRET|PASSWORD)$|^GIT_CONFIG_VALUE_\d+$")
MASK = "[REDACTED]"
MIN_LENGTH = 6  # shorter values would mask ordinary words


def secret_names(env: Mapping[str, str], explicit: Iterable[str] = ()) -> list[str]:
    """Names in `env` that hold secrets: the `explicit` ones plus every name matching SECRET_NAME."""
    named = {n for n in explicit if env.get(n)}
    return sorted(named | {n for n, v in env.items() if v and SECRET_NAME.search(n)})


class Redactor:
    """Replaces each known secret value (and its git Basic-auth encoding) with `[REDACTED]`."""

    def __init__(self, values: Iterable[str]) -> None:
        forms: set[str] = set()
        for v in values:
            if v and len(v) >= MIN_LENGTH:
                forms |= {v, base64.b64encode(f"x-access-token:{v}".encode()).decode()}
        self._forms = sorted(forms, key=len, reverse=True)

    @classmethod
    def from_env(cls, env: Mapping[str, str], explicit: Iterable[str] = ()) -> "Redactor":
        return cls(env[n] for n in secret_names(env, explicit))

    def __call__(self, text: str | None) -> str | None:
        if not text:
            return text
        for form in self._forms:
            text = text.replace(form, MASK)
        return text
