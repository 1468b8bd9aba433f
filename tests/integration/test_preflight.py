"""`senpai preflight` against real parts: the local forge over PyGithub, W&B offline, a minimal
chat-completions endpoint for LiteLLM, and the Kubernetes API-server stand-in.

There is no cluster here; the cluster rows run against tests/k8s_apiserver.py (every request body
schema-checked) and the live-cluster test is `make kind-e2e`. Online W&B needs a W&B server, so only
its missing-key path is tested.
"""

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

import httpx
import pytest
import yaml
from click.testing import CliRunner
from forge_fixtures import OWNER, TOKEN, commit_and_push, target_yaml, user_token
from k8s_fixtures import NAMESPACE, k8s_settings
from second_python import venv_with

from senpai.cli.main import cli, main
from senpai.cli.preflight import interpreter_checks, wall_check
from senpai.cli.wiring import make_forge, make_tracker
from senpai.config.harness import HarnessConfig, WallSettings
from senpai.fleet.wall import landlock_abi
from senpai.forge.base import Access
from senpai.job.walls import isolation
from senpai.preflight import CheckResult
from senpai.preflight.checks import LABELS, holdout_check, run_preflight, token_checks

if TYPE_CHECKING:
    from k8s_apiserver import ApiServer

    from senpai.fleet.k8s_cluster import ClusterProbe

TOKEN_ENV = "SENPAI_PREFLIGHT_TOKEN"


def config(tmp_path, repo: str, base_url: str, **overrides) -> HarnessConfig:
    raw = {
        "forge": {"base_url": base_url, "repo": repo, "token_env": TOKEN_ENV, "base_branch": "advisor"},
        "tracker": {"dir": str(tmp_path / "wandb"), "mode": "offline"},
        "fleet": {"backend": "local", "dir": str(tmp_path / "jobs")},
        "students": [{"name": "ada", "gpus": 1}],
        "state_dir": str(tmp_path / "state"),
    }
    for key, value in overrides.items():
        raw[key] = raw.get(key, {}) | value if isinstance(value, dict) and key != "students" else value
    return HarnessConfig.model_validate(raw)


def by_check(results: Iterable[CheckResult]) -> dict[str, CheckResult]:
    return {r.check: r for r in results}


def preflight(cfg: HarnessConfig, probe: "ClusterProbe | None" = None) -> dict[str, CheckResult]:
    return by_check(run_preflight(cfg, make_forge(cfg), make_tracker(cfg), probe))


@pytest.fixture
def repo_cfg(forge_repo, tmp_path, monkeypatch) -> HarnessConfig:
    _, settings = forge_repo
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    return config(tmp_path, settings.repo, settings.base_url)


# --------------------------------------------------------------------------- github, wandb, local fleet


def test_local_setup_passes_and_creates_the_labels(repo_cfg):
    first = preflight(repo_cfg)
    assert {r.outcome for r in first.values()} == {"pass", "skip"}, [r for r in first.values() if r.outcome == "fail"]
    assert first["labels"].detail == f"created {', '.join(LABELS)}"
    assert first["push access"].detail == f"{OWNER} can push to {repo_cfg.forge.repo}"
    assert first["base branch"].detail.startswith("advisor at ")
    assert first["W&B"].detail.startswith("offline mode, runs sync later")
    assert first["advisor LLM"].outcome == first["student LLM"].outcome == "skip"
    assert first["cluster"].outcome == "skip"
    again = preflight(repo_cfg)
    assert again["labels"].detail == f"all {len(LABELS)} present"


def test_the_local_fleets_sealed_holdout_must_be_a_folder(repo_cfg, tmp_path):
    assert preflight(repo_cfg)["sealed holdout"].outcome == "skip"  # none set
    missing = config(tmp_path, repo_cfg.forge.repo, repo_cfg.forge.base_url, fleet={"holdout_dir": str(tmp_path / "nope")})
    row = preflight(missing)["sealed holdout"]
    assert (row.outcome, row.detail) == ("fail", f"fleet.holdout_dir {tmp_path / 'nope'} is not a folder") and row.fix
    (tmp_path / "nope").mkdir()
    (tmp_path / "nope" / "holdout.csv").write_text("x\n")
    assert preflight(missing)["sealed holdout"].outcome == "pass"


