"""One error tree for senpai, each branch with its own exit status.

    SenpaiError                      (exit 1 only if it escapes uncategorised)
    ├── ConfigError                  exit 2: bad senpai.yaml / harness config / CLI input
    ├── TransientError               exit 3 once retries run out: network, 5xx, rate limit
    ├── PermanentError               exit 4: the request can never succeed as asked
    │   ├── LedgerFormatError        a senpai-* block is not valid YAML or fails its schema
    │   ├── TransitionError          a label transition's precondition does not hold
    │   ├── MergeRefused             the merge gate refused (protected path, NaN, noise floor)
    │   │   └── ApprovalRequired     it passes but waits for a human's `/senpai approve <fingerprint>`
    │   ├── MergeConflict            the forge could not merge the head into the base
    │   ├── NotFound                 a forge object, run or job does not exist
    │   ├── FileListTruncated        the forge lists only part of a PR's files (GitHub: 3,000)
    │   └── Forbidden                the credentials lack a permission (HTTP 401/403)
    └── LedgerInconsistent           exit 5: `senpai ledger --check` found hand-made changes

Adapters translate library errors (PyGithub, wandb, subprocess) into these at the boundary.
A job (`senpai job ...`) that exits 3 failed on senpai's infrastructure, not on its hypothesis:
the wrapper relaunches it and spends no attempt (`senpai.wrapper.policy.infra_failure`).
"""


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


class PermanentError(SenpaiError):
    """A failure that retrying cannot fix."""

    exit_code = 4


class LedgerFormatError(PermanentError):
    """A senpai-* fenced block is invalid YAML or does not match its schema."""


class TransitionError(PermanentError):
    """A ledger state transition was asked for from a state that does not allow it."""


class MergeRefused(PermanentError):
    """The merge gate refused a merge; the message says which rule."""


class ApprovalRequired(MergeRefused):
    """The merge passes every other check but senpai.yaml's `approval` rules name it and no valid
    `/senpai approve <fingerprint>` stands: it waits (it is not closed). `fingerprint` (12 hex) is
    what a human must approve, `reasons` the rules that apply."""

    def __init__(self, fingerprint: str, reasons: list[str]) -> None:
        super().__init__(f"a human must approve this merge ({'; '.join(reasons)}): `/senpai approve {fingerprint}`")
        self.fingerprint = fingerprint
        self.reasons = reasons


class MergeConflict(PermanentError):
    """The forge could not merge the PR head into its base (HTTP 405/409)."""


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
