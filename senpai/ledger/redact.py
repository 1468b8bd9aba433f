"""Redaction: tokens never reach the forge, whatever a job printed (design §4).

`redact(text)` replaces, in this order:
1. registered secrets (`register_secret`, e.g. the forge token the CLI wired) and the values of
   secret-looking environment variables (`SECRET_ENV`: names with TOKEN, KEY, SECRET, PASSWORD,
   PASSWD, CREDENTIAL, AUTH, COOKIE, DSN or PAT as a word, e.g. `KAGGLE_KEY`, `PGPASSWORD`; and the
   password of any `*_URL`/`*_URI` holding `scheme://user:password@`), values of 8+ characters.
   Each secret is also caught in the forms it takes on the way out: base64 (git's `Authorization:
   Basic` header), percent-encoded, hex, and any run of MIN_PREFIX+ leading characters of a
   secret of PREFIX_FROM+ characters (a log line cut short, a truncated header);
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
from urllib.parse import quote, quote_plus, urlsplit

REDACTED = "[REDACTED]"
SECRET_ENV = re.compile(
    r"(?:^|_)(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|AUTH|COOKIE|DSN|PAT)(?:_|$)"
    r"|PASSWORD|PASSWD|SECRET|APIKEY|^GIT_CONFIG_VALUE_\d+$",
    re.IGNORECASE,
)
URL_ENV = re.compile(r"(?:_URL|_URI)$", re.IGNORECASE)
MIN_SECRET = 8  # shorter values ("1", "true") would redact ordinary words
MIN_PREFIX, PREFIX_FROM = 8, 16  # a secret of 16+ characters is caught from its first 8 on
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


def env_secrets(env: Mapping[str, str]) -> set[str]:
    """Secret values held by `env`: those of `secret_names`, and the password of each `*_URL`/`*_URI`
    with one (`postgres://u:pw@h/db`); only values of MIN_SECRET+ characters."""
    found = {env[n] for n in secret_names(env)}
    for name, value in env.items():
        if URL_ENV.search(name) and "@" in value:
            try:
                found.add(urlsplit(value).password or "")
            except ValueError:
                continue
    return {v for v in found if len(v) >= MIN_SECRET}


def _variants(value: str) -> set[str]:
    """`value`, the base64 forms it takes in HTTP Basic auth (`x-access-token:<value>`, `<value>`),
    its percent-encoded forms (URLs, form bodies) and its hex form (lower and upper case)."""
    basic = [base64.b64encode(f.encode()).decode() for f in (value, f"x-access-token:{value}")]
    hexed = value.encode().hex()
    return {value, *basic, quote(value, safe=""), quote(value), quote_plus(value), hexed, hexed.upper()}


def secrets() -> list[str]:
    """Every secret value known to this process, in every form it is redacted in, longest first
    (so no partial replacement wins)."""
    found = _registered | env_secrets(os.environ)
    return sorted({form for s in found for form in _variants(s)}, key=len, reverse=True)


def _mask(text: str, secret: str) -> str:
    """`text` with `secret` masked; for a secret of PREFIX_FROM+ characters, also every run of its
    first MIN_PREFIX+ characters (a truncated copy)."""
    if len(secret) < PREFIX_FROM:
        return text.replace(secret, REDACTED)
    head, out, pos = secret[:MIN_PREFIX], [], 0
    while (start := text.find(head, pos)) >= 0:
        end = start + MIN_PREFIX
        while end - start < len(secret) and end < len(text) and text[end] == secret[end - start]:
            end += 1
        out += [text[pos:start], REDACTED]
        pos = end
    return "".join(out) + text[pos:]


def redact(text: str) -> str:
    """`text` with every known secret and token-shaped string replaced by `[REDACTED]` (None and "" pass through)."""
    if not text:
        return text
    for value in secrets():
        text = _mask(text, value)
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
