"""Redaction: tokens never reach the forge, whatever a job printed (design §4).

`redact(text)` replaces, in this order:
1. registered secrets (`register_secret`, e.g. the forge token the CLI wired) and the values of
   secret-looking environment variables (`SECRET_ENV`: names with TOKEN, KEY, SECRET, PASSWORD,
   PASSWD, CREDENTIAL, AUTH, COOKIE, DSN or PAT as a word, e.g. `KAGGLE_KEY`, `PGPASSWORD`; and the
   password of any `*_URL`/`*_URI` holding `scheme://user:password@`), values of 8+ characters.
   Each secret is also caught in the forms it takes on the way out: base64 (git's `Authorization:
   Basic` header), percent-encoded, hex, and, for a token-like secret of PREFIX_FROM+ characters,
   any run of MIN_PREFIX+ of its leading characters (a log line cut short, a truncated header);
2. well-known token shapes: GitHub (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`),
   OpenAI/Anthropic style `sk-...`, Slack `xox?-`, AWS access key ids, and the value of any
   `Authorization:` header.

Every ledger write that can carry job output goes through it: `render` (block fields, before the
YAML is dumped, so a token folded over two YAML lines is still caught), `transitions` comments
and PR bodies, and `steering.reply_to_human`.

A job's own output is redacted by the job, before anyone reads it: the wrapper posts a dead job's
log tail, and on Kubernetes it cannot know the job's own keys. `redact_own_output` routes the job's
fd 1 and 2 through a filter process (`python -m senpai.ledger.redact NAME...`) that knows the
job's environment and writes each line redacted to the original stdout. A filter process, not a
thread, so it also catches child processes and native code, and still drains the pipe after the
job is killed (it ignores SIGTERM/SIGINT/SIGHUP, lives in its own session, and ends at EOF).
"""

import atexit
import base64
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterable, Mapping
from typing import BinaryIO
from urllib.parse import quote, quote_plus, urlsplit

from senpai.config import credentials
from senpai.config.credentials import PR_GET_DUMPABLE as PR_GET_DUMPABLE  # tests read it here
from senpai.config.credentials import set_not_dumpable
from senpai.config.secret_env import SECRET_ENV, SECRET_VALUES

REDACTED = "[REDACTED]"
URL_ENV = re.compile(r"(?:_URL|_URI)$", re.IGNORECASE)
MIN_SECRET = 8  # shorter values ("1", "true") would redact ordinary words
MIN_PREFIX, PREFIX_FROM = 8, 16  # a secret of 16+ characters is caught from its first 8 on
PATTERNS = SECRET_VALUES
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


def held_secrets() -> set[str]:
    """The values of the secrets this process holds (`senpai.config.credentials`), MIN_SECRET+ characters."""
    return {v for v in credentials.held().values() if len(v) >= MIN_SECRET}


def _variants(value: str) -> dict[str, bool]:
    """Each form `value` takes, mapped to whether a truncated copy of it is masked too: `value`,
    its percent-encoded forms (URLs, form bodies), its hex (lower and upper case) and base64 forms
    (truncatable, if `value` is token-like: no whitespace, not a path), and the base64 form git's
    Basic auth sends, `x-access-token:<value>` (whole only: its first 20 characters are public)."""
    cut = not re.search(r"\s", value) and not value.startswith(("/", "~"))
    hexed = value.encode().hex()
    forms = {f: cut for f in (value, quote(value, safe=""), quote(value), quote_plus(value), hexed, hexed.upper())}
    forms[base64.b64encode(value.encode()).decode()] = cut
    forms[base64.b64encode(f"x-access-token:{value}".encode()).decode()] = False
    return forms


def secrets() -> list[tuple[str, bool]]:
    """Every secret value known to this process, in every form it is redacted in (with whether a
    truncated copy counts), longest first (so no partial replacement wins)."""
    forms: dict[str, bool] = {}
    for secret in _registered | env_secrets(os.environ) | held_secrets():
        for form, cut in _variants(secret).items():
            forms[form] = forms.get(form, False) or cut
    return sorted(forms.items(), key=lambda item: len(item[0]), reverse=True)


def _mask(text: str, secret: str, cut: bool) -> str:
    """`text` with `secret` masked; if `cut` and the secret has PREFIX_FROM+ characters, also every
    run of its first MIN_PREFIX+ characters (a truncated copy)."""
    if not cut or len(secret) < PREFIX_FROM:
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
    for value, cut in secrets():
        text = _mask(text, value, cut)
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


MAX_LINE = 64 * 1024  # the filter redacts at most this many bytes at a time
FILTER_WAIT_SECONDS = 10.0
_FILTER_ENV = {"PATH", "LANG", "LC_ALL", "LC_CTYPE", "PYTHONPATH", "VIRTUAL_ENV"}
_filter: subprocess.Popen | None = None


def redact_stream(src: BinaryIO, dst: BinaryIO) -> None:
    """Copy `src` to `dst` line by line (MAX_LINE bytes at most per piece), each redacted, until EOF."""
    while line := src.readline(MAX_LINE):
        dst.write(redact(line.decode("utf-8", "replace")).encode())
        dst.flush()


def redact_own_output(names: Iterable[str] = ()) -> None:
    """Route this process's stdout and stderr (fds 1 and 2, children included) through the redacting
    filter. It masks every secret this process knows: registered ones, `env_secrets(os.environ)`
    and the values of the env vars `names` (e.g. a forge token under an odd name; they are
    registered here too). They reach the filter through a pipe, not its environment or argv, and
    the filter is non-dumpable, so neither shows in /proc. At exit the fds are restored and the
    filter drained (up to FILTER_WAIT_SECONDS). Idempotent."""
    global _filter
    if _filter is not None:
        return
    for name in names:
        register_secret(credentials.get(name))  # this process's own posts (evidence log tails) mask them too
    known = _registered | env_secrets(os.environ) | held_secrets()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = os.dup(1)
    keys_r, keys_w = os.pipe()
    env = {k: v for k, v in os.environ.items() if k in _FILTER_ENV or (k.startswith("SENPAI_") and not SECRET_ENV.search(k))}
    _filter = subprocess.Popen(
        [sys.executable, "-m", "senpai.ledger.redact", str(keys_r)], env=env, pass_fds=[keys_r],
        stdin=subprocess.PIPE, stdout=saved, stderr=saved, start_new_session=True,
    )  # fmt: skip
    os.close(keys_r)
    with open(keys_w, "wb") as keys:
        keys.write(b"\0".join(k.encode() for k in known))
    os.dup2(_filter.stdin.fileno(), 1)
    os.dup2(_filter.stdin.fileno(), 2)
    _filter.stdin.close()
    atexit.register(_drain, saved)


def _drain(saved: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os.dup2(saved, 1)  # closes our ends of the pipe: the filter reads EOF once our children let go
    os.dup2(saved, 2)
    if _filter is not None:
        try:
            _filter.wait(timeout=FILTER_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            pass


def main(argv: list[str] | None = None) -> int:
    """The filter: stdin to stdout, redacted with the NUL-separated secrets read from fd argv[0]."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    set_not_dumpable()
    (fd,) = sys.argv[1:] if argv is None else argv
    with open(int(fd), "rb") as keys:
        for key in keys.read().split(b"\0"):
            register_secret(key.decode())
    redact_stream(sys.stdin.buffer, sys.stdout.buffer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
