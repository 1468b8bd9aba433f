"""SQLite store of the local forge: users, repos, collaborators, issues and PRs, labels, comments.

One file, `<data_dir>/forge.sqlite3` (WAL), so a new server on the same folder sees everything.
Times are float seconds since the epoch (UTC) at full precision: the wire shows whole seconds, but
sorting uses the full value, so the most recent change is always first.  Issues and PRs share one
table and one number sequence per repository, like GitHub; a PR row has `is_pull=1` and its
head/base refs.  `head_sha`/`base_sha` of an open PR are the last values seen (live values come
from git); for a closed PR they are frozen at close or merge.  Every change to an issue, its
labels or its comments bumps its `updated_at`.

Tokens, roles and collaborators are read and written by the `AccessStore` part (access.py).
`pending_merges` journals a merge between its git update and its row
update, so a restart finishes it.  `reviews` holds PR reviews (`reviews.py`).  At most one open PR
exists per (head, base) (a unique index).
"""

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from senpai.forge.localforge.access import AccessStore

SCHEMA_VERSION = 2
SCHEMA = """
CREATE TABLE IF NOT EXISTS users(
  id INTEGER PRIMARY KEY, login TEXT NOT NULL UNIQUE, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS repos(
  id INTEGER PRIMARY KEY, owner TEXT NOT NULL, name TEXT NOT NULL, private INTEGER NOT NULL,
  description TEXT, default_branch TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL,
  UNIQUE(owner, name));
CREATE TABLE IF NOT EXISTS collaborators(
  repo_id INTEGER NOT NULL, login TEXT NOT NULL, PRIMARY KEY(repo_id, login));
CREATE TABLE IF NOT EXISTS issues(
  id INTEGER PRIMARY KEY, repo_id INTEGER NOT NULL, number INTEGER NOT NULL, title TEXT NOT NULL,
  body TEXT, state TEXT NOT NULL DEFAULT 'open', state_reason TEXT, user TEXT NOT NULL,
  is_pull INTEGER NOT NULL DEFAULT 0, head_ref TEXT, base_ref TEXT, head_sha TEXT, base_sha TEXT,
  merged INTEGER NOT NULL DEFAULT 0, merge_commit_sha TEXT, merged_by TEXT, merged_at REAL,
  closed_at REAL, closed_by TEXT, created_at REAL NOT NULL, updated_at REAL NOT NULL,
  UNIQUE(repo_id, number));
CREATE INDEX IF NOT EXISTS issues_updated ON issues(repo_id, updated_at);
CREATE TABLE IF NOT EXISTS labels(
  id INTEGER PRIMARY KEY, repo_id INTEGER NOT NULL, name TEXT NOT NULL COLLATE NOCASE,
  color TEXT NOT NULL, description TEXT, UNIQUE(repo_id, name));
CREATE TABLE IF NOT EXISTS issue_labels(
  issue_id INTEGER NOT NULL, label_id INTEGER NOT NULL, PRIMARY KEY(issue_id, label_id));
CREATE TABLE IF NOT EXISTS comments(
  id INTEGER PRIMARY KEY, repo_id INTEGER NOT NULL, issue_id INTEGER NOT NULL, user TEXT NOT NULL,
  body TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS comments_issue ON comments(issue_id, id);
CREATE TABLE IF NOT EXISTS roles(login TEXT PRIMARY KEY, role TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tokens(
  digest TEXT PRIMARY KEY, login TEXT NOT NULL, created_at REAL NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS one_open_pull ON issues(repo_id, head_ref, base_ref)
  WHERE is_pull = 1 AND state = 'open';
CREATE TABLE IF NOT EXISTS pending_merges(
  issue_id INTEGER PRIMARY KEY, commit_sha TEXT NOT NULL, merged_by TEXT NOT NULL,
  head_sha TEXT NOT NULL, base_sha TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS reviews(
  id INTEGER PRIMARY KEY, issue_id INTEGER NOT NULL, user TEXT NOT NULL, state TEXT NOT NULL,
  body TEXT NOT NULL, commit_id TEXT NOT NULL, submitted_at REAL NOT NULL);
"""

