"""Per-request context of the local forge and the domain rules the routes share.

`Ctx` bundles the store, the git repositories, the renderer and the acting login.  The rules here
are those that more than one route needs: finding a repo/issue or answering 404, the live head and
base of a PR, opening/closing an issue or PR, and noticing pushes to PR heads.
"""

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Request

from senpai.forge.localforge.git import GitRepos
from senpai.forge.localforge.ratelimit import NO_WRITE_LIMITS, WRITE_METHODS, WriteLimits
from senpai.forge.localforge.render import Renderer
from senpai.forge.localforge.store import Store
from senpai.forge.localforge.web import (
    ApiError,
    forbidden,
    invalid,
    not_found,
    presented_token,
    root_url,
    unauthenticated,
)

_LEVELS = {"read": 1, "write": 2, "admin": 3}


@dataclass
class Ctx:
    """What a route needs: storage, git, rendering and who is asking (`login` None: anonymous)."""

    store: Store
    git: GitRepos
    render: Renderer
    login: str | None
    limits: WriteLimits = NO_WRITE_LIMITS  # the secondary limits the routes check (the comment cap)
    approvals: int = 0  # approving reviews a PR into a protected branch needs (`reviews.blocked`)

    @property
    def user(self) -> str:
        """The acting login of a write; ApiError 401 when anonymous."""
        if self.login is None:
            raise unauthenticated()
        return self.login

    def require(self, repo: dict, level: str, author: str | None = None) -> None:
        """ApiError 401 (anonymous) or 403 unless the caller has `level` ("read", "write", "admin")
        on `repo`, or is `author` (the author of what is being changed)."""
        login = self.user
        if author is not None and login == author:
            return
        if not self.can(repo, level):
            raise forbidden("Must have admin rights to Repository.") if level == "admin" else forbidden()

    def repo(self, owner: str, name: str) -> dict:
        """The repository row, or ApiError 404 (also for a private one the caller cannot write to,
        as GitHub hides a private repository from those without access)."""
        repo = self.store.repo(owner, name)
        if repo is None or (repo["private"] and not self.can(repo, "write")):
            raise not_found()
        return repo

    def can(self, repo: dict, level: str) -> bool:
        """Whether the caller (maybe anonymous) has `level` ("read", "write", "admin") on `repo`."""
        return _LEVELS.get(self.store.permission(repo, self.login) or "", 0) >= _LEVELS[level]

    def path(self, repo: dict) -> Path:
        return self.git.path(repo["owner"], repo["name"])

    def issue(self, repo: dict, number: int) -> dict:
        """The issue or PR row `number`, or ApiError 404."""
        row = self.store.issue(repo["id"], number)
        if row is None:
            raise not_found()
        return row

    def pull(self, repo: dict, number: int) -> dict:
        row = self.issue(repo, number)
        if not row["is_pull"]:
            raise not_found()
        return row

    def shas(self, row: dict, branches: dict[str, str]) -> tuple[str | None, str | None]:
        """(head, base) sha of a PR: live branch tips while open, frozen values once closed."""
        if row["state"] != "open":
            return row["head_sha"], row["base_sha"]
        return branches.get(row["head_ref"], row["head_sha"]), branches.get(row["base_ref"], row["base_sha"])

    def set_state(self, repo: dict, row: dict, state: str, reason: str | None = None) -> dict:
        """Columns that move `row` to `state` ("open"/"closed"); {} if it is already there."""
        if state not in ("open", "closed"):
            raise invalid("Issue", "state")
        if state == row["state"]:
            return {}
        if state == "closed":
            fields = {
                "state": "closed",
                "closed_at": self.store.now(),
                "closed_by": self.user,
                "state_reason": None if row["is_pull"] else (reason or "completed"),
            }
            if row["is_pull"]:
                head, base = self.shas(row, self.git.branches(self.path(repo)))
                fields.update(head_sha=head, base_sha=base)
            return fields
        if row["merged"]:
            raise ApiError(422, "state cannot be changed. The pull request has been merged.")
        if row["is_pull"] and self.git.branch_sha(self.path(repo), row["head_ref"]) is None:
            raise invalid("PullRequest", "head", message="the head branch no longer exists")
        return {"state": "open", "closed_at": None, "closed_by": None, "state_reason": None if row["is_pull"] else "reopened"}

    def sync_heads(self, repo: dict) -> None:
        """After a push: record new head shas of open PRs, bumping their updated_at."""
        branches = self.git.branches(self.path(repo))
        for row in self.store.open_pulls(repo["id"]):
            live = branches.get(row["head_ref"])
            if live is not None and live != row["head_sha"]:
                self.store.update_issue(row["id"], head_sha=live)


def get_ctx(request: Request) -> Ctx:
    """FastAPI dependency: the context of this request, acting as the token's user.

    An unknown token answers 401 "Bad credentials"; a REST write without a token answers 401
    "Requires authentication" (git smart HTTP decides per service in its own route); a REST write
    past its user's write rate answers 403 with Retry-After (`ratelimit.WriteRate`).
    """
    state = request.app.state
    token = presented_token(request.headers.get("authorization"))
    login = None if token is None else state.store.token_login(token)
    if token is not None and login is None:
        raise unauthenticated("Bad credentials")
    rest = not request.url.path.startswith("/git/")
    if login is None and request.method not in ("GET", "HEAD") and rest:
        raise unauthenticated()
    if login is not None and rest and request.method in WRITE_METHODS and state.write_rate is not None:
        state.write_rate.take(login)
    render = Renderer(root_url(request), state.store)
    return Ctx(state.store, state.git, render, login, state.write_limits, state.required_approvals)


CtxDep = Annotated[Ctx, Depends(get_ctx)]


def parse_since(value: str | None) -> float | None:
    """GitHub's `since` (ISO 8601) -> epoch seconds. Raises ApiError 422."""
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise invalid("Issue", "since") from exc
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
