"""Routes of the local forge for issues, their comments and their labels (PRs included).

GitHub REST: GET|POST /repos/{o}/{r}/issues, GET|PATCH .../issues/{n},
GET|POST .../issues/{n}/comments, GET|PATCH|DELETE .../issues/comments/{id},
GET|POST|PUT|DELETE .../issues/{n}/labels, DELETE .../issues/{n}/labels/{name}.
The issues list includes PRs (with a `pull_request` key), as on GitHub.  Anyone with a token may
open issues and comment; a comment changes only by its author; labels need a collaborator. A thread
takes no comment past `WriteLimits.comments_per_thread` (403, as GitHub's 2,500).
"""

from typing import Any

from fastapi import APIRouter, Request, Response

from senpai.forge.localforge.context import Ctx, CtxDep, parse_since
from senpai.forge.localforge.ratelimit import comment_cap
from senpai.forge.localforge.store import IssueQuery
from senpai.forge.localforge.web import (
    AnyJson,
    ApiError,
    JsonBody,
    invalid,
    link_header,
    not_found,
    page_args,
    reply,
    text_field,
)

router = APIRouter()
ISSUES = "/repos/{owner}/{name}/issues"
ISSUE = ISSUES + "/{number:num}"
COMMENT = ISSUES + "/comments/{comment_id:num}"


def query_from(request: Request, pulls: bool = False) -> IssueQuery:
    """IssueQuery from GitHub's list parameters (state, labels, since, sort, direction, page...)."""
    params = request.query_params
    state = params.get("state", "open")
    if state not in ("open", "closed", "all"):
        raise invalid("Issue", "state")
    page, per_page = page_args(request)
    sort = params.get("sort", "created")
    default_direction = "desc" if sort == "created" or not pulls else "asc"
    head = params.get("head")
    return IssueQuery(
        state=state,
        labels=[x.strip() for x in params.get("labels", "").split(",") if x.strip()],
        since=parse_since(params.get("since")),
        sort=sort,
        direction=params.get("direction", default_direction),
        pulls=pulls,
        creator=params.get("creator"),
        head=head.split(":", 1)[-1] if head else None,
        base=params.get("base"),
        limit=per_page,
        offset=(page - 1) * per_page,
    )


def label_names(value: Any) -> list[str]:
    """Label names from `["a", ...]`, `[{"name": "a"}, ...]` or `{"labels": [...]}`. Raises 422."""
    if isinstance(value, dict):
        value = value.get("labels", [])
    if value is None:
        return []
    if not isinstance(value, list):
        raise invalid("Label", "labels")
    names = [v.get("name") if isinstance(v, dict) else v for v in value]
    if not all(isinstance(n, str) and n.strip() for n in names):
        raise invalid("Label", "name")
    return list(dict.fromkeys(names))


def render_issues(ctx: Ctx, repo: dict, rows: list[dict]) -> list[dict]:
    labels = ctx.store.labels_of([row["id"] for row in rows])
    return [ctx.render.issue(repo, row, labels[row["id"]]) for row in rows]


def _issue_reply(request: Request, ctx: Ctx, repo: dict, number: int, status: int = 200) -> Response:
    return reply(request, render_issues(ctx, repo, [ctx.issue(repo, number)])[0], status)


