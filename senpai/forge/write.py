"""Forge port, writing part: what changes one repository. Every method may raise TransientError
(retries exhausted), NotFound, or PermanentError."""

from typing import Literal, Protocol

from senpai.forge.base import Comment, Issue, PullRequest


class ForgeWriter(Protocol):
    """What changes one repository: PRs, labels, merges, comments and issues. Held, with the reading
    part (`senpai.forge.port.ForgeReadWrite`), only by `senpai.ledger.transitions`, `replies` and
    `escalation`, the wrapper's Dispatcher and lease, and the jobs (which write through
    `transitions`); import contracts keep the reading modules and the wrapper's decide step from
    this module and from them."""

    def create_pull(self, title: str, body: str, head: str, base: str, labels: list[str]) -> PullRequest:
        """GitHub REST: POST /repos/{o}/{r}/pulls, then POST .../issues/{n}/labels."""
        ...

    def update_pull(self, number: int, *, body: str | None = None, state: Literal["open", "closed"] | None = None) -> PullRequest:
        """GitHub REST: PATCH /repos/{o}/{r}/pulls/{n}."""
        ...

    def set_labels(self, number: int, labels: list[str]) -> None:
        """Replace the labels of issue/PR `number`. GitHub REST: PUT /repos/{o}/{r}/issues/{n}/labels."""
        ...

    def close_with_labels(self, number: int, labels: list[str]) -> None:
        """Close issue/PR `number` and replace its labels, in one request (a close and its final labels
        land together). GitHub REST: PATCH /repos/{o}/{r}/issues/{n} with state and labels."""
        ...

    def merge_pull(self, number: int, message: str, sha: str) -> str:
        """Merge (a real merge commit) of head `sha`, the head that was verified, and return its sha.

        GitHub REST: PUT /repos/{o}/{r}/pulls/{n}/merge with `sha`: a head that moved meanwhile is
        refused (409).  Raises MergeConflict when the head moved or conflicts with the base,
        MergeBlocked when the base's protection refuses the merge (a required review or status
        check: a human must act), TransientError when the forge cannot tell yet.
        """
        ...

    def create_comment(self, number: int, body: str) -> Comment:
        """GitHub REST: POST /repos/{o}/{r}/issues/{n}/comments."""
        ...

    def create_issue(self, title: str, body: str, labels: list[str]) -> Issue:
        """GitHub REST: POST /repos/{o}/{r}/issues."""
        ...

    def update_issue(self, number: int, body: str) -> None:
        """Replace the body of issue `number`. GitHub REST: PATCH /repos/{o}/{r}/issues/{n}."""
        ...