def test_an_empty_sealed_holdout_fails(tmp_path):
    (tmp_path / "sealed").mkdir()
    row = holdout_check(config(tmp_path, "o/r", "http://127.0.0.1:9", fleet={"holdout_dir": str(tmp_path / "sealed")}))
    assert (row.outcome, row.detail) == ("fail", f"fleet.holdout_dir {tmp_path / 'sealed'} is empty (0 entries)")
    assert "put the holdout your evaluator reads in that folder" in row.fix


@pytest.mark.parametrize(
    "holdout, link, expected",
    [
        ("jobs/holdout", None, "is inside fleet.dir {tmp}/jobs, which job code can read"),
        ("state", None, "is inside state_dir {tmp}/state, which job code can read"),  # the folder itself
        ("wandb/sealed", None, "is inside tracker.dir {tmp}/wandb, which job code can read"),
        ("sealed", "jobs/x", "is inside fleet.dir {tmp}/jobs, which job code can read"),  # a link outside to inside
        (".", None, "holds fleet.dir {tmp}/jobs, which jobs write into"),
    ],
)
def test_a_sealed_holdout_that_shares_a_folder_with_jobs_fails(tmp_path, holdout, link, expected):
    real = tmp_path / (link or holdout)
    real.mkdir(parents=True, exist_ok=True)
    (real / "labels.csv").write_text("3,1,4\n")
    if link:
        (tmp_path / holdout).symlink_to(real, target_is_directory=True)
    where = str(tmp_path / holdout)
    row = holdout_check(config(tmp_path, "o/r", "http://127.0.0.1:9", fleet={"holdout_dir": where}))
    assert (row.outcome, row.detail) == ("fail", f"fleet.holdout_dir {where} {expected.format(tmp=tmp_path)}"), row.detail
    assert "move the holdout to a folder apart from" in row.fix and "set fleet.holdout_dir to it" in row.fix


def test_a_repo_the_token_cannot_push_to_fails_with_a_fix(repo_cfg, monkeypatch, local_forge):
    monkeypatch.setenv(TOKEN_ENV, user_token(local_forge, "mallory"))
    push = preflight(repo_cfg)["push access"]
    assert (push.outcome, push.detail) == ("fail", f"mallory cannot push to {repo_cfg.forge.repo}")
    assert "collaborator" in push.fix
    url = f"{repo_cfg.forge.base_url}/repos/{repo_cfg.forge.repo}/collaborators/mallory"
    httpx.put(url, headers={"Authorization": f"token {TOKEN}"}).raise_for_status()
    assert preflight(repo_cfg)["push access"].outcome == "pass"


def test_missing_base_branch_fails(repo_cfg):
    cfg = repo_cfg.model_copy(update={"forge": repo_cfg.forge.model_copy(update={"base_branch": "research"})})
    results = preflight(cfg)
    assert results["base branch"].outcome == "fail" and "git push origin <main>:research" in results["base branch"].fix


def test_no_token_fails_on_the_local_forge_too(repo_cfg, monkeypatch):
    """The local forge answers writes without a token with 401, as GitHub does: no token is a failure."""
    monkeypatch.delenv(TOKEN_ENV)
    results = preflight(repo_cfg)
    token = results["token"]
    assert (token.outcome, token.detail) == ("fail", f"${TOKEN_ENV} is not set or empty")
    assert "senpai forge token" in token.fix


def test_no_token_fails_on_github_com_and_when_the_forge_refuses(repo_cfg, monkeypatch):
    monkeypatch.delenv(TOKEN_ENV)
    github = repo_cfg.model_copy(update={"forge": repo_cfg.forge.model_copy(update={"base_url": "https://api.github.com"})})
    token = by_check(token_checks(github, Access(login="senpai", scopes=None, push=True, admin=False)))["token"]
    assert token.outcome == "fail" and token.fix.startswith(f"export {TOKEN_ENV}=")
    cant_push = by_check(token_checks(repo_cfg, Access(login="senpai", scopes=None, push=False, admin=False)))["token"]
    assert cant_push.outcome == "fail"
    missing = repo_cfg.model_copy(update={"forge": repo_cfg.forge.model_copy(update={"repo": f"{OWNER}/nope"})})
    results = preflight(missing)
    assert results["token"].outcome == results["repository"].outcome == "fail"


