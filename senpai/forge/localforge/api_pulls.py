"""Routes of the local forge for pull requests: create, list, get, edit, merge, files.

GitHub REST: GET|POST /repos/{o}/{r}/pulls, GET|PATCH .../pulls/{n}, GET|PUT .../pulls/{n}/merge,
GET .../pulls/{n}/files.  A PR's head and base shas are read live from the bare repository while
it is open.  Merging makes a real merge commit on the base branch; a conflict answers 405
"Merge conflict", a stale `sha` or a base that moved meanwhile answers 409, as GitHub does.
"""

from typing import Any

from fastapi import APIRouter, Request, Response

from senpai.forge.localforge.api_issues import apply_edit, query_from
from senpai.forge.localforge.context import Ctx, CtxDep
from senpai.forge.localforge.git import Conflict, Moved
from senpai.forge.localforge.store import IssueQuery
from senpai.forge.localforge.web import ApiError, JsonBody, invalid, link_header, not_found, page_args, reply

router = APIRouter()
PULLS = "/repos/{owner}/{name}/pulls"
PULL = PULLS + "/{number:int}"


def render_pulls(ctx: Ctx, repo: dict, rows: list[dict]) -> list[dict]:
    branches = ctx.git.branches(ctx.path(repo))
    labels = ctx.store.labels_of([row["id"] for row in rows])
    return [ctx.render.pull(repo, row, labels[row["id"]], *ctx.shas(row, branches)) for row in rows]


def _full_reply(request: Request, ctx: Ctx, repo: dict, number: int, status: int = 200) -> Response:
    """GET /pulls/{n} shape: the list shape plus merged, mergeable, counts of commits and changes."""
    row = ctx.pull(repo, number)
    path = ctx.path(repo)
    head, base = ctx.shas(row, ctx.git.branches(path))
    out = render_pulls(ctx, repo, [row])[0]
    files, commits, mergeable = [], 0, None
    if head and base:
        files = ctx.git.changed_files(path, base, head)
        commits = ctx.git.count_commits(path, base, head)
        mergeable = ctx.git.mergeable(path, base, head) if row["state"] == "open" else None
    out.update(ctx.render.pull_details(row, mergeable, files, commits))
    return reply(request, out, status)


