"""GitHub-shaped JSON for the local forge's rows: users, repos, labels, issues, PRs, comments, refs.

Shapes follow GitHub's REST schemas (`simple-user`, `repository`, `label`, `issue`,
`pull-request-simple` / `pull-request`, `issue-comment`, `branch-with-protection`, `git-ref`,
`diff-entry`).  REST URLs are rooted at the server root (like api.github.com); `html_url`s use the
same root with GitHub's web paths (`/{owner}/{repo}/pull/{n}`), which the forge does not serve.
"""

import base64
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from senpai.forge.localforge.git import ChangedFile
from senpai.forge.localforge.store import Store

_REPO_LINKS = {
    "archive_url": "/{archive_format}{/ref}",
    "assignees_url": "/assignees{/user}",
    "blobs_url": "/git/blobs{/sha}",
    "branches_url": "/branches{/branch}",
    "collaborators_url": "/collaborators{/collaborator}",
    "comments_url": "/comments{/number}",
    "commits_url": "/commits{/sha}",
    "compare_url": "/compare/{base}...{head}",
    "contents_url": "/contents/{+path}",
    "contributors_url": "/contributors",
    "deployments_url": "/deployments",
    "downloads_url": "/downloads",
    "events_url": "/events",
    "forks_url": "/forks",
    "git_commits_url": "/git/commits{/sha}",
    "git_refs_url": "/git/refs{/sha}",
    "git_tags_url": "/git/tags{/sha}",
    "hooks_url": "/hooks",
    "issue_comment_url": "/issues/comments{/number}",
    "issue_events_url": "/issues/events{/number}",
    "issues_url": "/issues{/number}",
    "keys_url": "/keys{/key_id}",
    "labels_url": "/labels{/name}",
    "languages_url": "/languages",
    "merges_url": "/merges",
    "milestones_url": "/milestones{/number}",
    "notifications_url": "/notifications{?since,all,participating}",
    "pulls_url": "/pulls{/number}",
    "releases_url": "/releases{/id}",
    "stargazers_url": "/stargazers",
    "statuses_url": "/statuses/{sha}",
    "subscribers_url": "/subscribers",
    "subscription_url": "/subscription",
    "tags_url": "/tags",
    "teams_url": "/teams",
    "trees_url": "/git/trees{/sha}",
}
_USER_LINKS = {
    "followers_url": "/followers",
    "following_url": "/following{/other_user}",
    "gists_url": "/gists{/gist_id}",
    "starred_url": "/starred{/owner}{/repo}",
    "subscriptions_url": "/subscriptions",
    "organizations_url": "/orgs",
    "repos_url": "/repos",
    "events_url": "/events{/privacy}",
    "received_events_url": "/received_events",
}


