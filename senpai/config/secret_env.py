"""Which environment variable names hold secrets: one pattern, shared by the redactor
(`senpai.ledger.redact`), the environment handed to untrusted code (`senpai.agents.environ`) and
the check of the env an operator adds to Kubernetes Jobs (`senpai.config.pod`)."""

import re

SECRET_ENV = re.compile(
    r"(?:^|_)(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|AUTH|COOKIE|DSN|PAT)(?:_|$)"
    r"|PASSWORD|PASSWD|SECRET|APIKEY|^GIT_CONFIG_VALUE_\d+$",
    re.IGNORECASE,
)
