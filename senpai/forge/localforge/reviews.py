"""Pull request reviews, and the rule of a protected base that asks for approving reviews.

GitHub REST: POST|GET /repos/{o}/{r}/pulls/{n}/reviews. A review is submitted at once with its
`event`: APPROVE, REQUEST_CHANGES or COMMENT (the last two need a `body`); its author may not
approve their own PR. A user's latest review that approves or requests changes is their verdict.

`senpai forge serve --require-approvals N` gives every protected branch (`--protect`) GitHub's
"Require approvals" rule: a PR into it merges only once N users with write access other than its
author approve it. Until then GET /pulls/{n} says `mergeable_state: blocked` and the merge answers
405 "At least N approving review(s) is required by reviewers with write access.", as GitHub does.
"""

from fastapi import APIRouter, Request, Response

from senpai.forge.localforge.context import Ctx, CtxDep
from senpai.forge.localforge.render import iso, node_id
from senpai.forge.localforge.web import ApiError, JsonBody, invalid, link_header, page_args, reply, text_field

router = APIRouter()
REVIEWS = "/repos/{owner}/{name}/pulls/{number:num}/reviews"
STATES = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}
MAX_REVIEW_BODY = 65_536  # characters, as a comment


def approvals(ctx: Ctx, repo: dict, row: dict) -> int:
    """How many users with write access, the PR's author aside, approve PR `row` now."""
    verdicts: dict[str, str] = {}
    for review in ctx.store.reviews(row["id"]):
        if review["state"] != "COMMENTED":
            verdicts[review["user"]] = review["state"]
    writers = {u for u in verdicts if u != row["user"] and ctx.store.permission(repo, u) in ("write", "admin")}
    return sum(verdicts[u] == "APPROVED" for u in writers)


def blocked(ctx: Ctx, repo: dict, row: dict) -> str | None:
    """GitHub's refusal of a merge of PR `row` for want of approvals, or None if its base asks for none
    (not protected, or no `--require-approvals`) or has them."""
    need = ctx.approvals
    if need <= 0 or row["base_ref"] not in ctx.git.protected or approvals(ctx, repo, row) >= need:
        return None
    return f"At least {need} approving review{'s are' if need > 1 else ' is'} required by reviewers with write access."


def _render(ctx: Ctx, repo: dict, number: int, review: dict) -> dict:
    pull = f"{ctx.render.api(repo)}/pulls/{number}"
    html = f"{ctx.render.web(repo)}/pull/{number}#pullrequestreview-{review['id']}"
    return {
        "id": review["id"],
        "node_id": node_id("PRR", review["id"]),
        "user": ctx.render.user(review["user"]),
        "body": review["body"],
        "state": review["state"],
        "html_url": html,
        "pull_request_url": pull,
        "author_association": ctx.store.association(repo, review["user"]),
        "_links": {"html": {"href": html}, "pull_request": {"href": pull}},
        "submitted_at": iso(review["submitted_at"]),
        "commit_id": review["commit_id"],
    }


def _custom(message: str) -> ApiError:
    return ApiError(422, "Unprocessable Entity", [{"resource": "PullRequestReview", "code": "custom", "message": message}])


@router.post(REVIEWS)
def create_review(owner: str, name: str, number: int, request: Request, payload: JsonBody, ctx: CtxDep) -> Response:
    """Submit a review of an open PR at its head (or the `commit_id` given, which must be the head)."""
    repo = ctx.repo(owner, name)
    row = ctx.pull(repo, number)
    event, body = (
        text_field(payload, "event", "PullRequestReview", required=True),
        text_field(payload, "body", "PullRequestReview"),
    )
    if event not in STATES:
        raise invalid("PullRequestReview", "event")
    if event != "APPROVE" and not (body or "").strip():
        raise invalid("PullRequestReview", "body", "missing_field")
    if len(body or "") > MAX_REVIEW_BODY:
        raise invalid("PullRequestReview", "body")
    if row["state"] != "open":
        raise _custom("Pull request is closed")
    if event == "APPROVE" and ctx.user == row["user"]:
        raise _custom("Review Can not approve your own pull request")
    head = ctx.git.branch_sha(ctx.path(repo), row["head_ref"]) or row["head_sha"]
    commit = text_field(payload, "commit_id", "PullRequestReview") or head
    if commit != head:
        raise invalid("PullRequestReview", "commit_id")
    review = ctx.store.create_review(row, ctx.user, STATES[event], body or "", commit)
    return reply(request, _render(ctx, repo, number, review), 200)


@router.get(REVIEWS)
def list_reviews(owner: str, name: str, number: int, request: Request, ctx: CtxDep) -> Response:
    repo = ctx.repo(owner, name)
    reviews = ctx.store.reviews(ctx.pull(repo, number)["id"])
    page, per_page = page_args(request)
    chunk = reviews[(page - 1) * per_page : page * per_page]
    body = [_render(ctx, repo, number, r) for r in chunk]
    return reply(request, body, headers=link_header(request, page, per_page, len(reviews)))
