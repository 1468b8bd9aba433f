"""The GitHub adapter's writing part: the port's `ForgeWriter` through PyGithub, with idempotent retries.

Writes that are not idempotent (POST a comment, a PR, an issue) may have been applied even when
their answer was lost (a reset, a 5xx after the commit).  Before such a write is retried, the
forge is searched for it by its identity: a comment or issue by its `<!-- senpai:... -->` marker
(or its whole body if it has none) among the bot's own, a PR by its head branch.  If found, that
object is the answer and nothing is posted again.  Before each write the reading part is told
(`written`), so that none of its cached pages hides the write from a later read.
"""

import re
from collections.abc import Callable
from typing import Literal, TypeVar

from senpai.errors import MergeBlocked, MergeConflict, TransientError
from senpai.forge.base import Comment, Issue, PullRequest
from senpai.forge.github.http import GitHubHttp, _comment, _is_pull, _issue, _pull

T = TypeVar("T")
MARKER = re.compile(r"<!-- senpai:[^>]{1,200} -->")


def _identity(body: str) -> str:
    """What identifies a comment or issue body on the forge: its last senpai marker, else the body."""
    markers = MARKER.findall(body)
    return markers[-1] if markers else body.strip()


def _same(body: str | None, key: str) -> bool:
    """True if `body` is the text `_identity` named `key`: it ends in that marker (senpai's texts end
    in theirs; a marker's text elsewhere, such as a model's words quoted raw in a record's YAML, is
    not it), or it is that text without a marker."""
    text = (body or "").strip()
    return text.endswith(key) if MARKER.fullmatch(key) else text == key


