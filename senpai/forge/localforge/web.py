"""HTTP plumbing shared by the local forge's routes: errors, auth, ETags and pagination.

Every GET answer goes through `reply`, which adds a strong ETag (SHA-256 of the body, plus an
optional salt) and answers a matching `If-None-Match` with 304 and no body, as GitHub does.
"""

import base64
import hashlib
import json
from typing import Annotated, Any
from urllib.parse import unquote_to_bytes, urlencode

from fastapi import Depends, Request, Response
from starlette.convertors import IntegerConvertor, register_url_convertor

DOCS = "https://docs.github.com/rest"
MAX_BODY = 1 << 20  # bytes of a REST request body (GitHub refuses far smaller issue bodies)
MAX_PAGE = 100_000


class NumberConvertor(IntegerConvertor):
    """`{x:num}`: an issue, PR or comment number of at most 15 digits (SQLite's integers are 64-bit);
    a longer one matches no route and answers 404, as GitHub does for ids that do not exist."""

    regex = "[0-9]{1,15}"


register_url_convertor("num", NumberConvertor())


class ApiError(Exception):
    """An error answered as GitHub does: `{"message", "documentation_url"[, "errors"]}`, with `headers`
    (e.g. Retry-After)."""

    def __init__(
        self, status: int, message: str, errors: list[dict] | None = None, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = errors
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"message": self.message, "documentation_url": DOCS}
        if self.errors is not None:
            out["errors"] = self.errors
        return out


def not_found() -> ApiError:
    return ApiError(404, "Not Found")


def text_field(payload: dict[str, Any], key: str, resource: str, required: bool = False) -> str | None:
    """payload[key] when it is a string (or absent/null and not `required`); else 422 as GitHub answers."""
    value = payload.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise invalid(resource, key, "missing_field" if value is None else "invalid")
    return value


def invalid(resource: str, field: str, code: str = "invalid", message: str | None = None) -> ApiError:
    error = {"resource": resource, "field": field, "code": code}
    if message:
        error["message"] = message
    return ApiError(422, "Validation Failed", [error])


def presented_token(authorization: str | None) -> str | None:
    """The token of an Authorization header (`token X`, `Bearer X`, `Basic base64(user:X)`); None if absent.

    A header that is present but unreadable yields "" (an unknown token, answered 401).
    """
    if not authorization:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    token = value.strip()
    if scheme.lower() == "basic":
        try:
            user, _, token = base64.b64decode(token, validate=True).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return ""
        token = token or user
    return token if scheme.lower() in ("token", "bearer", "basic") else ""


def unauthenticated(message: str = "Requires authentication") -> ApiError:
    """401 as GitHub answers it: "Requires authentication" (no token) or "Bad credentials" (unknown)."""
    return ApiError(401, message)


def forbidden(message: str = "Must have write access to this repository.") -> ApiError:
    return ApiError(403, message)


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
    if page > MAX_PAGE:
        raise ApiError(422, "In order to keep the API fast for everyone, pagination is limited for this resource.")
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
    if len(raw) > MAX_BODY:
        raise ApiError(413, "Request body too large")
    if not raw.strip():
        return None
    try:
        data = json.loads(raw)
        json.dumps(data, ensure_ascii=False).encode()  # lone surrogates cannot be stored: refuse them here
    except (ValueError, RecursionError) as exc:  # UnicodeError is a ValueError
        raise ApiError(400, "Problems parsing JSON") from exc
    if _has_nul(data):
        raise ApiError(400, "Problems parsing JSON: a string holds a NUL character")
    return data


def _has_nul(data: Any) -> bool:
    """Whether any string of parsed JSON (key or value, at any depth) holds NUL, which no git
    argument, ref or commit message may carry. Iterative: depth is bounded by the parser, not here."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str) and "\0" in item:
            return True
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def control_in_target(scope: dict) -> bool:
    """Whether an ASGI request's decoded path or query holds a control character (U+0000-U+001F,
    U+007F): no ref, file path or search term of the forge carries one, and git refuses NUL outright."""
    target = scope.get("path", "").encode("utf-8", "surrogatepass") + unquote_to_bytes(scope.get("query_string", b""))
    return any(byte < 0x20 or byte == 0x7F for byte in target)


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
