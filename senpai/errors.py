"""One error tree for senpai, each branch with its own exit status.

    SenpaiError                      (exit 1 only if it escapes uncategorised)
    ├── ConfigError                  exit 2: bad senpai.yaml / harness config / CLI input
    ├── TransientError               exit 3 once retries run out: network, 5xx, rate limit
    │   └── DiskFull                 exit 6: a volume senpai or a job writes to is full (ENOSPC, EDQUOT)
    ├── PermanentError               exit 4: the request can never succeed as asked
    │   ├── LedgerFormatError        a senpai-* block is not valid YAML or fails its schema
    │   ├── TransitionError          a label transition's precondition does not hold
    │   ├── MergeRefused             the merge gate refused (protected path, NaN, noise floor)
    │   │   └── ApprovalRequired     it passes but waits for a human's `/senpai approve <fingerprint>`
    │   ├── MergeConflict            the forge could not merge the head into the base
    │   ├── MergeBlocked             the base branch refuses the merge (a required review or check)
    │   ├── NotFound                 a forge object, run or job does not exist
    │   ├── FileListTruncated        the forge lists only part of a PR's files (GitHub: 3,000)
    │   └── Forbidden                the credentials lack a permission (HTTP 401/403)
    ├── (ConfigError) MissingExtra   a package of an optional extra (`pip install 'senpai[agents]'`) is missing
    ├── LedgerInconsistent           exit 5: `senpai ledger --check` found hand-made changes
    └── NoEffect                     exit 7: an LLM advisor turn changed nothing (status `no_effect`)

Adapters translate library errors (PyGithub, wandb, subprocess) into these at the boundary.
A job (`senpai job ...`) that exits 3 (or 6, a full volume) failed on senpai's infrastructure, not
on its hypothesis: the wrapper relaunches it and spends no attempt (`senpai.wrapper.policy.infra_failure`).
An advisor job that exits 7 ran, but its model changed nothing: the wrapper wakes its events again
later, backing off, and tells humans once (`senpai.wrapper.policy`, `runtime.no_effect`).
"""

import contextlib
import errno
import importlib.util
from collections.abc import Iterator


class SenpaiError(Exception):
    """Base of every error senpai raises on purpose."""

    exit_code = 1


class ConfigError(SenpaiError):
    """Bad configuration or input; the message names the file, the field and what was expected."""

    exit_code = 2


class TransientError(SenpaiError):
    """A failure that may pass if retried later (network, HTTP 5xx, 429, rate limit)."""

    exit_code = 3

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class DiskFull(TransientError):
    """A volume senpai or a job writes to has no space left (ENOSPC, EDQUOT): senpai's failure, never
    the hypothesis's. `path` is a folder on the full volume (W&B dir, the fleet's job folder, the
    work copy, the forge's data). Exit 6, so the wrapper can tell it from other infrastructure."""

    exit_code = 6

    def __init__(self, path: str, what: str = "No space left on device") -> None:
        super().__init__(f"no space left on the volume of {path}: {what}")
        self.path = path


NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})  # the errnos of a full volume (and of a spent quota)


class PermanentError(SenpaiError):
    """A failure that retrying cannot fix."""

    exit_code = 4


class LedgerFormatError(PermanentError):
    """A senpai-* fenced block is invalid YAML or does not match its schema."""


class TransitionError(PermanentError):
    """A ledger state transition was asked for from a state that does not allow it."""


class MergeRefused(PermanentError):
    """The merge gate refused a merge; the message says which rule. `shown`: the message with none of
    the holdout's exact numbers (means, p-values), for an agent's eyes (the Ladder); the message itself
    goes into the record."""

    def __init__(self, message: str = "", shown: str | None = None) -> None:
        super().__init__(message)
        self.shown = message if shown is None else shown


