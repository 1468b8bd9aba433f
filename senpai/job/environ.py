"""The environment a job hands to code it does not trust: by allow-list, never by name patterns.

The train command, the verifier's holdout commands and the openhands agent's shell run code from
a PR. They get only the variables below: locale, paths (library and Python paths too), GPUs
(`CUDA_*`, `NVIDIA_*`, `NCCL_*`), seeds, thread counts, caches, proxies and CA bundles, conda's,
W&B's run identity (`WANDB_*`) and senpai's own `SENPAI_*`. Whatever is not listed (a cloud key,
`DATABASE_URL`, a registry password...) stays out, whatever its name.
Even a listed name is dropped when it looks secret (`senpai.ledger.redact.SECRET_ENV`, e.g.
`WANDB_API_KEY`, `SENPAI_FORGE_TOKEN`) or its value is a URL with a password (a proxy with
credentials). No secret is given back to any of them: a train command logs its W&B run offline, and
the job uploads it (`senpai.tracker.base.Tracker.collect_run`).
"""

import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from senpai.ledger.redact import SECRET_ENV

ALLOWED = frozenset(
    {
        *("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LANGUAGE", "TZ", "PWD", "HOSTNAME"),
        *("TMPDIR", "TEMP", "TMP", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR"),
        *("SEED", "MPLBACKEND", "VIRTUAL_ENV", "LD_LIBRARY_PATH", "JAVA_HOME"),
        *("PYTHONHASHSEED", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING", "PYTHONUTF8"),
        "PYTHONPATH",
        *("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TOKENIZERS_PARALLELISM"),
        *("HF_HOME", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "TORCH_HOME"),
        *("SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"),
        *("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"),
        *("LITELLM_LOCAL_MODEL_COST_MAP", "OPENHANDS_SUPPRESS_BANNER"),
    }
)
ALLOWED_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "NCCL_", "CONDA_", "WANDB_", "SENPAI_")
_URL_WITH_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/@\s]*:[^/@\s]*@")


def allowed(name: str, value: str) -> bool:
    """May variable `name` with `value` reach code from a PR? (See the module docstring.)"""
    if name not in ALLOWED and not name.startswith(ALLOWED_PREFIXES):
        return False
    return not SECRET_ENV.search(name) and not _has_password(value)


def _has_password(value: str) -> bool:
    if not _URL_WITH_PASSWORD.match(value):
        return False
    try:
        return bool(urlsplit(value).password)
    except ValueError:
        return True


def allowed_env(env: Mapping[str, str]) -> dict[str, str]:
    """The allow-listed part of `env`."""
    return {k: v for k, v in env.items() if allowed(k, v)}