@router.get(ISSUES)
def list_issues(owner: str, name: str, request: Request, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    query = query_from(request)
    rows, total = ctx.store.list_issues(repo["id"], query)
    page, per_page = page_args(request)
    # Whole-second timestamps can hide a change made within the same second: salt the ETag
    # with the stored full-precision times so any change yields a new ETag.
    salt = ",".join(repr(row["updated_at"]) for row in rows)
    headers = link_header(request, page, per_page, total)
    return reply(request, render_issues(ctx, repo, rows), headers=headers, salt=salt)


@router.post(ISSUES)
def create_issue(owner: str, name: str, request: Request, payload: JsonBody, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    title = text_field(payload, "title", "Issue", required=True)
    body = text_field(payload, "body", "Issue")
    labels = label_names(payload.get("labels"))
    row = ctx.store.create_issue(repo["id"], ctx.user, title, body)
    if labels and ctx.store.permission(repo, ctx.login) in ("admin", "write"):  # GitHub drops them silently otherwise
        ctx.store.add_labels(row, labels)
    return _issue_reply(request, ctx, repo, row["number"], 201)


@router.get(ISSUE)
def get_issue(owner: str, name: str, number: int, request: Request, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    return _issue_reply(request, ctx, repo, number)


def edit_fields(ctx: Ctx, repo: dict, row: dict, payload: dict[str, Any]) -> dict[str, Any]:
    """The columns a PATCH of title, body and state would write, validated and not yet written.

    The author or a collaborator may make them. Raises ApiError 401/403/422.
    """
    ctx.require(repo, "write", author=row["user"])
    fields: dict[str, Any] = {}
    if "title" in payload:
        fields["title"] = text_field(payload, "title", "Issue", required=True)
    if "body" in payload:
        fields["body"] = text_field(payload, "body", "Issue")
    if payload.get("state") is not None:
        fields.update(ctx.set_state(repo, row, payload["state"], text_field(payload, "state_reason", "Issue")))
    return fields


def apply_edit(ctx: Ctx, repo: dict, row: dict, payload: dict[str, Any]) -> None:
    """PATCH semantics shared by issues and pulls: title, body, state (+state_reason), labels.

    The author or a collaborator may change title, body and state; labels need a collaborator.
    Raises ApiError 401/403/422.
    """
    fields = edit_fields(ctx, repo, row, payload)
    if "labels" in payload:
        ctx.require(repo, "write")
        ctx.store.add_labels(row, label_names(payload["labels"]), replace=True)
    ctx.store.update_issue(row["id"], **fields)


@router.patch(ISSUE)
def edit_issue(owner: str, name: str, number: int, request: Request, payload: JsonBody, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    apply_edit(ctx, repo, ctx.issue(repo, number), payload)
    return _issue_reply(request, ctx, repo, number)


@router.get(ISSUE + "/comments")
def list_comments(owner: str, name: str, number: int, request: Request, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    issue = ctx.issue(repo, number)
    page, per_page = page_args(request)
    since = parse_since(request.query_params.get("since"))
    rows, total = ctx.store.comments(issue["id"], since, per_page, (page - 1) * per_page)
    body = [ctx.render.comment(repo, row) for row in rows]
    return reply(request, body, headers=link_header(request, page, per_page, total))


@router.post(ISSUE + "/comments")
def create_comment(owner: str, name: str, number: int, request: Request, payload: JsonBody, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    issue = ctx.issue(repo, number)
    body = text_field(payload, "body", "IssueComment", required=True)
    comment_cap(ctx.limits, issue["comments"])
    row = ctx.store.create_comment(issue, ctx.user, body)  # type: ignore[arg-type]
    return reply(request, ctx.render.comment(repo, row), 201)


def _comment(ctx: Ctx, repo: dict, comment_id: int) -> dict:
    row = ctx.store.comment(repo["id"], comment_id)
    if row is None:
        raise not_found()
    return row


def _own_comment(ctx: Ctx, repo: dict, comment_id: int) -> dict:
    """The comment, when the caller wrote it: only its author may edit or delete it (401/403/404)."""
    row = _comment(ctx, repo, comment_id)
    if row["user"] != ctx.user:
        raise ApiError(403, "Only the author of a comment may change it.")
    return row


@router.get(COMMENT)
def get_comment(owner: str, name: str, comment_id: int, request: Request, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    return reply(request, ctx.render.comment(repo, _comment(ctx, repo, comment_id)))


@router.patch(COMMENT)
def edit_comment(owner: str, name: str, comment_id: int, request: Request, payload: JsonBody, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    row = _own_comment(ctx, repo, comment_id)
    row = ctx.store.update_comment(row, text_field(payload, "body", "IssueComment", required=True))  # type: ignore[arg-type]
    return reply(request, ctx.render.comment(repo, row))


@router.delete(COMMENT)
def delete_comment(owner: str, name: str, comment_id: int, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    ctx.store.delete_comment(_own_comment(ctx, repo, comment_id))
    return Response(status_code=204)


def _labels_reply(request: Request, ctx: Ctx, repo: dict, issue: dict) -> Response:
    labels = ctx.store.labels_of([issue["id"]])[issue["id"]]
    return reply(request, [ctx.render.label(repo, label) for label in labels])


@router.get(ISSUE + "/labels")
def list_issue_labels(owner: str, name: str, number: int, request: Request, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    return _labels_reply(request, ctx, repo, ctx.issue(repo, number))


@router.api_route(ISSUE + "/labels", methods=["POST", "PUT"])
def add_issue_labels(owner: str, name: str, number: int, request: Request, payload: AnyJson, ctx: CtxDep) -> Response:
    """POST adds labels, PUT replaces them; missing labels are created, as GitHub does."""
    repo = ctx.repo(owner, name)
    issue = ctx.issue(repo, number)
    ctx.require(repo, "write")
    ctx.store.add_labels(issue, label_names(payload), replace=request.method == "PUT")
    return _labels_reply(request, ctx, repo, issue)


@router.delete(ISSUE + "/labels")
def clear_issue_labels(owner: str, name: str, number: int, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    ctx.require(repo, "write")
    ctx.store.add_labels(ctx.issue(repo, number), [], replace=True)
    return Response(status_code=204)


@router.delete(ISSUE + "/labels/{label}")
def remove_issue_label(owner: str, name: str, number: int, label: str, request: Request, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    issue = ctx.issue(repo, number)
    ctx.require(repo, "write")
    if not ctx.store.remove_label(issue, label):
        raise ApiError(404, "Label does not exist")
    return _labels_reply(request, ctx, repo, issue)