def test_missing_repository_fails(repo_cfg):
    cfg = repo_cfg.model_copy(update={"forge": repo_cfg.forge.model_copy(update={"repo": f"{OWNER}/nope"})})
    results = preflight(cfg)
    assert results["repository"].outcome == "fail" and "push access" not in results


def test_online_wandb_without_a_key_fails(repo_cfg, monkeypatch):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    cfg = repo_cfg.model_copy(update={"tracker": repo_cfg.tracker.model_copy(update={"mode": "online"})})
    wandb = preflight(cfg)["W&B"]
    assert (wandb.outcome, wandb.detail) == ("fail", "WANDB_API_KEY is not set")


def test_cli_json_and_exit_statuses(repo_cfg, tmp_path, monkeypatch, capsys):
    path = tmp_path / "harness.yaml"
    path.write_text(yaml.safe_dump(repo_cfg.model_dump(mode="json")))
    ok = CliRunner().invoke(cli, ["preflight", "--config", str(path), "--json"])
    assert ok.exit_code == 0, ok.output
    assert {r["outcome"] for r in json.loads(ok.output)} <= {"pass", "skip"}
    bad = repo_cfg.model_dump(mode="json")
    bad["forge"]["base_branch"] = "research"
    path.write_text(yaml.safe_dump(bad))
    table = CliRunner().invoke(cli, ["preflight", "--config", str(path)], terminal_width=200)
    assert table.exit_code == 1 and "base branch" in table.output and "fail" in table.output
    path.write_text("forge: {}\n")
    monkeypatch.setattr("sys.argv", ["senpai", "preflight", "--config", str(path)])
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 2


def run_senpai(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """`python -m senpai ...` as a user runs it: the console entry point's exit status and streams."""
    return subprocess.run([sys.executable, "-m", "senpai", *args], capture_output=True, text=True, env=env, timeout=120)


def test_the_console_entry_point_exits_1_on_a_failure_and_prints_only_json(repo_cfg, llm_url, tmp_path):
    path = tmp_path / "harness.yaml"
    path.write_text(yaml.safe_dump(repo_cfg.model_dump(mode="json")))
    env = {**os.environ, TOKEN_ENV: TOKEN}
    ok = run_senpai("preflight", "--config", str(path), "--json", env=env)
    assert ok.returncode == 0, ok.stderr
    assert {r["outcome"] for r in json.loads(ok.stdout)} <= {"pass", "skip"}
    llm = {"model": "openai/senpai-preflight-model", "base_url": llm_url, "api_key_env": "SENPAI_TEST_LLM_KEY"}
    bad = repo_cfg.model_dump(mode="json") | {"runtime": {"advisor": {"kind": "openhands", "llm": llm}}}
    path.write_text(yaml.safe_dump(bad))
    failing = run_senpai("preflight", "--config", str(path), "--json", env=env | {"SENPAI_TEST_LLM_KEY": "bad-key"})
    assert failing.returncode == 1, failing.stderr
    advisor = by_check(CheckResult.model_validate(r) for r in json.loads(failing.stdout))["advisor LLM"]  # stdout is JSON only
    assert advisor.outcome == "fail" and advisor.detail.endswith("invalid api key ***")


# --------------------------------------------------------------------------- LLM


class _ChatCompletions(BaseHTTPRequestHandler):
    """POST /v1/chat/completions: a 1-token answer, or 401 for a wrong key. Records each request."""

    seen: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
        ok = self.headers.get("Authorization") == "Bearer good-key"
        answer = {
            "id": "c1",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "OK"}, "finish_reason": "length"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
        }
        error = {"error": {"message": "invalid api key bad-key", "type": "invalid_request_error", "code": "invalid_api_key"}}
        data = json.dumps(answer if ok else error).encode()
        self.send_response(200 if ok else 401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def llm_url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChatCompletions)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _ChatCompletions.seen = []
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


PRICES = {"input_cost_per_token": 1e-6, "output_cost_per_token": 4e-6}  # a model LiteLLM does not price: no warning


