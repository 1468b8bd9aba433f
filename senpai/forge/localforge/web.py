"""HTTP plumbing shared by the local forge's routes: errors, auth, ETags and pagination.

Every GET answer goes through `reply`, which adds a strong ETag (SHA-256 of the body, plus an
optional salt) and answers a matching `If-None-Match` with 304 and no body, as GitHub does.
"""

import base64
import hashlib
import json
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import Depends, Request, Response

DOCS = "https://docs.github.com/rest"
DEFAULT_USER = "senpai"


class ApiError(Exception):
    """An error answered as GitHub does: `{"message", "documentation_url"[, "errors"]}`."""

    def __init__(self, status: int, message: str, errors: list[dict] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = errors

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"message": self.message, "documentation_url": DOCS}
        if self.errors is not None:
            out["errors"] = self.errors
        return out


def not_found() -> ApiError:
    return ApiError(404, "Not Found")


def invalid(resource: str, field: str, code: str = "invalid", message: str | None = None) -> ApiError:
    error = {"resource": resource, "field": field, "code": code}
    if message:
        error["message"] = message
    return ApiError(422, "Validation Failed", [error])


def token_login(authorization: str | None) -> str:
    """The login a request acts as.

    No token: the owner user `senpai`.  A token of the form `login:anything` acts as `login`; any
    other token acts as `senpai`.  Accepts `token X`, `Bearer X` and `Basic base64(user:X)`.
    """
    if not authorization or " " not in authorization:
        return DEFAULT_USER
    scheme, _, value = authorization.strip().partition(" ")
    token = value.strip()
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(token).decode()
        except (ValueError, UnicodeDecodeError):
            return DEFAULT_USER
        user, _, token = decoded.partition(":")
        token = token or user
    login, sep, _ = token.partition(":")
    if sep and login and _valid_login(login):
        return login
    return DEFAULT_USER


def _valid_login(login: str) -> bool:
    return login.replace("-", "").replace("_", "").isalnum() and len(login) <= 39


def etag_of(body: bytes, salt: str = "") -> str:
    return '"' + hashlib.sha256(body + salt.encode()).hexdigest()[:40] + '"'


def _matches(if_none_match: str | None, etag: str) -> bool:
    if not if_none_match:
        return False
    tags = [t.strip().removeprefix("W/") for t in if_none_match.split(",")]
    return "*" in tags or etag in tags


def reply(
    request: Request,
    data: Any,
    status: int = 200,
    headers: dict[str, str] | None = None,
    salt: str = "",
) -> Response:
    """JSON response; GETs carry an ETag and honour If-None-Match with 304."""
    body = json.dumps(data, separators=(",", ":")).encode()
    out = dict(headers or {})
    if request.method == "GET":
        out["ETag"] = etag_of(body, salt)
        out["Cache-Control"] = "private, max-age=60, s-maxage=60"
        out["Vary"] = "Accept, Authorization"
        if _matches(request.headers.get("if-none-match"), out["ETag"]):
            return Response(status_code=304, headers=out)
    return Response(body, status_code=status, headers=out, media_type="application/json; charset=utf-8")


def page_args(request: Request) -> tuple[int, int]:
    """(page, per_page) from the query: GitHub's defaults 1 and 30, per_page capped at 100."""
    try:
        page = max(1, int(request.query_params.get("page", 1)))
        per_page = min(100, max(1, int(request.query_params.get("per_page", 30))))
    except ValueError as exc:
        raise ApiError(400, "Invalid pagination parameter") from exc
    return page, per_page


def link_header(request: Request, page: int, per_page: int, total: int) -> dict[str, str]:
    """GitHub's `Link` header (absolute URLs: next, last, first, prev) for one page of `total` items."""
    last = max(1, -(-total // per_page))
    rels = []
    if page < last:
        rels += [("next", page + 1), ("last", last)]
    if page > 1:
        rels += [("first", 1), ("prev", page - 1)]
    if not rels:
        return {}
    base = f"{str(request.base_url).rstrip('/')}{request.url.path}"
    params = dict(request.query_params)
    links = []
    for rel, number in rels:
        query = urlencode({**params, "per_page": per_page, "page": number})
        links.append(f'<{base}?{query}>; rel="{rel}"')
    return {"Link": ", ".join(links)}


def root_url(request: Request) -> str:
    """Server root as the client sees it (scheme://host:port), used for every URL we render."""
    return str(request.base_url).rstrip("/")


async def any_json(request: Request) -> Any:
    """The request's JSON body (any type); None when there is none. Raises ApiError 400."""
    raw = await request.body()
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise ApiError(400, "Problems parsing JSON") from exc


async def json_body(request: Request) -> dict[str, Any]:
    """The request's JSON object body; empty dict when there is none. Raises ApiError 400."""
    data = await any_json(request)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ApiError(400, "Body should be a JSON object")
    return data


JsonBody = Annotated[dict, Depends(json_body)]
AnyJson = Annotated[Any, Depends(any_json)]
