"""Routes of the local forge for pull requests: create, list, get, edit, merge, files.

GitHub REST: GET|POST /repos/{o}/{r}/pulls, GET|PATCH .../pulls/{n}, GET|PUT .../pulls/{n}/merge,
GET .../pulls/{n}/files (only the first MAX_PULL_FILES, as GitHub).  A PR's head and base shas are
read live from the bare repository while it is open.  Merging makes a real merge commit on the base
branch; a conflict answers 405 "Merge conflict" (`mergeable: false`), a protected base that asks
for approvals the PR lacks answers 405 (`mergeable_state: blocked`, see `reviews`), a stale `sha`
or a base that moved meanwhile answers 409, as GitHub does.
Anyone with a token may open a PR; its author or a collaborator may edit it (a PATCH is validated
whole before anything is written; only an open PR may change its base); merging needs a collaborator.
One repository lock serialises PR creation and merges (see `merges`).
"""

from fastapi import APIRouter, Request, Response

from senpai.forge.localforge.api_issues import edit_fields, query_from
from senpai.forge.localforge.context import Ctx, CtxDep
from senpai.forge.localforge.merges import merge
from senpai.forge.localforge.reviews import blocked
from senpai.forge.localforge.store import IssueQuery
from senpai.forge.localforge.web import ApiError, JsonBody, invalid, link_header, not_found, page_args, reply, text_field

router = APIRouter()
PULLS = "/repos/{owner}/{name}/pulls"
PULL = PULLS + "/{number:num}"
MAX_PULL_FILES = 3000  # GitHub: "Responses include a maximum of 3000 files"; `changed_files` counts all


def render_pulls(ctx: Ctx, repo: dict, rows: list[dict], branches: dict[str, str] | None = None) -> list[dict]:
    """The list shape of `rows`, with live head and base shas (`branches`: as `git.branches` just read them)."""
    branches = ctx.git.branches(ctx.path(repo)) if branches is None else branches
    labels = ctx.store.labels_of([row["id"] for row in rows])
    return [ctx.render.pull(repo, row, labels[row["id"]], *ctx.shas(row, branches)) for row in rows]


def _full_reply(request: Request, ctx: Ctx, repo: dict, number: int, status: int = 200) -> Response:
    """GET /pulls/{n} shape: the list shape plus merged, mergeable, counts of commits and changes."""
    row = ctx.pull(repo, number)
    path = ctx.path(repo)
    branches = ctx.git.branches(path)  # one read: the shas shown are the ones diffed
    head, base = ctx.shas(row, branches)
    out = render_pulls(ctx, repo, [row], branches)[0]
    files, commits, mergeable = [], 0, None
    if head and base:
        files = ctx.git.changed_files(path, base, head)
        commits = ctx.git.count_commits(path, base, head)
        mergeable = ctx.git.mergeable(path, base, head) if row["state"] == "open" else None
    out.update(ctx.render.pull_details(row, mergeable, files, commits))
    if mergeable and blocked(ctx, repo, row):  # GitHub: merges cleanly, but the base's protection refuses it
        out["mergeable_state"] = "blocked"
    # as list_pulls: a comment within the same second changes the ETag (GitHub's body counts comments)
    return reply(request, out, status, salt=repr(row["updated_at"]))


@router.get(PULLS)
def list_pulls(owner: str, name: str, request: Request, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    rows, total = ctx.store.list_issues(repo["id"], query_from(request, pulls=True))
    page, per_page = page_args(request)
    salt = ",".join(repr(row["updated_at"]) for row in rows)  # as list_issues: a change within a second
    return reply(request, render_pulls(ctx, repo, rows), headers=link_header(request, page, per_page, total), salt=salt)


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
    title, head, base = (text_field(payload, key, "PullRequest", required=True) for key in ("title", "head", "base"))
    body = text_field(payload, "body", "PullRequest")
    head = head.split(":", 1)[-1]  # type: ignore[union-attr]
    with ctx.git.lock(ctx.path(repo)):  # the duplicate check and the insert are one step
        head_sha, base_sha = _check_new_pull(ctx, repo, head, base)  # type: ignore[arg-type]
        pull = {"head_ref": head, "base_ref": base, "head_sha": head_sha, "base_sha": base_sha}
        row = ctx.store.create_issue(repo["id"], ctx.user, title, body, pull)  # type: ignore[arg-type]
    return _full_reply(request, ctx, repo, row["number"], 201)


@router.get(PULL)
def get_pull(owner: str, name: str, number: int, request: Request, ctx: CtxDep) -> Response:
    return _full_reply(request, ctx, ctx.repo(owner, name), number)


@router.patch(PULL)
def edit_pull(owner: str, name: str, number: int, request: Request, payload: JsonBody, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    row = ctx.pull(repo, number)
    fields = edit_fields(ctx, repo, row, {k: v for k, v in payload.items() if k not in ("base", "labels")})
    base = text_field(payload, "base", "PullRequest")
    if base is not None:
        _check_new_base(ctx, repo, row, base)
        fields["base_ref"] = base
    ctx.store.update_issue(row["id"], **fields)  # one write, after the whole request was validated
    return _full_reply(request, ctx, repo, number)


def _check_new_base(ctx: Ctx, repo: dict, row: dict, base: str) -> None:
    """Raises ApiError 422 unless PR `row` is open and branch `base` exists (GitHub refuses to
    retarget a closed or merged PR)."""
    if row["state"] != "open":
        raise _custom("Cannot change the base branch of a closed pull request.")
    if ctx.git.branch_sha(ctx.path(repo), base) is None:
        raise invalid("PullRequest", "base")


@router.get(PULL + "/merge")
def is_merged(owner: str, name: str, number: int, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    if not ctx.pull(repo, number)["merged"]:
        raise not_found()
    return Response(status_code=204)


@router.put(PULL + "/merge")
def merge_pull(owner: str, name: str, number: int, request: Request, payload: JsonBody, ctx: CtxDep) -> Response:
    """Needs a collaborator. `sha` (optional) must be the head that was reviewed, else 409."""
    repo = ctx.repo(owner, name)
    ctx.pull(repo, number)
    ctx.require(repo, "write")
    sha = merge(ctx, repo, number, payload)
    return reply(request, {"sha": sha, "merged": True, "message": "Pull Request successfully merged"})


@router.get(PULL + "/files")
def pull_files(owner: str, name: str, number: int, request: Request, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    row, path = ctx.pull(repo, number), ctx.path(repo)
    head, base = ctx.shas(row, ctx.git.branches(path))
    files = ctx.git.changed_files(path, base, head)[:MAX_PULL_FILES] if head and base else []
    page, per_page = page_args(request)
    chunk = files[(page - 1) * per_page : page * per_page]
    body = [ctx.render.file(repo, head, f) for f in chunk]
    return reply(request, body, headers=link_header(request, page, per_page, len(files)))