def test_llm_checks(repo_cfg, llm_url, monkeypatch):
    llm = {"model": "openai/senpai-preflight-model", "base_url": llm_url, "api_key_env": "SENPAI_TEST_LLM_KEY", **PRICES}
    runtime = {"advisor": {"kind": "openhands", "llm": llm}, "student": {"kind": "openhands", "llm": llm}}
    cfg = HarnessConfig.model_validate({**repo_cfg.model_dump(), "runtime": runtime})
    monkeypatch.delenv("SENPAI_TEST_LLM_KEY", raising=False)
    provider = {"advisor": {"kind": "openhands", "llm": llm | {"base_url": None}}}  # the provider's endpoint needs a key
    missing = preflight(HarnessConfig.model_validate({**repo_cfg.model_dump(), "runtime": provider}))["advisor LLM"]
    assert (missing.outcome, missing.detail) == ("fail", "$SENPAI_TEST_LLM_KEY is not set")
    assert not _ChatCompletions.seen
    monkeypatch.setenv("SENPAI_TEST_LLM_KEY", "good-key")
    results = preflight(cfg)
    assert results["advisor LLM"].outcome == results["student LLM"].outcome == "pass"
    (request,) = _ChatCompletions.seen  # both roles share one model: one completion
    assert (request["path"], request["auth"], request["max_tokens"]) == ("/v1/chat/completions", "Bearer good-key", 1)
    monkeypatch.setenv("SENPAI_TEST_LLM_KEY", "bad-key")
    rejected = preflight(cfg)["student LLM"]
    assert rejected.outcome == "fail" and rejected.detail.endswith("invalid api key ***")  # the key is redacted


def test_a_keyless_server_is_called_without_a_key_as_the_runtime_does(repo_cfg, llm_server, monkeypatch):
    monkeypatch.delenv("LLM_API_KEY", raising=False)
    llm = {"model": "openai/qwen", "base_url": llm_server.base_url, **PRICES}
    cfg = HarnessConfig.model_validate({**repo_cfg.model_dump(), "runtime": {"student": {"kind": "openhands", "llm": llm}}})
    student = preflight(cfg)["student LLM"]
    assert student.outcome == "pass" and student.detail.endswith("without a key ($LLM_API_KEY unset)")
    (request,) = llm_server.state.requests
    assert (request["model"], request["max_tokens"]) == ("qwen", 1)
    down = cfg.runtime.student.llm.model_copy(update={"base_url": "http://127.0.0.1:9/v1"})
    cfg = cfg.model_copy(
        update={"runtime": cfg.runtime.model_copy(update={"student": cfg.runtime.student.model_copy(update={"llm": down})})}
    )
    unreachable = preflight(cfg)["student LLM"]
    assert unreachable.outcome == "fail" and unreachable.detail.endswith("Connection error.")
    assert "if the server needs a key, export LLM_API_KEY" in unreachable.fix


def test_an_unpriced_model_is_a_warning_that_does_not_fail_the_preflight(repo_cfg, llm_server, monkeypatch, tmp_path):
    """A local alias LiteLLM cannot price, with no per-token prices, warns; prices (even 0) or a model
    LiteLLM prices pass. The completion itself succeeds in every case."""
    monkeypatch.delenv("LLM_API_KEY", raising=False)
    alias = {"model": "openai/qwen", "base_url": llm_server.base_url}
    runtime = {"advisor": {"kind": "openhands", "llm": alias}, "student": {"kind": "openhands", "llm": alias}}
    cfg = HarnessConfig.model_validate({**repo_cfg.model_dump(), "runtime": runtime})
    advisor = preflight(cfg)["advisor LLM"]
    assert (
        advisor.outcome == "warn" and advisor.detail.startswith("qwen at ") and "answered a 1-token completion" in advisor.detail
    )
    assert advisor.detail.endswith(
        "; unpriced: LiteLLM has no price for openai/qwen and its per-token prices are not both set, so its calls count $0"
    )
    assert advisor.fix == "set runtime.advisor.llm.input_cost_per_token and output_cost_per_token (dollars; 0 for a free server)"
    for llm in (alias | {"input_cost_per_token": 0, "output_cost_per_token": 0}, alias | {"model": "openai/gpt-4o"}):
        priced = {"advisor": {"kind": "openhands", "llm": llm}}
        row = preflight(HarnessConfig.model_validate({**repo_cfg.model_dump(), "runtime": priced}))["advisor LLM"]
        assert (row.outcome, row.fix) == ("pass", None), row.detail
    path = tmp_path / "harness.yaml"
    path.write_text(yaml.safe_dump(cfg.model_dump(mode="json")))
    shown = CliRunner().invoke(cli, ["preflight", "--config", str(path)], terminal_width=300)
    assert shown.exit_code == 0, shown.output
    assert "warned: 2  failed: 0" in shown.output
    as_json = CliRunner().invoke(cli, ["preflight", "--config", str(path), "--json"])
    rows = by_check(CheckResult.model_validate(r) for r in json.loads(as_json.stdout))
    assert as_json.exit_code == 0 and rows["advisor LLM"].outcome == rows["student LLM"].outcome == "warn"


