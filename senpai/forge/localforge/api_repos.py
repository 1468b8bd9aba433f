"""Routes of the local forge for users, repositories, collaborators, branches, refs, labels and git.

GitHub REST: GET /user, GET /users/{u}, POST /user/repos, POST /orgs/{o}/repos, GET /repos/{o}/{r},
PUT|GET /repos/{o}/{r}/collaborators/{u}, GET .../collaborators/{u}/permission, GET .../branches[/{b}],
GET .../git/ref(s)/heads/{b},
GET|POST .../labels, GET .../labels/{name}, GET .../contents/{path}?ref= (files only); and git
smart HTTP at /git/{o}/{r}.git.  Reading needs no token; creating a repository needs one, adding
collaborators an admin, labels and pushes a collaborator.
"""

import base64
import re
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

from senpai.forge.localforge.context import Ctx, CtxDep
from senpai.forge.localforge.store import DEFAULT_LABEL_COLOR
from senpai.forge.localforge.web import (
    ApiError,
    JsonBody,
    forbidden,
    invalid,
    link_header,
    not_found,
    page_args,
    reply,
    text_field,
)

FULL_SHA = re.compile(r"[0-9a-f]{40}")

router = APIRouter()
REPO = "/repos/{owner}/{name}"
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")


@router.get("/health")
def health(request: Request) -> Response:
    return reply(request, {"status": "ok"})


@router.get("/user")
def current_user(request: Request, ctx: CtxDep) -> Response:
    return reply(request, ctx.render.user(ctx.user, profile=True))


@router.get("/users/{login}")
def get_user(login: str, request: Request, ctx: CtxDep) -> Response:
    if not _valid_name(login) or ctx.store.find_user(login) is None:
        raise not_found()
    return reply(request, ctx.render.user(login, profile=True))


def _valid_name(name: object) -> bool:
    return isinstance(name, str) and bool(_NAME.fullmatch(name)) and name not in (".", "..")


def _create_repo(request: Request, ctx: Ctx, owner: str, payload: dict[str, Any]) -> Response:
    """Any user may create repositories of their own; under another owner (an org) only a site owner."""
    if owner != ctx.user and ctx.store.role(ctx.user) != "owner":
        raise forbidden(f"You need admin access to the organization {owner} to create a repository.")
    name = payload.get("name")
    if not _valid_name(name) or not _valid_name(owner):
        raise invalid("Repository", "name", "missing_field" if not name else "invalid")
    text_field(payload, "description", "Repository")
    with ctx.git.lock(ctx.git.path(owner, name)):  # concurrent creations of one name: the first wins, the rest 422
        if ctx.store.repo(owner, name) is not None:
            raise _name_taken()
        ctx.git.init(owner, name, readme=f"# {name}\n" if payload.get("auto_init") else None)
        repo = ctx.store.create_repo(owner, name, bool(payload.get("private")), payload.get("description"))
    if repo is None:
        raise _name_taken()
    return reply(request, ctx.render.repo(repo), 201)


def _name_taken() -> ApiError:
    """422 as GitHub answers a repository name that already exists on the account."""
    return ApiError(
        422,
        "Repository creation failed.",
        [{"resource": "Repository", "code": "custom", "field": "name", "message": "name already exists on this account"}],
    )


@router.post("/user/repos")
def create_user_repo(request: Request, payload: JsonBody, ctx: CtxDep) -> Response:
    return _create_repo(request, ctx, ctx.login, payload)


@router.post("/orgs/{org}/repos")
def create_org_repo(org: str, request: Request, payload: JsonBody, ctx: CtxDep) -> Response:
    return _create_repo(request, ctx, org, payload)