_ISSUE_SELECT = "SELECT i.*, (SELECT COUNT(*) FROM comments c WHERE c.issue_id = i.id) AS comments FROM issues i"
_COMMENT_SELECT = "SELECT c.*, i.number AS issue_number FROM comments c JOIN issues i ON i.id = c.issue_id"
_SORT = {
    "created": "i.created_at",
    "updated": "i.updated_at",
    "comments": "comments",
    "popularity": "comments",
    "long-running": "i.created_at",
}
DEFAULT_LABEL_COLOR = "ededed"


@dataclass
class IssueQuery:
    """Filters of GET .../issues and GET .../pulls (`pulls=True` keeps PRs only)."""

    state: str = "open"
    labels: list[str] = field(default_factory=list)
    since: float | None = None
    sort: str = "created"
    direction: str = "desc"
    pulls: bool = False
    creator: str | None = None
    head: str | None = None
    base: str | None = None
    limit: int = 30
    offset: int = 0


class Store(AccessStore):
    """Thread-safe access to the SQLite file: one connection, one lock, one transaction per call."""

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._db.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        self._last = 0.0
        self._users: dict[str, dict] = {}
        with self._tx() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(SCHEMA)
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._db:
            yield self._db

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def now(self) -> float:
        """Strictly increasing wall-clock seconds, so two changes never share an updated_at."""
        with self._lock:
            self._last = max(time.time(), self._last + 1e-6)
            return self._last

    def _one(self, sql: str, *args: Any) -> dict | None:
        with self._tx() as db:
            row = db.execute(sql, args).fetchone()
        return dict(row) if row else None

    def _all(self, sql: str, *args: Any) -> list[dict]:
        with self._tx() as db:
            return [dict(r) for r in db.execute(sql, args).fetchall()]

    # ---------------------------------------------------------------- users and repositories

    def user(self, login: str) -> dict:
        """The user `login`, registered on first sight (rows are cached: users never change)."""
        if login in self._users:
            return self._users[login]
        with self._tx() as db:
            db.execute("INSERT OR IGNORE INTO users(login, created_at) VALUES (?, ?)", (login, time.time()))
            row = dict(db.execute("SELECT * FROM users WHERE login = ?", (login,)).fetchone())
        self._users[login] = row
        return row

    def create_repo(self, owner: str, name: str, private: bool, description: str | None) -> dict | None:
        """Insert a repository; None when `owner/name` already exists."""
        now = self.now()
        with self._tx() as db:
            cur = db.execute(
                "INSERT OR IGNORE INTO repos(owner, name, private, description, default_branch, created_at,"
                " updated_at) VALUES (?, ?, ?, ?, 'main', ?, ?)",
                (owner, name, int(private), description, now, now),
            )
            if cur.rowcount == 0:
                return None
        return self.repo(owner, name)

    def repo(self, owner: str, name: str) -> dict | None:
        return self._one("SELECT * FROM repos WHERE owner = ? AND name = ?", owner, name)

    # ---------------------------------------------------------------- issues and pull requests

    def create_issue(self, repo_id: int, user: str, title: str, body: str | None, pull: dict | None = None) -> dict:
        """New issue (or PR when `pull` has head_ref/base_ref/head_sha/base_sha) with the next number."""
        now = self.now()
        pull = pull or {}
        with self._tx() as db:
            number = db.execute("SELECT COALESCE(MAX(number), 0) + 1 FROM issues WHERE repo_id = ?", (repo_id,)).fetchone()[0]
            db.execute(
                "INSERT INTO issues(repo_id, number, title, body, user, is_pull, head_ref, base_ref, head_sha,"
                " base_sha, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    repo_id,
                    number,
                    title,
                    body,
                    user,
                    int(bool(pull)),
                    pull.get("head_ref"),
                    pull.get("base_ref"),
                    pull.get("head_sha"),
                    pull.get("base_sha"),
                    now,
                    now,
                ),
            )
        return self.issue(repo_id, number)  # type: ignore[return-value]

    def issue(self, repo_id: int, number: int) -> dict | None:
        return self._one(f"{_ISSUE_SELECT} WHERE i.repo_id = ? AND i.number = ?", repo_id, number)

    def list_issues(self, repo_id: int, q: IssueQuery) -> tuple[list[dict], int]:
        """One page of issues matching `q`, and the total count."""
        where, args = ["i.repo_id = ?"], [repo_id]
        if q.state != "all":
            where.append("i.state = ?")
            args.append(q.state)
        if q.pulls:
            where.append("i.is_pull = 1")
        for name in q.labels:
            where.append(
                "EXISTS (SELECT 1 FROM issue_labels il JOIN labels l ON l.id = il.label_id"
                " WHERE il.issue_id = i.id AND l.name = ?)"
            )
            args.append(name)
        for column, value in (
            ("i.updated_at >=", q.since),
            ("i.user =", q.creator),
            ("i.head_ref =", q.head),
            ("i.base_ref =", q.base),
        ):
            if value is not None:
                where.append(f"{column} ?")
                args.append(value)
        sql_where = " WHERE " + " AND ".join(where)
        order = "ASC" if q.direction == "asc" else "DESC"
        total = self._one(f"SELECT COUNT(*) AS n FROM issues i{sql_where}", *args)["n"]  # type: ignore[index]
        rows = self._all(
            f"{_ISSUE_SELECT}{sql_where} ORDER BY {_SORT.get(q.sort, 'i.created_at')} {order}, i.id {order} LIMIT ? OFFSET ?",
            *args,
            q.limit,
            q.offset,
        )
        return rows, total

    def update_issue(self, issue_id: int, **fields: Any) -> None:
        """Set columns of an issue and bump its updated_at."""
        fields["updated_at"] = self.now()
        assignments = ", ".join(f"{name} = ?" for name in fields)
        with self._tx() as db:
            db.execute(f"UPDATE issues SET {assignments} WHERE id = ?", (*fields.values(), issue_id))

    def touch(self, issue_id: int) -> None:
        self.update_issue(issue_id)

    # ---------------------------------------------------------------- merges, journalled

    def begin_merge(self, issue_id: int, commit_sha: str, login: str, head_sha: str, base_sha: str) -> None:
        """Journal a merge commit about to become the base's tip (before the git update)."""
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO pending_merges VALUES (?, ?, ?, ?, ?)", (issue_id, commit_sha, login, head_sha, base_sha)
            )

    def drop_merge(self, issue_id: int) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM pending_merges WHERE issue_id = ?", (issue_id,))

    def pending_merges(self) -> list[dict]:
        return self._all("SELECT * FROM pending_merges")

    def finish_merge(self, issue_id: int, commit_sha: str, login: str | None, head_sha: str, base_sha: str) -> None:
        """Mark the PR merged and clear its journal entry, in one transaction."""
        now = self.now()
        with self._tx() as db:
            db.execute(
                "UPDATE issues SET state = 'closed', merged = 1, merged_at = ?, merged_by = ?, closed_at = ?,"
                " closed_by = ?, merge_commit_sha = ?, head_sha = ?, base_sha = ?, updated_at = ? WHERE id = ?",
                (now, login, now, login, commit_sha, head_sha, base_sha, now, issue_id),
            )
            db.execute("DELETE FROM pending_merges WHERE issue_id = ?", (issue_id,))

    def all_open_pulls(self) -> list[dict]:
        return self._all(
            "SELECT i.*, r.owner, r.name FROM issues i JOIN repos r ON r.id = i.repo_id WHERE i.is_pull = 1 AND i.state = 'open'"
        )

    def open_pulls(self, repo_id: int) -> list[dict]:
        return self._all("SELECT * FROM issues WHERE repo_id = ? AND is_pull = 1 AND state = 'open'", repo_id)

    # ---------------------------------------------------------------- labels

    def labels(self, repo_id: int, limit: int, offset: int) -> tuple[list[dict], int]:
        total = self._one("SELECT COUNT(*) AS n FROM labels WHERE repo_id = ?", repo_id)["n"]  # type: ignore[index]
        rows = self._all("SELECT * FROM labels WHERE repo_id = ? ORDER BY name LIMIT ? OFFSET ?", repo_id, limit, offset)
        return rows, total

    def label(self, repo_id: int, name: str) -> dict | None:
        return self._one("SELECT * FROM labels WHERE repo_id = ? AND name = ?", repo_id, name)

    def create_label(self, repo_id: int, name: str, color: str, description: str | None) -> dict | None:
        """Insert a label; None when one with that name (case-insensitive) exists."""
        with self._tx() as db:
            cur = db.execute(
                "INSERT OR IGNORE INTO labels(repo_id, name, color, description) VALUES (?, ?, ?, ?)",
                (repo_id, name, color, description),
            )
            if cur.rowcount == 0:
                return None
        return self.label(repo_id, name)

    def labels_of(self, issue_ids: list[int]) -> dict[int, list[dict]]:
        """Labels of each issue, by issue id, sorted by name."""
        out: dict[int, list[dict]] = {i: [] for i in issue_ids}
        if not issue_ids:
            return out
        marks = ",".join("?" * len(issue_ids))
        rows = self._all(
            "SELECT il.issue_id, l.* FROM issue_labels il JOIN labels l ON l.id = il.label_id"
            f" WHERE il.issue_id IN ({marks}) ORDER BY l.name",
            *issue_ids,
        )
        for row in rows:
            out[row.pop("issue_id")].append(row)
        return out

    def add_labels(self, issue: dict, names: list[str], replace: bool = False) -> None:
        """Attach labels (created with the default colour if missing, as GitHub does); bump the issue."""
        with self._tx() as db:
            if replace:
                db.execute("DELETE FROM issue_labels WHERE issue_id = ?", (issue["id"],))
            for name in names:
                db.execute(
                    "INSERT OR IGNORE INTO labels(repo_id, name, color) VALUES (?, ?, ?)",
                    (issue["repo_id"], name, DEFAULT_LABEL_COLOR),
                )
                db.execute(
                    "INSERT OR IGNORE INTO issue_labels SELECT ?, id FROM labels WHERE repo_id = ? AND name = ?",
                    (issue["id"], issue["repo_id"], name),
                )
        self.touch(issue["id"])

    def remove_label(self, issue: dict, name: str) -> bool:
        """Detach label `name`; False if the issue did not have it."""
        with self._tx() as db:
            cur = db.execute(
                "DELETE FROM issue_labels WHERE issue_id = ? AND label_id IN"
                " (SELECT id FROM labels WHERE repo_id = ? AND name = ?)",
                (issue["id"], issue["repo_id"], name),
            )
        if cur.rowcount:
            self.touch(issue["id"])
        return cur.rowcount > 0

    # ---------------------------------------------------------------- comments

    def create_comment(self, issue: dict, user: str, body: str) -> dict:
        now = self.now()
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO comments(repo_id, issue_id, user, body, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                (issue["repo_id"], issue["id"], user, body, now, now),
            )
        self.touch(issue["id"])
        return self.comment(issue["repo_id"], cur.lastrowid)  # type: ignore[arg-type,return-value]

    def comments(self, issue_id: int, since: float | None, limit: int, offset: int) -> tuple[list[dict], int]:
        """One page of an issue's comments, oldest first, and the total count."""
        since_sql, args = ("", [issue_id]) if since is None else (" AND c.updated_at >= ?", [issue_id, since])
        where = f" WHERE c.issue_id = ?{since_sql}"
        total = self._one(f"SELECT COUNT(*) AS n FROM comments c{where}", *args)["n"]  # type: ignore[index]
        rows = self._all(f"{_COMMENT_SELECT}{where} ORDER BY c.id LIMIT ? OFFSET ?", *args, limit, offset)
        return rows, total

    def comment(self, repo_id: int, comment_id: int) -> dict | None:
        return self._one(f"{_COMMENT_SELECT} WHERE c.repo_id = ? AND c.id = ?", repo_id, comment_id)

    def update_comment(self, comment: dict, body: str) -> dict:
        with self._tx() as db:
            db.execute("UPDATE comments SET body = ?, updated_at = ? WHERE id = ?", (body, self.now(), comment["id"]))
        self.touch(comment["issue_id"])
        return self.comment(comment["repo_id"], comment["id"])  # type: ignore[return-value]

    def delete_comment(self, comment: dict) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM comments WHERE id = ?", (comment["id"],))
        self.touch(comment["issue_id"])

    # ---------------------------------------------------------------- reviews

    def create_review(self, issue: dict, user: str, state: str, body: str, commit_id: str) -> dict:
        """Record a submitted review of PR `issue` (state APPROVED, CHANGES_REQUESTED or COMMENTED)."""
        now = self.now()
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO reviews(issue_id, user, state, body, commit_id, submitted_at) VALUES (?, ?, ?, ?, ?, ?)",
                (issue["id"], user, state, body, commit_id, now),
            )
        self.touch(issue["id"])
        return self._one("SELECT * FROM reviews WHERE id = ?", cur.lastrowid)  # type: ignore[return-value]

    def reviews(self, issue_id: int) -> list[dict]:
        """The reviews of a PR, oldest first."""
        return self._all("SELECT * FROM reviews WHERE issue_id = ? ORDER BY id", issue_id)