# --------------------------------------------------------------------------- cluster


def gpu_node(name: str, gpus: str, labels: dict[str, str]) -> dict:
    alloc = {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": gpus}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "status": {"allocatable": alloc}}


@pytest.fixture
def cluster_cfg(repo_cfg) -> HarnessConfig:
    return repo_cfg.model_copy(update={"fleet": k8s_settings()})


def probe_for(server: "ApiServer") -> "ClusterProbe":
    from kubernetes import client  # the kubernetes client (seconds): when run, not when the suite is collected

    from senpai.fleet.k8s_cluster import ClusterProbe

    return ClusterProbe(k8s_settings(), client.ApiClient(client.Configuration(host=server.url)), retry_wait=0.0)


def test_cluster_checks_pass_on_a_ready_cluster(cluster_cfg, apiserver):
    apiserver.cluster.nodes = [
        gpu_node("cpu-1", "0", {}),
        gpu_node("gpu-1", "1", {"nvidia.com/gpu.present": "true"}),
    ]
    results = preflight(cluster_cfg, probe_for(apiserver))
    cluster = {k: r for k, r in results.items() if r.area == "cluster"}
    assert {r.outcome for r in cluster.values()} == {"pass"}, [r for r in cluster.values() if r.outcome != "pass"]
    assert cluster["cluster connection"].detail == f"API server {apiserver.url}"
    assert len([k for k in cluster if k.startswith("RBAC ")]) == 9
    assert cluster["GPU nodes"].detail.startswith("1 of the nodes matching")
    assert cluster["Secret senpai-secrets"].detail == "keys github-token, wandb-api-key present"
    reviews = [b for m, p, b in apiserver.cluster.requests if p.endswith("/selfsubjectaccessreviews")]
    assert {(r["spec"]["resourceAttributes"]["verb"], r["spec"]["resourceAttributes"]["resource"]) for r in reviews} >= {
        ("create", "jobs"),
        ("get", "pods"),
    }


def test_a_job_pod_that_takes_senpais_own_path_fails(cluster_cfg, apiserver):
    pod = {"volumes": [{"name": "scratch", "emptyDir": {}}], "volume_mounts": [{"name": "scratch", "mountPath": "/work"}]}
    cfg = cluster_cfg.model_copy(update={"fleet": k8s_settings(pod=pod)})
    row = preflight(cfg, probe_for(apiserver))["Job pod"]
    assert row.outcome == "fail" and "/work is a mount of senpai's own" in row.detail and "jobs.*" in row.fix
    ok = preflight(cluster_cfg, probe_for(apiserver))["Job pod"]
    assert (ok.outcome, ok.detail) == ("pass", "0 env, 0 envFrom, 0 volumes added")


def test_cluster_failures_name_their_fix(cluster_cfg):
    from k8s_apiserver import ApiServer

    with ApiServer() as server:
        c = server.cluster
        c.deny.update({("get", "pods/log"), ("list", "nodes")})
        c.secrets[(NAMESPACE, "senpai-secrets")] = {"wandb-api-key": "x"}
        c.pvcs[(NAMESPACE, "senpai-data")] = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "senpai-data"},
            "status": {"phase": "Pending"},
        }
        results = preflight(cluster_cfg, probe_for(server))
    assert results["RBAC get pods/log"].outcome == "fail"
    assert results["RBAC get pods/log"].fix == "add to the wrapper's Role: apiGroups [''], resources [pods/log], verbs [get]"
    assert results["RBAC create jobs (batch)"].outcome == "pass"
    assert results["PVC"].outcome == "fail" and results["PVC"].detail == "senpai-data is Pending"
    assert results["ConfigMap"].outcome == "fail" and results["ConfigMap"].detail == "senpai-config does not exist"
    secret = results["Secret senpai-secrets"]
    assert (secret.outcome, secret.detail) == ("fail", "has no key github-token")
    assert results["GPU nodes"].outcome == "skip" and "may not list nodes" in results["GPU nodes"].detail


