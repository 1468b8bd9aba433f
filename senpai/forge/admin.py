"""Forge port, admin part: what is checked or set up once. Every method may raise TransientError
(retries exhausted), NotFound, or PermanentError."""

from typing import Protocol

from senpai.forge.base import Access, LabelSpec


class ForgeAdmin(Protocol):
    """What `senpai preflight`, init and the demo check or set up once: the token's access and the
    labels senpai uses (`create_repository`, which makes a repository rather than reading one, is
    the adapter's admin part's own, `senpai.forge.github.admin`, outside any port)."""

    def access(self) -> Access:
        """The token's login, scopes and repository permissions. Raises NotFound if the repo is not visible."""
        ...

    def ensure_labels(self, labels: dict[str, LabelSpec]) -> list[str]:
        """Create the missing labels (name -> colour and description); returns the names created.
        Existing labels are left as they are (a human may have restyled them).

        GitHub REST: POST /repos/{o}/{r}/labels.
        """
        ...

    def list_labels(self) -> dict[str, LabelSpec]:
        """The repository's labels (name -> colour and description; no description is "").

        GitHub REST: GET /repos/{o}/{r}/labels (every page).
        """
        ...
