"""The local forge's answers validate against GitHub's own OpenAPI description.

The description is npm's `@octokit/openapi`, file `generated/api.github.com.json` (13 MB). It is
not vendored: point SENPAI_GITHUB_OPENAPI at it, or the test is skipped. To fetch it:

    npm pack @octokit/openapi@23.0.2 && tar xzf octokit-openapi-23.0.2.tgz package/generated/api.github.com.json

The validator below covers the OpenAPI 3.0 subset these schemas use: $ref, type, nullable,
required, properties, items, enum, allOf, anyOf and oneOf (oneOf checked like anyOf).
"""

import json
import os
from pathlib import Path

import httpx
import pytest
from forge_fixtures import TOKEN, commit_and_push, user_token

SPEC_ENV = "SENPAI_GITHUB_OPENAPI"
_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "object": dict, "array": list}
R = "/repos/{owner}/{repo}"


@pytest.fixture(scope="module")
def spec() -> dict:
    path = os.environ.get(SPEC_ENV)
    if not path or not Path(path).is_file():
        pytest.skip(f"set {SPEC_ENV} to @octokit/openapi's generated/api.github.com.json")
    return json.loads(Path(path).read_text())


def deref(spec: dict, schema: dict) -> dict:
    while "$ref" in schema:
        node = spec
        for part in schema["$ref"].split("/")[1:]:
            node = node[part]
        schema = node
    return schema


def _alternatives(spec: dict, value: object, schema: dict, path: str) -> list[str]:
    out = [e for sub in schema.get("allOf", []) for e in errors(spec, value, sub, path)]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            results = [errors(spec, value, sub, path) for sub in schema[key]]
            if all(results):
                out.append(f"{path}: matches no {key} branch, e.g. {min(results, key=len)[:3]}")
    return out


def errors(spec: dict, value: object, schema: dict, path: str = "$") -> list[str]:
    """Where `value` breaks `schema` (empty when it validates)."""
    schema = deref(spec, schema)
    if value is None:
        typed = "type" in schema or any(k in schema for k in ("allOf", "anyOf", "oneOf", "properties"))
        return [] if schema.get("nullable") or not typed else [f"{path}: null is not allowed"]
    out = _alternatives(spec, value, schema, path)
    kind = schema.get("type")
    if kind and (not isinstance(value, _TYPES[kind]) or (kind in ("integer", "number") and isinstance(value, bool))):
        return out + [f"{path}: expected {kind}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{path}: {value!r} not in {schema['enum']}")
    if isinstance(value, dict):
        out += [f"{path}.{key}: missing" for key in schema.get("required", []) if key not in value]
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                out += errors(spec, value[key], sub, f"{path}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            out += errors(spec, item, schema["items"], f"{path}[{i}]")
    return out


def response_schema(spec: dict, method: str, template: str, status: int) -> dict:
    response = deref(spec, spec["paths"][template][method.lower()]["responses"][str(status)])
    return response["content"]["application/json"]["schema"]


def test_the_validator_catches_a_bad_shape(spec):
    user = {"$ref": "#/components/schemas/simple-user"}
    assert any("login: missing" in e for e in errors(spec, {"id": 1}, user))
    assert errors(spec, {"id": "1"}, {"type": "object", "properties": {"id": {"type": "integer"}}})


def test_answers_match_githubs_openapi(spec, forge_repo, local_forge, tmp_path):
    forge, settings = forge_repo
    commit_and_push(forge, tmp_path / "seed", "senpai/a/b", {"a.txt": "x\n"}, start="advisor")
    repo = f"/repos/{settings.repo}"
    calls = [
        ("GET", "/user", "/user", None, 200),
        ("GET", repo, R, None, 200),
        ("POST", f"{repo}/pulls", R + "/pulls", {"title": "t", "head": "senpai/a/b", "base": "advisor"}, 201),
        ("GET", f"{repo}/pulls?state=all", R + "/pulls", None, 200),
        ("PATCH", f"{repo}/pulls/1", R + "/pulls/{pull_number}", {"body": "x"}, 200),
        ("GET", f"{repo}/pulls/1/files", R + "/pulls/{pull_number}/files", None, 200),
        ("POST", f"{repo}/issues", R + "/issues", {"title": "i", "labels": ["a"]}, 201),
        ("GET", f"{repo}/issues?state=all", R + "/issues", None, 200),
        ("PATCH", f"{repo}/issues/2", R + "/issues/{issue_number}", {"state": "closed"}, 200),
        ("POST", f"{repo}/issues/1/comments", R + "/issues/{issue_number}/comments", {"body": "c"}, 201),
        ("GET", f"{repo}/issues/1/comments", R + "/issues/{issue_number}/comments", None, 200),
        ("PUT", f"{repo}/issues/1/labels", R + "/issues/{issue_number}/labels", {"labels": ["y"]}, 200),
        ("POST", f"{repo}/labels", R + "/labels", {"name": "z", "color": "ff0000"}, 201),
        ("GET", f"{repo}/branches", R + "/branches", None, 200),
        ("GET", f"{repo}/branches/advisor", R + "/branches/{branch}", None, 200),
        ("GET", f"{repo}/git/ref/heads/advisor", R + "/git/ref/{ref}", None, 200),
        ("GET", f"{repo}/commits/advisor", R + "/commits/{ref}", None, 200),
        ("GET", f"{repo}/commits/{'0' * 40}", R + "/commits/{ref}", None, 422),
        ("POST", f"{repo}/pulls/1/reviews", R + "/pulls/{pull_number}/reviews", {"event": "COMMENT", "body": "ok"}, 200),
        ("GET", f"{repo}/pulls/1/reviews", R + "/pulls/{pull_number}/reviews", None, 200),
        ("PUT", f"{repo}/pulls/1/merge", R + "/pulls/{pull_number}/merge", {"sha": "0" * 40}, 409),
        ("PUT", f"{repo}/pulls/1/merge", R + "/pulls/{pull_number}/merge", {"commit_message": "m"}, 200),
        ("GET", f"{repo}/pulls/1", R + "/pulls/{pull_number}", None, 200),
        ("GET", f"{repo}/pulls/99", R + "/pulls/{pull_number}", None, 404),
        ("GET", f"{repo}/collaborators/senpai/permission", R + "/collaborators/{username}/permission", None, 200),
        ("GET", f"{repo}/collaborators/mallory/permission", R + "/collaborators/{username}/permission", None, 200),
        ("GET", f"{repo}/collaborators/nobody-at-all/permission", R + "/collaborators/{username}/permission", None, 404),
    ]
    user_token(local_forge, "mallory")  # a user who reads: `permission` read
    with httpx.Client(base_url=local_forge.base_url, headers={"Authorization": f"token {TOKEN}"}) as client:
        for method, url, template, body, status in calls:
            response = client.request(method, url, json=body)
            assert response.status_code == status, (method, url, response.text)
            problems = errors(spec, response.json(), response_schema(spec, method, template, status))
            assert problems == [], (method, template, problems[:5])
    refused = [  # as an outsider (a token without write access), then as nobody
        (user_token(local_forge, "mallory"), "PUT", f"{repo}/pulls/1/merge", R + "/pulls/{pull_number}/merge", 403),
        (None, "GET", "/user", "/user", 401),
    ]
    for token, method, url, template, status in refused:
        headers = {"Authorization": f"token {token}"} if token else {}
        response = httpx.request(method, f"{local_forge.base_url}{url}", json={}, headers=headers)
        assert response.status_code == status, (method, url, response.text)
        assert errors(spec, response.json(), response_schema(spec, method, template, status)) == []
