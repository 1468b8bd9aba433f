"""Which environment variable names and values hold secrets: one pattern each, shared by the redactor
(`senpai.ledger.redact`), the environment handed to untrusted code (`senpai.job.environ`) and
the check of the env an operator adds to Kubernetes Jobs (`senpai.config.pod`)."""

import re

SECRET_ENV = re.compile(
    r"(?:^|_)(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|AUTH|COOKIE|DSN|PAT)(?:_|$)"
    r"|PASSWORD|PASSWD|SECRET|APIKEY|^GIT_CONFIG_VALUE_\d+$",
    re.IGNORECASE,
)

# well-known token shapes (GitHub, OpenAI/Anthropic `sk-`, Slack, AWS key ids, an Authorization header)
SECRET_VALUES = [
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"(?<=Authorization: )(?:(?:Basic|Bearer|token) )?[^\s\"']+", re.IGNORECASE),
]
URL_PASSWORD = re.compile(r"://[^/\s@:]*:[^/\s@]+@")  # a URL with a password in it (postgres://u:pw@h/db, a proxy)


def secret_value(value: str) -> bool:
    """True if `value` looks like a credential: a known token shape or a URL with a password."""
    return bool(URL_PASSWORD.search(value)) or any(p.search(value) for p in SECRET_VALUES)