@pytest.mark.parametrize(
    "holdout, outcome, detail",
    [
        ({"secret": "digits-holdout"}, "pass", "Secret digits-holdout holds labels.csv"),
        ({"secret": "nowhere"}, "fail", "Secret nowhere does not exist"),
        ({"secret": "empty"}, "fail", "Secret empty has no keys"),
        ({"claim": "sealed", "sub_path": "v1"}, "pass", "claim sealed is Bound"),
        ({"claim": "nowhere"}, "fail", "claim nowhere does not exist"),
    ],
)
def test_the_sealed_holdout_is_checked(cluster_cfg, apiserver, holdout, outcome, detail):
    c = apiserver.cluster
    c.secrets[(NAMESPACE, "digits-holdout")] = {"labels.csv": "3,1,4\n"}
    c.secrets[(NAMESPACE, "empty")] = {}
    c.pvcs[(NAMESPACE, "sealed")] = {**c.pvcs[(NAMESPACE, "senpai-data")], "metadata": {"name": "sealed", "namespace": NAMESPACE}}
    cfg = cluster_cfg.model_copy(update={"fleet": k8s_settings(holdout=holdout)})
    row = preflight(cfg, probe_for(apiserver))["sealed holdout"]
    assert (row.outcome, row.detail) == (outcome, detail)
    assert "3,1,4" not in str(row)  # key names only, never the data
    assert "sealed holdout" not in preflight(cluster_cfg, probe_for(apiserver))  # none set: no row


def test_no_gpu_node_big_enough_fails(cluster_cfg, apiserver):
    apiserver.cluster.nodes = [gpu_node("gpu-1", "1", {"nvidia.com/gpu.present": "true"})]
    cfg = cluster_cfg.model_copy(
        update={"students": [*cluster_cfg.students, cluster_cfg.students[0].model_copy(update={"name": "bo", "gpus": 4})]}
    )
    gpus = preflight(cfg, probe_for(apiserver))["GPU nodes"]
    assert (
        gpus.outcome == "fail"
        and gpus.detail == "none of 1 nodes matching {'nvidia.com/gpu.present': 'true'} offers 4 nvidia.com/gpu"
    )


def test_missing_namespace_fails(cluster_cfg):
    from k8s_apiserver import ApiServer

    with ApiServer() as server:
        server.cluster.namespaces.clear()
        namespace = preflight(cluster_cfg, probe_for(server))["namespace"]
    assert namespace.outcome == "fail" and namespace.fix == f"kubectl create namespace {NAMESPACE}"