class GitHubWriter:
    """`ForgeWriter` over the repository of `http`. `written(number, comments=False)` is called before
    each write to issue or PR `number` (None: a new one): the reading part's `GitHubReader.written`, which
    drops the validators of the cached pages the write changes."""

    def __init__(self, http: GitHubHttp, written: Callable[..., None]) -> None:
        self.settings = http.settings
        self._http, self._repo = http, http.repo
        self._written = written

    def _write(self, what: str, create: Callable[[], T], find: Callable[[], T | None]) -> T:
        """A non-idempotent write (POST): before each retry, `find` looks for what an earlier try
        may have applied although its answer was lost; if it finds it, that is the answer."""
        tried = False

        def once() -> T:
            nonlocal tried
            if tried and (found := find()) is not None:
                return found
            tried = True
            return create()

        return self._http.call(what, once)

    def create_pull(self, title: str, body: str, head: str, base: str, labels: list[str]) -> PullRequest:
        """GitHub REST: POST /repos/{o}/{r}/pulls, then POST .../issues/{n}/labels.  A retry first looks
        for an open PR from `head` (GET .../pulls?head=owner:head), so a lost answer opens no second PR."""
        self._written(None)

        def find() -> PullRequest | None:
            owner = self.settings.repo.split("/", 1)[0]
            found = [p for p in self._repo.get_pulls(state="open", head=f"{owner}:{head}", base=base) if p.head.ref == head]
            return _pull(found[0]) if found else None

        pr = self._write(
            f"create pull {head}->{base}",
            lambda: _pull(self._repo.create_pull(base=base, head=head, title=title, body=body)),
            find,
        )
        if not labels:
            return pr
        self._http.call(f"label pull #{pr.number}", lambda: self._repo.get_issue(pr.number).add_to_labels(*labels))
        return pr.model_copy(update={"labels": list(dict.fromkeys([*pr.labels, *labels]))})

    def update_pull(self, number: int, *, body: str | None = None, state: Literal["open", "closed"] | None = None) -> PullRequest:
        changes = {key: value for key, value in (("body", body), ("state", state)) if value is not None}
        self._written(number)

        def run() -> PullRequest:
            pr = self._repo.get_pull(number)
            if changes:
                pr.edit(**changes)  # PATCH; PyGithub refreshes the object from the answer
            return _pull(pr)

        return self._http.call(f"update pull #{number}", run)

    def set_labels(self, number: int, labels: list[str]) -> None:
        self._written(number)
        self._http.call(f"set labels of #{number}", lambda: self._repo.get_issue(number).set_labels(*labels))

    def close_with_labels(self, number: int, labels: list[str]) -> None:
        self._written(number)
        self._http.call(f"close #{number}", lambda: self._repo.get_issue(number).edit(state="closed", labels=labels))

    def merge_pull(self, number: int, message: str, sha: str) -> str:
        """Merge commit sha of merging head `sha` (GitHub's `sha` parameter: a moved head is refused).

        Idempotent: a PR already merged at `sha` (e.g. by a retried request) returns its merge sha.
        A refusal (HTTP 405/409) is told by its cause (`_refusal`).
        """
        self._written(number)
        try:
            status = self._http.call(
                f"merge pull #{number}",
                lambda: self._repo.get_pull(number).merge(commit_message=message, merge_method="merge", sha=sha),
                merge=True,
            )
        except MergeConflict as refused:
            return self._refusal(number, sha, refused)
        return status.sha

    def _refusal(self, number: int, sha: str, refused: MergeConflict) -> str:
        """The merge of PR `number` at `sha` was refused: read the PR again (GitHub REST: GET
        /repos/{o}/{r}/pulls/{n}, its `mergeable` and `mergeable_state`) to say why. Returns the merge
        sha of a PR already merged at `sha`. Raises MergeConflict if the PR is no longer open at `sha`
        or its trees conflict with the base (`mergeable: false`, state `dirty`); MergeBlocked if the
        base's protection refuses it (state `blocked`: a required review or status check; `behind`:
        the base asks for an up-to-date head); TransientError otherwise (GitHub still computing
        `mergeable`, or the base moved during the merge): trying again later may merge it."""
        url = f"/repos/{self.settings.repo}/pulls/{number}"
        _, _, data = self._http.call(f"get pull #{number}", lambda: self._http.get(url, None))
        pr = _pull(data)
        if pr.merged and pr.merge_commit_sha and pr.head_sha == sha:
            return pr.merge_commit_sha
        mergeable, state = data.get("mergeable"), data.get("mergeable_state")
        if pr.state != "open" or pr.head_sha != sha or mergeable is False or state == "dirty":
            raise refused
        if state in ("blocked", "behind"):
            raise MergeBlocked(f"{refused} (mergeable_state {state})") from refused
        raise TransientError(f"{refused} (mergeable {mergeable}, mergeable_state {state}): try again later") from refused

    def create_comment(self, number: int, body: str) -> Comment:
        """GitHub REST: POST .../issues/{n}/comments.  A retry first looks among the bot's comments on
        #number (GET .../issues/{n}/comments) for the body's marker, so a lost answer posts no duplicate."""
        key = _identity(body)
        self._written(number, comments=True)

        def find() -> Comment | None:
            comments = self._repo.get_issue(number).get_comments()
            mine = [c for c in comments if c.user.login == self._http.login and _same(c.body, key)]
            return _comment(mine[-1]) if mine else None

        return self._write(f"comment on #{number}", lambda: _comment(self._repo.get_issue(number).create_comment(body)), find)

    def create_issue(self, title: str, body: str, labels: list[str]) -> Issue:
        """GitHub REST: POST /repos/{o}/{r}/issues.  A retry first looks among the bot's issues (GET
        .../issues?state=all&creator=) for the body's marker, so a lost answer opens no second issue."""
        key = _identity(body)
        self._written(None)

        def find() -> Issue | None:
            issues = self._repo.get_issues(state="all", creator=self._http.login)
            mine = [i for i in issues if not _is_pull(i) and i.user.login == self._http.login and _same(i.body, key)]
            return _issue(mine[0]) if mine else None

        return self._write("create issue", lambda: _issue(self._repo.create_issue(title=title, body=body, labels=labels)), find)

    def update_issue(self, number: int, body: str) -> None:
        """GitHub REST: PATCH /repos/{o}/{r}/issues/{n} with `body` (idempotent: a retry writes the same)."""
        self._written(number)
        self._http.call(f"update issue #{number}", lambda: self._repo.get_issue(number).edit(body=body))