@router.get(REPO)
def get_repo(owner: str, name: str, request: Request, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    access = {"admin": "OWNER", "write": "COLLABORATOR"}.get(ctx.store.permission(repo, ctx.login) or "", "NONE")
    return reply(request, ctx.render.repo(repo, access))


@router.put(REPO + "/collaborators/{login}")
def add_collaborator(owner: str, name: str, login: str, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    ctx.require(repo, "admin")
    if not _valid_name(login):
        raise not_found()
    if login != repo["owner"]:
        ctx.store.user(login)
        ctx.store.add_collaborator(repo["id"], login)
    return Response(status_code=204)


@router.get(REPO + "/collaborators/{login}")
def check_collaborator(owner: str, name: str, login: str, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    if ctx.store.permission(repo, login) not in ("admin", "write"):
        raise not_found()
    return Response(status_code=204)


@router.get(REPO + "/collaborators/{login}/permission")
def collaborator_permission(owner: str, name: str, login: str, request: Request, ctx: CtxDep) -> Response:
    """GitHub's `repository-collaborator-permission`: `permission` admin, write or read (every user
    reads), `role_name` the same, and the user. The caller needs write access (403), as GitHub asks
    push access to view collaborators; an unknown login answers 404."""
    repo = ctx.repo(owner, name)
    if not ctx.can(repo, "write"):
        raise forbidden("Must have push access to view repository collaborators.")
    if not _valid_name(login) or ctx.store.find_user(login) is None:
        raise not_found()
    permission = ctx.store.permission(repo, login) or "read"
    body = {"permission": permission, "role_name": permission, "user": ctx.render.collaborator(login, permission)}
    return reply(request, body)


@router.get(REPO + "/branches")
def list_branches(owner: str, name: str, request: Request, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    page, per_page = page_args(request)
    branches = list(ctx.git.branches(ctx.path(repo)).items())
    chunk = branches[(page - 1) * per_page : page * per_page]
    body = [ctx.render.short_branch(repo, branch, sha) for branch, sha in chunk]
    return reply(request, body, headers=link_header(request, page, per_page, len(branches)))


@router.get(REPO + "/branches/{branch:path}")
def get_branch(owner: str, name: str, branch: str, request: Request, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    sha = ctx.git.branch_sha(ctx.path(repo), branch)
    if sha is None:
        raise ApiError(404, "Branch not found")
    return reply(request, ctx.render.branch(repo, branch, ctx.git.commit_info(ctx.path(repo), sha)))


@router.get(REPO + "/commits/{sha}")
def get_commit(owner: str, name: str, sha: str, request: Request, ctx: CtxDep) -> Response:
    """A commit by full sha or branch name (GitHub also takes short shas; senpai never sends one)."""
    repo = ctx.repo(owner, name)
    full = sha if FULL_SHA.fullmatch(sha) else ctx.git.branch_sha(ctx.path(repo), sha)
    if full is None or not ctx.git.has_commit(ctx.path(repo), full):
        raise ApiError(422, f"No commit found for SHA: {sha[:64]}")
    return reply(request, ctx.render.commit(repo, ctx.git.commit_info(ctx.path(repo), full)))


@router.get(REPO + "/git/ref/{ref:path}")
@router.get(REPO + "/git/refs/{ref:path}")
def get_ref(owner: str, name: str, ref: str, request: Request, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    branch = ref.removeprefix("refs/").removeprefix("heads/") if ref.startswith(("heads/", "refs/heads/")) else None
    sha = ctx.git.branch_sha(ctx.path(repo), branch) if branch else None
    if sha is None:
        raise not_found()
    return reply(request, ctx.render.ref(repo, branch, sha))


@router.get(REPO + "/labels")
def list_labels(owner: str, name: str, request: Request, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    page, per_page = page_args(request)
    rows, total = ctx.store.labels(repo["id"], per_page, (page - 1) * per_page)
    body = [ctx.render.label(repo, row) for row in rows]
    return reply(request, body, headers=link_header(request, page, per_page, total))


@router.post(REPO + "/labels")
def create_label(owner: str, name: str, request: Request, payload: JsonBody, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    ctx.require(repo, "write")
    label_name = text_field(payload, "name", "Label", required=True)
    text_field(payload, "description", "Label")
    color = str(payload.get("color") or DEFAULT_LABEL_COLOR).lstrip("#")
    if not re.fullmatch(r"[0-9A-Fa-f]{6}", color):
        raise invalid("Label", "color")
    row = ctx.store.create_label(repo["id"], label_name, color.lower(), payload.get("description"))
    if row is None:
        raise invalid("Label", "name", "already_exists")
    return reply(request, ctx.render.label(repo, row), 201)


@router.get(REPO + "/labels/{label}")
def get_label(owner: str, name: str, label: str, request: Request, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    row = ctx.store.label(repo["id"], label)
    if row is None:
        raise not_found()
    return reply(request, ctx.render.label(repo, row))


@router.get(REPO + "/contents/{file:path}")
def get_contents(owner: str, name: str, file: str, request: Request, ctx: CtxDep) -> Response:
    """A file's content (GitHub's `content-file` shape, base64); directories are not listed here."""
    repo = ctx.repo(owner, name)
    ref = request.query_params.get("ref") or repo["default_branch"]
    if ref.startswith("-"):  # git would read it as an option
        raise not_found()
    found = ctx.git.file_blob(ctx.path(repo), ref, file)
    if found is None:
        raise not_found()
    sha, content = found
    api, web = ctx.render.api(repo), ctx.render.web(repo)
    links = {"self": f"{api}/contents/{quote(file)}?ref={quote(ref)}", "git": f"{api}/git/blobs/{sha}"}
    links["html"] = f"{web}/blob/{quote(ref)}/{quote(file)}"
    body = {
        "type": "file",
        "encoding": "base64",
        "size": len(content),
        "name": file.rsplit("/", 1)[-1],
        "path": file,
        "content": base64.b64encode(content).decode(),
        "sha": sha,
        "url": links["self"],
        "git_url": links["git"],
        "html_url": links["html"],
        "download_url": None,
        "_links": links,
    }
    return reply(request, body)


_GIT_SERVICES = ("info/refs", "git-upload-pack", "git-receive-pack")


@router.api_route("/git/{owner}/{name}.git/{rest:path}", methods=["GET", "POST"])
async def git_smart_http(owner: str, name: str, rest: str, request: Request, ctx: CtxDep) -> Response:
    """Clone, fetch and push through `git http-backend`; a push refreshes the PRs whose head moved.

    Smart HTTP only (404 for any other path).  Anyone may clone and fetch a public repository; a push,
    or a clone of a private one, needs a token (401 with a Basic challenge, so git can ask for one)
    of a collaborator (else 403 for a push, 404 for a private repository).
    """
    if rest not in _GIT_SERVICES:
        raise not_found()
    push = rest == "git-receive-pack" or request.query_params.get("service") == "git-receive-pack"
    row = ctx.store.repo(owner, name)
    if row is not None and (push or row["private"]) and ctx.login is None:  # git sends a token only when challenged
        return Response("Requires authentication\n", 401, {"WWW-Authenticate": 'Basic realm="senpai local forge"'})
    repo = ctx.repo(owner, name)
    if push:
        ctx.require(repo, "write")
    body = await request.body()
    status, headers, payload = await run_in_threadpool(
        ctx.git.http_backend,
        f"/{owner}/{name}.git/{rest}",
        request.method,
        request.url.query,
        dict(request.headers),
        body,
        ctx.login or "",
        push and ctx.store.permission(repo, ctx.login) == "admin",
    )
    if rest == "git-receive-pack" and status == 200:
        await run_in_threadpool(ctx.sync_heads, repo)
    return Response(payload, status_code=status, headers=dict(headers))