def test_no_cluster_config_fails_the_cluster_row_and_the_other_areas_still_run(cluster_cfg, tmp_path, monkeypatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
    path = tmp_path / "harness.yaml"
    path.write_text(yaml.safe_dump(cluster_cfg.model_dump(mode="json")))
    run = CliRunner().invoke(cli, ["preflight", "--config", str(path), "--json"])
    assert run.exit_code == 1, run.output
    results = by_check(CheckResult.model_validate(r) for r in json.loads(run.output))
    assert {r.area for r in results.values()} == {"github", "wandb", "llm", "cluster"}
    assert results["push access"].outcome == "pass" and results["W&B"].outcome == "pass"
    (cluster,) = [r for r in results.values() if r.area == "cluster"]
    assert (cluster.check, cluster.outcome) == ("cluster connection", "fail")
    assert cluster.detail.startswith("fleet.backend kubernetes: cannot load the cluster config: ")
    assert cluster.fix == "set KUBECONFIG or fleet.kubeconfig_context, or run in the cluster"


@pytest.mark.parametrize(
    "scopes, outcome",
    [(["repo", "workflow"], "pass"), (["public_repo", "read:org"], "fail"), ([], "fail"), (None, "pass")],
)
def test_classic_token_needs_the_repo_scope(repo_cfg, scopes, outcome):
    access = Access(login="senpai", scopes=scopes, push=True, admin=False)
    scope = by_check(token_checks(repo_cfg, access))["token scopes"]
    assert scope.outcome == outcome
    if outcome == "fail":
        assert "repo scope" in scope.fix


def test_the_wall_is_tried_and_described(repo_cfg, tmp_path):
    """preflight runs senpai's interpreter behind the wall a PR's code gets, and says what it is."""
    wall = wall_check(repo_cfg)
    assert wall.outcome == "pass", wall
    assert ("Landlock ABI" in wall.detail) == bool(landlock_abi()) and ("a view of its own" in wall.detail) == isolation()
    if os.geteuid() == 0:  # as root: a uid that cannot run the interpreter is named before any PR's code runs
        (tmp_path / "locked").mkdir(mode=0o700)
        locked = repo_cfg.model_copy(update={"wall": WallSettings(uid=4321, readable=[str(tmp_path / "locked")])})
        bad = wall_check(locked)
        assert bad.outcome == "fail" and "wall.uid 4321 cannot reach" in bad.detail, bad


def test_the_interpreters_the_base_names_are_run_here(repo_cfg, forge_repo, tmp_path):
    """holdout.python and the train command's interpreter, read from senpai.yaml at the base branch,
    each pass with the version it reports, fail naming the field, or skip where none is named."""
    forge, _ = forge_repo
    rows = by_check(interpreter_checks(repo_cfg, forge))  # the seed has no senpai.yaml
    assert list(rows) == ["interpreters"] and rows["interpreters"].outcome == "skip", rows
    assert "senpai.yaml at advisor cannot be read" in rows["interpreters"].detail

    commit_and_push(forge, tmp_path / "seed", "advisor", {"senpai.yaml": target_yaml({"min_floor": 0.01})}, start="advisor")
    rows = by_check(interpreter_checks(repo_cfg, forge))  # train: `python train.py`, found on PATH
    assert (rows["holdout.python"].outcome, rows["train interpreter"].outcome) == ("skip", "skip"), rows

    python = venv_with(tmp_path / "venv", {})
    version = "%d.%d" % sys.version_info[:2]
    good = target_yaml({"python": str(python), "min_floor": 0.01}, train=f"{python} train.py")
    commit_and_push(forge, tmp_path / "seed", "advisor", {"senpai.yaml": good}, start="advisor")
    rows = by_check(interpreter_checks(repo_cfg, forge))
    assert rows["holdout.python"].outcome == rows["train interpreter"].outcome == "pass", rows
    assert rows["train interpreter"].detail == f"{python} runs as Python {version}; the train step's wall grants it"
    assert rows["holdout.python"].detail.startswith(f"{python} runs as Python {version}")

    fake = tmp_path / "opt" / "python3"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho not python\n")
    fake.chmod(0o755)
    bad = target_yaml({"python": str(tmp_path / "gone" / "python"), "min_floor": 0.01}, train=f"{fake} train.py")
    commit_and_push(forge, tmp_path / "seed", "advisor", {"senpai.yaml": bad}, start="advisor")
    rows = by_check(interpreter_checks(repo_cfg, forge))
    assert rows["holdout.python"].outcome == rows["train interpreter"].outcome == "fail", rows
    assert "does not exist on this machine" in rows["holdout.python"].detail
    assert rows["train interpreter"].detail.startswith(f"train: {fake} does not run as a Python 3 interpreter")


def test_an_interpreter_the_wall_would_not_grant_fails_its_row(repo_cfg, forge_repo, tmp_path):
    """`~/python3`, a link in the home folder to a venv's python, reports that folder as its own:
    the wall refuses it rather than un-hide the home folder, so preflight must not say it grants it."""
    forge, _ = forge_repo
    home = tmp_path / "home"
    link = home / "python3"
    home.mkdir()
    link.symlink_to(venv_with(tmp_path / "venv", {}))
    cfg = repo_cfg.model_copy(update={"wall": WallSettings(hidden=[str(home)])})
    commit_and_push(
        forge,
        tmp_path / "seed",
        "advisor",
        {"senpai.yaml": target_yaml({"python": str(link), "min_floor": 0.01}, train=f"{link} t.py")},
        start="advisor",
    )
    rows = by_check(interpreter_checks(cfg, forge))
    for row in (rows["holdout.python"], rows["train interpreter"]):
        assert row.outcome == "fail" and f"{link} reads {home}, which holds {home}" in row.detail, row