def iso(ts: float | None) -> str | None:
    """Seconds since the epoch -> GitHub's `YYYY-MM-DDTHH:MM:SSZ` (UTC), None stays None."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def node_id(kind: str, ident: int | str) -> str:
    return base64.b64encode(f"{kind}_{ident}".encode()).decode().rstrip("=")


class Renderer:
    """Renders rows for one request; `root` is the server root the client used."""

    def __init__(self, root: str, store: Store) -> None:
        self.root = root
        self.store = store

    def api(self, repo: dict) -> str:
        return f"{self.root}/repos/{repo['owner']}/{repo['name']}"

    def web(self, repo: dict) -> str:
        return f"{self.root}/{repo['owner']}/{repo['name']}"

    def user(self, login: str | None, profile: bool = False) -> dict[str, Any] | None:
        """`simple-user`; with `profile`, the `public-user` fields of GET /user and GET /users/{u}."""
        if login is None:
            return None
        row = self.store.user(login)
        uid = row["id"]
        url = f"{self.root}/users/{login}"
        out = {
            "login": login,
            "id": uid,
            "node_id": node_id("U", uid),
            "avatar_url": f"{self.root}/avatars/{login}",
            "gravatar_id": "",
            "url": url,
            "html_url": f"{self.root}/{login}",
        }
        out.update({key: url + suffix for key, suffix in _USER_LINKS.items()})
        out.update({"type": "User", "site_admin": False, "user_view_type": "public"})
        if profile:
            out.update(
                {
                    "name": login,
                    "company": None,
                    "blog": "",
                    "location": None,
                    "email": None,
                    "hireable": None,
                    "bio": None,
                    "twitter_username": None,
                    "public_repos": 0,
                    "public_gists": 0,
                    "followers": 0,
                    "following": 0,
                    "created_at": iso(row["created_at"]),
                    "updated_at": iso(row["created_at"]),
                }
            )
        return out

    def collaborator(self, login: str, permission: str) -> dict[str, Any]:
        """`collaborator`: a `simple-user` with its `permissions` and `role_name` (admin, write, read)."""
        level = {"read": 1, "write": 2, "admin": 3}[permission]
        rights = {"pull": level >= 1, "triage": level >= 1, "push": level >= 2, "maintain": level >= 2, "admin": level >= 3}
        return {**(self.user(login) or {}), "permissions": rights, "role_name": permission}

    def repo(self, repo: dict, association: str = "OWNER") -> dict[str, Any]:
        """A repository as `association` (OWNER, COLLABORATOR, NONE) of the caller sees it."""
        api, web = self.api(repo), self.web(repo)
        full_name = f"{repo['owner']}/{repo['name']}"
        out: dict[str, Any] = {
            "id": repo["id"],
            "node_id": node_id("R", repo["id"]),
            "name": repo["name"],
            "full_name": full_name,
            "private": bool(repo["private"]),
            "owner": self.user(repo["owner"]),
            "html_url": web,
            "description": repo["description"],
            "fork": False,
            "url": api,
        }
        out.update({key: api + suffix for key, suffix in _REPO_LINKS.items()})
        out.update(
            {
                "created_at": iso(repo["created_at"]),
                "updated_at": iso(repo["updated_at"]),
                "pushed_at": iso(repo["updated_at"]),
                "git_url": f"{self.root}/git/{full_name}.git",
                "ssh_url": f"{self.root}/git/{full_name}.git",
                "clone_url": f"{self.root}/git/{full_name}.git",
                "svn_url": web,
                "mirror_url": None,
                "homepage": None,
                "size": 0,
                "language": None,
                "stargazers_count": 0,
                "watchers_count": 0,
                "watchers": 0,
                "forks_count": 0,
                "forks": 0,
                "open_issues_count": 0,
                "open_issues": 0,
                "has_issues": True,
                "has_projects": False,
                "has_downloads": False,
                "has_wiki": False,
                "has_pages": False,
                "has_discussions": False,
                "archived": False,
                "disabled": False,
                "license": None,
                "allow_forking": False,
                "is_template": False,
                "web_commit_signoff_required": False,
                "topics": [],
                "visibility": "private" if repo["private"] else "public",
                "default_branch": repo["default_branch"],
                "permissions": _PERMISSIONS[association],
                "allow_merge_commit": True,
                "allow_squash_merge": True,
                "allow_rebase_merge": False,
                "network_count": 0,
                "subscribers_count": 0,
            }
        )
        return out

    def label(self, repo: dict, label: dict) -> dict[str, Any]:
        return {
            "id": label["id"],
            "node_id": node_id("LA", label["id"]),
            "url": f"{self.api(repo)}/labels/{quote(label['name'], safe='')}",
            "name": label["name"],
            "color": label["color"],
            "default": False,
            "description": label["description"],
        }

    def issue(self, repo: dict, row: dict, labels: list[dict]) -> dict[str, Any]:
        api, n = self.api(repo), row["number"]
        kind = "pull" if row["is_pull"] else "issues"
        out: dict[str, Any] = {
            "id": row["id"],
            "node_id": node_id("I", row["id"]),
            "url": f"{api}/issues/{n}",
            "repository_url": api,
            "labels_url": f"{api}/issues/{n}/labels{{/name}}",
            "comments_url": f"{api}/issues/{n}/comments",
            "events_url": f"{api}/issues/{n}/events",
            "timeline_url": f"{api}/issues/{n}/timeline",
            "html_url": f"{self.web(repo)}/{kind}/{n}",
            "number": n,
            "state": row["state"],
            "state_reason": row["state_reason"],
            "title": row["title"],
            "body": row["body"],
            "user": self.user(row["user"]),
            "labels": [self.label(repo, x) for x in labels],
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "locked": False,
            "active_lock_reason": None,
            "comments": row["comments"],
            "closed_at": iso(row["closed_at"]),
            "created_at": iso(row["created_at"]),
            "updated_at": iso(row["updated_at"]),
            "closed_by": self.user(row["closed_by"]),
            "author_association": self.store.association(repo, row["user"]),
            "performed_via_github_app": None,
        }
        if row["is_pull"]:
            web = f"{self.web(repo)}/pull/{n}"
            out["pull_request"] = {
                "url": f"{api}/pulls/{n}",
                "html_url": web,
                "diff_url": f"{web}.diff",
                "patch_url": f"{web}.patch",
                "merged_at": iso(row["merged_at"]),
            }
        return out

    def _part(self, repo: dict, ref: str, sha: str | None) -> dict[str, Any]:
        return {
            "label": f"{repo['owner']}:{ref}",
            "ref": ref,
            "sha": sha,
            "user": self.user(repo["owner"]),
            "repo": self.repo(repo),
        }

    def pull(self, repo: dict, row: dict, labels: list[dict], head_sha: str | None, base_sha: str | None) -> dict[str, Any]:
        """`pull-request-simple`, as in list answers; `pull_details` adds the single-PR fields."""
        api, n = self.api(repo), row["number"]
        html = f"{self.web(repo)}/pull/{n}"
        links = {
            "self": f"{api}/pulls/{n}",
            "html": html,
            "issue": f"{api}/issues/{n}",
            "comments": f"{api}/issues/{n}/comments",
            "review_comments": f"{api}/pulls/{n}/comments",
            "review_comment": f"{api}/pulls/comments{{/number}}",
            "commits": f"{api}/pulls/{n}/commits",
            "statuses": f"{api}/statuses/{head_sha}",
        }
        return {
            "url": links["self"],
            "id": row["id"],
            "node_id": node_id("PR", row["id"]),
            "html_url": html,
            "diff_url": f"{html}.diff",
            "patch_url": f"{html}.patch",
            "issue_url": links["issue"],
            "commits_url": links["commits"],
            "review_comments_url": links["review_comments"],
            "review_comment_url": links["review_comment"],
            "comments_url": links["comments"],
            "statuses_url": links["statuses"],
            "number": n,
            "state": row["state"],
            "locked": False,
            "title": row["title"],
            "user": self.user(row["user"]),
            "body": row["body"],
            "labels": [self.label(repo, x) for x in labels],
            "milestone": None,
            "active_lock_reason": None,
            "created_at": iso(row["created_at"]),
            "updated_at": iso(row["updated_at"]),
            "closed_at": iso(row["closed_at"]),
            "merged_at": iso(row["merged_at"]),
            "merge_commit_sha": row["merge_commit_sha"],
            "assignee": None,
            "assignees": [],
            "requested_reviewers": [],
            "requested_teams": [],
            "head": self._part(repo, row["head_ref"], head_sha),
            "base": self._part(repo, row["base_ref"], base_sha),
            "_links": {key: {"href": href} for key, href in links.items()},
            "author_association": self.store.association(repo, row["user"]),
            "auto_merge": None,
            "draft": False,
        }

    def pull_details(self, row: dict, mergeable: bool | None, files: list[ChangedFile], commits: int) -> dict:
        """The fields GET /pulls/{n} has beyond the list shape."""
        state = "unknown" if mergeable is None else ("clean" if mergeable else "dirty")
        return {
            "merged": bool(row["merged"]),
            "mergeable": mergeable,
            "rebaseable": False,
            "mergeable_state": state,
            "merged_by": self.user(row["merged_by"]),
            "comments": row["comments"],
            "review_comments": 0,
            "maintainer_can_modify": False,
            "commits": commits,
            "additions": sum(f.additions for f in files),
            "deletions": sum(f.deletions for f in files),
            "changed_files": len(files),
        }

    def comment(self, repo: dict, row: dict) -> dict[str, Any]:
        api, n = self.api(repo), row["issue_number"]
        return {
            "id": row["id"],
            "node_id": node_id("IC", row["id"]),
            "url": f"{api}/issues/comments/{row['id']}",
            "html_url": f"{self.web(repo)}/issues/{n}#issuecomment-{row['id']}",
            "body": row["body"],
            "user": self.user(row["user"]),
            "created_at": iso(row["created_at"]),
            "updated_at": iso(row["updated_at"]),
            "issue_url": f"{api}/issues/{n}",
            "author_association": self.store.association(repo, row["user"]),
            "performed_via_github_app": None,
        }

    def short_branch(self, repo: dict, name: str, sha: str) -> dict[str, Any]:
        return {"name": name, "commit": {"sha": sha, "url": f"{self.api(repo)}/commits/{sha}"}, "protected": False}

    def branch(self, repo: dict, name: str, commit: dict) -> dict[str, Any]:
        """`branch-with-protection`; `commit` is `GitRepos.commit_info` output."""
        api = self.api(repo)
        return {
            "name": name,
            "commit": self.commit(repo, commit),
            "_links": {"self": f"{api}/branches/{name}", "html": f"{self.web(repo)}/tree/{name}"},
            "protected": False,
            "protection": {"enabled": False},
            "protection_url": f"{api}/branches/{name}/protection",
        }

    def commit(self, repo: dict, commit: dict) -> dict[str, Any]:
        """`commit` (no stats or files); `commit` is `GitRepos.commit_info` output."""
        api, sha = self.api(repo), commit["sha"]
        person = {"name": commit["author_name"], "email": commit["author_email"], "date": iso(commit["author_time"])}
        committer = {"name": commit["committer_name"], "email": commit["committer_email"], "date": iso(commit["committer_time"])}
        return {
            "sha": sha,
            "node_id": node_id("C", sha),
            "url": f"{api}/commits/{sha}",
            "html_url": f"{self.web(repo)}/commit/{sha}",
            "comments_url": f"{api}/commits/{sha}/comments",
            "commit": {
                "url": f"{api}/git/commits/{sha}",
                "author": person,
                "committer": committer,
                "message": commit["message"],
                "comment_count": 0,
                "tree": {"sha": commit["tree"], "url": f"{api}/git/trees/{commit['tree']}"},
            },
            "author": None,
            "committer": None,
            "parents": [
                {"sha": p, "url": f"{api}/commits/{p}", "html_url": f"{self.web(repo)}/commit/{p}"} for p in commit["parents"]
            ],
        }

    def ref(self, repo: dict, name: str, sha: str) -> dict[str, Any]:
        api = self.api(repo)
        return {
            "ref": f"refs/heads/{name}",
            "node_id": node_id("REF", f"{repo['id']}:{name}"),
            "url": f"{api}/git/refs/heads/{name}",
            "object": {"type": "commit", "sha": sha, "url": f"{api}/git/commits/{sha}"},
        }

    def file(self, repo: dict, head_sha: str, f: ChangedFile) -> dict[str, Any]:
        web, api = self.web(repo), self.api(repo)
        out = {
            "sha": f.sha,
            "filename": f.filename,
            "status": f.status,
            "additions": f.additions,
            "deletions": f.deletions,
            "changes": f.additions + f.deletions,
            "blob_url": f"{web}/blob/{head_sha}/{f.filename}",
            "raw_url": f"{web}/raw/{head_sha}/{f.filename}",
            "contents_url": f"{api}/contents/{quote(f.filename)}?ref={head_sha}",
        }
        if f.previous_filename is not None:
            out["previous_filename"] = f.previous_filename
        return out


# What GitHub reports in a repository's `permissions` for the caller's role on it.
_PERMISSIONS = {
    "OWNER": {"admin": True, "maintain": True, "push": True, "triage": True, "pull": True},
    "COLLABORATOR": {"admin": False, "maintain": False, "push": True, "triage": True, "pull": True},
    "NONE": {"admin": False, "maintain": False, "push": False, "triage": False, "pull": True},
}