@router.get(PULLS)
def list_pulls(owner: str, name: str, request: Request, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    rows, total = ctx.store.list_issues(repo["id"], query_from(request, pulls=True))
    page, per_page = page_args(request)
    return reply(request, render_pulls(ctx, repo, rows), headers=link_header(request, page, per_page, total))


def _custom(message: str) -> ApiError:
    return ApiError(422, "Validation Failed", [{"resource": "PullRequest", "code": "custom", "message": message}])


def _check_new_pull(ctx: Ctx, repo: dict, head: str, base: str) -> tuple[str, str]:
    """(head sha, base sha) of a PR about to be created; raises 422 as GitHub would."""
    path = ctx.path(repo)
    head_sha, base_sha = ctx.git.branch_sha(path, head), ctx.git.branch_sha(path, base)
    if head_sha is None:
        raise invalid("PullRequest", "head")
    if base_sha is None:
        raise invalid("PullRequest", "base")
    query = IssueQuery(state="open", pulls=True, head=head, base=base, limit=1)
    if ctx.store.list_issues(repo["id"], query)[1]:
        raise _custom(f"A pull request already exists for {repo['owner']}:{head}.")
    if ctx.git.is_ancestor(path, head_sha, base_sha):
        raise _custom(f"No commits between {base} and {head}")
    return head_sha, base_sha


@router.post(PULLS)
def create_pull(owner: str, name: str, request: Request, payload: JsonBody, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    for key in ("title", "head", "base"):
        if not isinstance(payload.get(key), str) or not payload[key].strip():
            raise invalid("PullRequest", key, "missing_field")
    head, base = payload["head"].split(":", 1)[-1], payload["base"]
    head_sha, base_sha = _check_new_pull(ctx, repo, head, base)
    pull = {"head_ref": head, "base_ref": base, "head_sha": head_sha, "base_sha": base_sha}
    row = ctx.store.create_issue(repo["id"], ctx.login, payload["title"], payload.get("body"), pull)
    return _full_reply(request, ctx, repo, row["number"], 201)


@router.get(PULL)
def get_pull(owner: str, name: str, number: int, request: Request, ctx: CtxDep) -> Response:
    return _full_reply(request, ctx, ctx.repo(owner, name), number)


@router.patch(PULL)
def edit_pull(owner: str, name: str, number: int, request: Request, payload: JsonBody, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    row = ctx.pull(repo, number)
    base = payload.pop("base", None)
    if base is not None:
        if ctx.git.branch_sha(ctx.path(repo), base) is None:
            raise invalid("PullRequest", "base")
        ctx.store.update_issue(row["id"], base_ref=base)
    apply_edit(ctx, repo, ctx.pull(repo, number), {k: v for k, v in payload.items() if k != "labels"})
    return _full_reply(request, ctx, repo, number)


@router.get(PULL + "/merge")
def is_merged(owner: str, name: str, number: int, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    if not ctx.pull(repo, number)["merged"]:
        raise not_found()
    return Response(status_code=204)


def _merge_message(repo: dict, row: dict, payload: dict[str, Any], squash: bool) -> str:
    default_title = (
        f"{row['title']} (#{row['number']})"
        if squash
        else f"Merge pull request #{row['number']} from {repo['owner']}/{row['head_ref']}"
    )
    title = payload.get("commit_title") or default_title
    body = payload.get("commit_message")
    if body is None and not squash:
        body = row["title"]
    return f"{title}\n\n{body}\n" if body else f"{title}\n"


@router.put(PULL + "/merge")
def merge_pull(owner: str, name: str, number: int, request: Request, payload: JsonBody, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    row, path = ctx.pull(repo, number), ctx.path(repo)
    method = payload.get("merge_method", "merge")
    if method not in ("merge", "squash"):
        raise ApiError(405, f"{method.title()} merges are not allowed on this repository.")
    head_sha = ctx.git.branch_sha(path, row["head_ref"])
    if row["state"] != "open" or head_sha is None:
        raise ApiError(405, "Pull Request is not mergeable")
    if payload.get("sha") and payload["sha"] != head_sha:
        raise ApiError(409, "Head branch was modified. Review and try the merge again.")
    author = (ctx.login, f"{ctx.login}@users.noreply.localhost")
    with ctx.git.lock(path):
        base_sha = ctx.git.branch_sha(path, row["base_ref"])
        try:
            sha = ctx.git.merge(
                path,
                row["base_ref"],
                head_sha,
                _merge_message(repo, row, payload, method == "squash"),
                author,
                squash=method == "squash",
            )
        except Conflict as exc:
            raise ApiError(405, "Merge conflict") from exc
        except Moved as exc:
            raise ApiError(409, "Base branch was modified. Review and try the merge again.") from exc
    now = ctx.store.now()
    ctx.store.update_issue(
        row["id"],
        state="closed",
        merged=1,
        merged_at=now,
        merged_by=ctx.login,
        closed_at=now,
        closed_by=ctx.login,
        merge_commit_sha=sha,
        head_sha=head_sha,
        base_sha=base_sha,
    )
    return reply(request, {"sha": sha, "merged": True, "message": "Pull Request successfully merged"})


@router.get(PULL + "/files")
def pull_files(owner: str, name: str, number: int, request: Request, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    row, path = ctx.pull(repo, number), ctx.path(repo)
    head, base = ctx.shas(row, ctx.git.branches(path))
    files = ctx.git.changed_files(path, base, head) if head and base else []
    page, per_page = page_args(request)
    chunk = files[(page - 1) * per_page : page * per_page]
    body = [ctx.render.file(repo, head, f) for f in chunk]
    return reply(request, body, headers=link_header(request, page, per_page, len(files)))
