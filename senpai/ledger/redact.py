"""Redaction: tokens never reach the forge, whatever a job printed (design §4).

`redact(text)` replaces, in this order:
1. registered secrets (`register_secret`, e.g. the forge token the CLI wired) and the values of
   environment variables named `*_TOKEN`, `*_API_KEY`, `*_SECRET`, `*_PASSWORD` (values of 8+
   characters), plus the base64 forms git sees in an `Authorization: Basic` header;
2. well-known token shapes: GitHub (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`),
   OpenAI/Anthropic style `sk-...`, Slack `xox?-`, AWS access key ids, and the value of any
   `Authorization:` header.

Every ledger write that can carry job output goes through it: `render` (block fields, before the
YAML is dumped, so a token folded over two YAML lines is still caught), `transitions` comments
and PR bodies, and `steering.reply_to_human`.
"""

import base64
import os
import re
from collections.abc import Iterable, Mapping

REDACTED = "[REDACTED]"
SECRET_ENV = re.compile(r"(_TOKEN|_API_KEY|_SECRET|_PASSWORD)$|^GIT_CONFIG_VALUE_\d+$", re.IGNORECASE)
MIN_SECRET = 8  # shorter values ("1", "true") would redact ordinary words
PATTERNS = [
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"(?<=Authorization: )(?:(?:Basic|Bearer|token) )?[^\s\"']+", re.IGNORECASE),
]
_registered: set[str] = set()


def register_secret(value: str | None) -> None:
    """Redact `value` (e.g. the forge token, whatever env var holds it) from now on in this process."""
    if value and len(value) >= MIN_SECRET:
        _registered.add(value)


def secret_names(env: Mapping[str, str], explicit: Iterable[str] = ()) -> list[str]:
    """Names in `env` holding secrets: the non-empty `explicit` ones plus every name matching SECRET_ENV."""
    return sorted({n for n in explicit if env.get(n)} | {n for n, v in env.items() if v and SECRET_ENV.search(n)})


def _variants(value: str) -> list[str]:
    """`value` and the base64 forms it takes in HTTP Basic auth (`x-access-token:<value>`, `<value>`)."""
    forms = [value, f"x-access-token:{value}"]
    return [value] + [base64.b64encode(f.encode()).decode() for f in forms]


def secrets() -> list[str]:
    """Every secret value known to this process, longest first (so no partial replacement wins)."""
    found = set(_registered)
    found |= {os.environ[n] for n in secret_names(os.environ) if len(os.environ[n]) >= MIN_SECRET}
    return sorted({form for s in found for form in _variants(s)}, key=len, reverse=True)


def redact(text: str) -> str:
    """`text` with every known secret and token-shaped string replaced by `[REDACTED]` (None and "" pass through)."""
    if not text:
        return text
    for value in secrets():
        text = text.replace(value, REDACTED)
    for pattern in PATTERNS:
        text = pattern.sub(REDACTED, text)
    return text


def redact_data[T](data: T) -> T:
    """`redact` applied to every string inside nested dicts/lists (block fields before rendering)."""
    if isinstance(data, str):
        return redact(data)  # type: ignore[return-value]
    if isinstance(data, dict):
        return {k: redact_data(v) for k, v in data.items()}  # type: ignore[return-value]
    if isinstance(data, list):
        return [redact_data(v) for v in data]  # type: ignore[return-value]
    return data