class ApprovalRequired(MergeRefused):
    """The merge passes every other check but senpai.yaml's `approval` rules name it and no valid
    `/senpai approve <fingerprint>` stands: it waits (it is not closed). `fingerprint` (12 hex) is
    what a human must approve, `reasons` the rules that apply."""

    def __init__(self, fingerprint: str, reasons: list[str]) -> None:
        super().__init__(f"a human must approve this merge ({'; '.join(reasons)}): `/senpai approve {fingerprint}`")
        self.fingerprint = fingerprint
        self.reasons = reasons


class MergeConflict(PermanentError):
    """The forge could not merge the PR head into its base: the trees conflict (HTTP 405 with
    `mergeable: false`), or the head moved since it was verified (HTTP 409)."""


class MergeBlocked(PermanentError):
    """The base branch refuses the merge whatever senpai does: a branch protection rule (a required
    approving review or status check, an out-of-date head) that a human must satisfy or change
    (HTTP 405 with `mergeable_state: blocked` or `behind`). The message quotes the forge."""


class NotFound(PermanentError):
    """A forge object, tracker run or fleet job does not exist."""


class FileListTruncated(PermanentError):
    """The forge lists fewer files than the PR changes (GitHub lists at most 3,000), so no scope or
    protected-path check can be made from its list; the message gives both counts."""


class Forbidden(PermanentError):
    """The credentials (token, ServiceAccount) lack a permission; the message names it (HTTP 401/403)."""


class LedgerInconsistent(SenpaiError):
    """The ledger does not match the forge (a decision, merge or base head made by hand); the message
    lists each flag.  Raised by `senpai ledger --check`."""

    exit_code = 5


class NoEffect(SenpaiError):
    """An LLM advisor turn over events ended with no ledger effect (no hypothesis opened, nothing
    decided, no reply) and without finishing with a reason, even after a directive naming the tool
    to call: its status is `no_effect`. The message quotes the head of the model's last answer as
    neutral prose. Not transient (the same model answers the same way) and not permanent (a later
    turn may act): exit 7, which the wrapper backs off from (`senpai.wrapper.policy`)."""

    exit_code = 7


def cannot_listen(what: str, host: str, port: int, err: OSError, flag: str) -> ConfigError:
    """The ConfigError for a server that could not bind `host:port`: a port in use names the flag
    that picks another; other causes (a host not on this machine) keep the system's words."""
    if err.errno == errno.EADDRINUSE:
        return ConfigError(
            f"{what} cannot listen on {host}:{port}: the port is in use (another senpai, or another program?): "
            f"stop what listens there, or pick another {flag} (0 picks a free one)"
        )
    return ConfigError(f"{what} cannot listen on {host}:{port}: {err.strerror or err}: check the host and {flag}")


# extra of pyproject.toml -> the modules it installs that senpai imports (the demo needs none of them)
EXTRAS = {"agents": ("openhands.sdk", "openhands.tools", "litellm"), "kubernetes": ("kubernetes",)}


class MissingExtra(ConfigError):
    """An optional extra's package is not installed; the message names the extra to install. Exit 2."""

    def __init__(self, extra: str, what: str, module: str) -> None:
        super().__init__(
            f"{what} needs the {module!r} package, which is not installed: install it with pip install 'senpai[{extra}]'"
        )


def extra_missing(extra: str) -> str | None:
    """The first module of `EXTRAS[extra]` that cannot be imported, or None when the extra is installed.
    Looks without importing (importlib.util.find_spec imports at most a parent package)."""
    for module in EXTRAS[extra]:
        try:
            if importlib.util.find_spec(module) is None:
                return module
        except ModuleNotFoundError:  # the parent package is missing
            return module
    return None


@contextlib.contextmanager
def needs_extra(extra: str, what: str) -> Iterator[None]:
    """Turn a ModuleNotFoundError for one of `EXTRAS[extra]`'s packages, raised inside the block, into
    MissingExtra naming `what` ("the openhands runtime") and the extra; other import errors pass."""
    try:
        yield
    except ModuleNotFoundError as e:
        roots = {m.split(".")[0] for m in EXTRAS[extra]}
        if (e.name or "").split(".")[0] not in roots:
            raise
        raise MissingExtra(extra, what, e.name or "") from e
