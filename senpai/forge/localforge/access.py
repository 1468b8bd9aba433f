"""Who may do what on the local forge: tokens, site-wide roles, collaborators, author_association.

`tokens` maps the SHA-256 of a token to a login (the token itself is never stored); `roles` gives a
login its site-wide role: owner (admin of every repository), collaborator (write to every
repository), member (a member of the organisation the forge stands for: author_association MEMBER
everywhere, with read access only, as GitHub's default base role gives an org member) or read (may
open issues and PRs and comment); `collaborators` grants write on one repository (a member too:
GitHub's org member on a team with write).  `AccessStore` is the part of `Store` that reads and
writes these tables.
"""

import hashlib
import secrets
import time

ROLES = ("owner", "collaborator", "member", "read")


class AccessStore:
    """Tokens, roles and permissions; mixed into `Store`, whose `_tx`, `_one` and `user` it uses."""

    @staticmethod
    def _digest(token: str) -> str:
        return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()

    def add_token(self, login: str, role: str, token: str | None = None) -> str:
        """Give `login` the site-wide `role` (one of ROLES) and a new token (random unless given); return it."""
        if role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
        token = token or f"lf_{secrets.token_urlsafe(30)}"
        self.user(login)
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO roles VALUES (?, ?)", (login, role))
            db.execute("INSERT OR REPLACE INTO tokens VALUES (?, ?, ?)", (self._digest(token), login, time.time()))
        return token

    def revoke_token(self, token: str) -> None:
        """Forget `token` (its login and role stay); a no-op for an unknown token."""
        with self._tx() as db:
            db.execute("DELETE FROM tokens WHERE digest = ?", (self._digest(token),))

    def has_tokens(self) -> bool:
        return self._one("SELECT 1 FROM tokens LIMIT 1") is not None

    def token_login(self, token: str) -> str | None:
        """The login a token belongs to; None for an unknown token."""
        row = self._one("SELECT login FROM tokens WHERE digest = ?", self._digest(token))
        return row["login"] if row else None

    def role(self, login: str) -> str:
        """The site-wide role of `login` ("read" unless a token gave it another)."""
        row = self._one("SELECT role FROM roles WHERE login = ?", login)
        return row["role"] if row else "read"

    def find_user(self, login: str) -> dict | None:
        return self._one("SELECT * FROM users WHERE login = ?", login)

    def permission(self, repo: dict, login: str | None) -> str | None:
        """`login`'s access to `repo`: "admin", "write", "read", or None (anonymous)."""
        if login is None:
            return None
        role = self.role(login)
        if login == repo["owner"] or role == "owner":
            return "admin"
        if role == "collaborator" or self._one("SELECT 1 FROM collaborators WHERE repo_id = ? AND login = ?", repo["id"], login):
            return "write"
        return "read"

    def add_collaborator(self, repo_id: int, login: str) -> bool:
        """Add `login`; False if it already was a collaborator."""
        with self._tx() as db:
            cur = db.execute("INSERT OR IGNORE INTO collaborators VALUES (?, ?)", (repo_id, login))
            return cur.rowcount > 0

    def association(self, repo: dict, login: str | None) -> str:
        """author_association of `login` on `repo`, as GitHub computes it: OWNER (the owner), MEMBER
        (role member, whatever its access), COLLABORATOR (write access), CONTRIBUTOR (authored a
        merged PR), else NONE."""
        if login is None:
            return "NONE"
        if login == repo["owner"]:
            return "OWNER"
        if self.role(login) == "member":
            return "MEMBER"
        if self.permission(repo, login) in ("admin", "write"):
            return "COLLABORATOR"
        merged = "SELECT 1 FROM issues WHERE repo_id = ? AND user = ? AND is_pull = 1 AND merged = 1"
        merged = self._one(merged, repo["id"], login)
        return "CONTRIBUTOR" if merged else "NONE"
