"""The Helm chart charts/senpai, rendered and linted by the real Helm engine (helm-sdkpy, Helm v4).

Every rendered manifest is checked against the Kubernetes 1.30 and 1.37 schemas in strict mode
(kubernetes-validate), the rendered harness.yaml against HarnessConfig, and bad values against
the messages of values.schema.json and of the chart's own checks. All renders run in one
subprocess (tests/helm_render.py) because Helm reads HELM_DRIVER=memory only at process start.
"""

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from kubernetes import client

from senpai.config.harness import HarnessConfig
from senpai.fleet.base import JobSpec
from senpai.fleet.k8s_job import build_job

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "senpai"
RENDER = ROOT / "tests" / "helm_render.py"
NAMESPACE, RELEASE = "research", "digits"
KUBE_VERSIONS = ["1.30", "1.37"]

REQUIRED = {"forge": {"repo": "acme/digits"}, "secrets": {"github": {"name": "senpai-github", "key": "token"}}}
BIG = {
    "forge": {"repo": "acme/llm-pretrain", "baseUrl": "https://ghe.example.com/api/v3", "baseBranch": "research"},
    "images": {
        "wrapper": {"repository": "registry.example.com/senpai/wrapper", "tag": "0.1.0"},
        "advisor": {"repository": "registry.example.com/senpai/advisor", "tag": "0.1.0"},
        "student": {"repository": "registry.example.com/senpai/student", "tag": "0.1.0-cu128"},
        "verifier": {"repository": "", "tag": ""},
        "pullPolicy": "Always",
    },
    "imagePullSecrets": [{"name": "registry-creds"}],
    "secrets": {
        "github": {"name": "senpai-github", "key": "token"},
        "wandb": {"name": "wandb", "key": "api-key"},
        "llm": [{"env": "LLM_API_KEY", "name": "llm-keys", "key": "anthropic"}],
    },
    "tracker": {"project": "pretrain", "entity": "acme", "mode": "online"},
    "runtime": {
        "advisor": {
            "kind": "openhands",
            "llm": {"model": "anthropic/claude-sonnet-4-5", "reasoningEffort": "high", "inputCostPerToken": 3e-06},
        },
        "student": {"kind": "openhands", "llm": {"model": "anthropic/claude-sonnet-4-5"}, "budget": {"dollars": 20.0}},
    },
    "students": [{"name": n, "gpus": 8, "cpus": 32} for n in ("ada", "bo", "cy", "dee")],
    "gpu": {
        "resource": "nvidia.com/gpu",
        "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    },
    "resources": {"student": {"requests": {"cpu": "32", "memory": "256Gi"}, "limits": {"memory": "512Gi"}}},
    "persistence": {"existingClaim": "datasets", "accessModes": ["ReadWriteMany"]},
    "loop": {"maxExperiments": 40, "patience": 8},
    "wrapper": {"logFormat": "json"},
}


def with_required(**changes: object) -> dict:
    """REQUIRED values with top-level sections replaced by `changes`."""
    return {**copy.deepcopy(REQUIRED), **changes}


HOLDOUT_SECRET = with_required(holdout={"secret": "digits-holdout"})
HOLDOUT_CLAIM = with_required(holdout={"claim": "sealed", "subPath": "digits/v1", "mountPath": "/sealed"})
BAD = {  # values -> what Helm must say
    "negative gpus": (with_required(students=[{"name": "ada", "gpus": -1}]), "at '/students/0/gpus': minimum: got -1, want 0"),
    "fractional gpus": (
        with_required(students=[{"name": "ada", "gpus": 0.5}]),
        "at '/students/0/gpus': got number, want integer",
    ),
    "zero cpus": (
        with_required(students=[{"name": "ada", "gpus": 1, "cpus": 0}]),
        "at '/students/0/cpus': minimum: got 0, want 1",
    ),
    "student name not a DNS label": (
        with_required(students=[{"name": "Ada_1", "gpus": 1}]),
        "at '/students/0/name': 'Ada_1' does not match pattern '^[a-z0-9][a-z0-9-]{0,30}$'",
    ),
    "token beside the secret ref": (
        with_required(secrets={"github": {"name": "gh", "key": "token", "token": "ghp_0123456789"}}),
        "at '/secrets/github': additional properties 'token' not allowed",
    ),
    "token instead of the secret ref": (
        with_required(secrets={"github": "ghp_0123456789"}),
        "at '/secrets/github': got string, want object",
    ),
    "missing forge.repo": ({"secrets": REQUIRED["secrets"]}, "at '/forge/repo': '' does not match pattern"),
    "github.com without a token": ({"forge": {"repo": "acme/digits"}}, "at '/secrets/github/name': minLength: got 0, want 1"),
    "unknown runtime kind": (
        with_required(runtime={"advisor": {"kind": "magic"}}),
        "at '/runtime/advisor/kind': value must be one of 'search', 'openhands'",
    ),
    "misspelled value": (with_required(studnets=[]), "additional properties 'studnets' not allowed"),
    "openhands without its key": (
        with_required(runtime={"advisor": {"kind": "openhands", "llm": {"model": "anthropic/claude-sonnet-4-5"}}}),
        "runtime.advisor.llm.apiKeyEnv LLM_API_KEY is not filled by any secrets.llm entry",
    ),
    "openhands without a model": (
        with_required(
            runtime={"student": {"kind": "openhands"}},
            secrets={**REQUIRED["secrets"], "llm": [{"env": "LLM_API_KEY", "name": "k", "key": "k"}]},
        ),
        "runtime.student.kind is openhands: set runtime.student.llm.model",
    ),
    "latest tag": (
        with_required(images={"student": {"repository": "senpai/student", "tag": "latest"}}),
        "images.student.tag is latest: pin a version",
    ),
    "a student twice": (
        with_required(students=[{"name": "ada", "gpus": 1}, {"name": "ada", "gpus": 2}]),
        "students: the name ada is used twice",
    ),
    "holdout in a Secret and a claim": (
        with_required(holdout={"secret": "h", "claim": "c"}),
        "holdout: set secret or claim, not both",
    ),
    "holdout subPath without a claim": (
        with_required(holdout={"secret": "h", "subPath": "x"}),
        "holdout.subPath needs holdout.claim",
    ),
    "holdout on the shared claim": (
        with_required(holdout={"claim": "digits-senpai-data"}),
        "holdout.claim digits-senpai-data is the shared data claim that every Job mounts",
    ),
    "holdout mounted in the work dir": (
        with_required(holdout={"secret": "h", "mountPath": "/work/holdout"}),
        "holdout.mountPath /work/holdout collides with a Job mount",
    ),
    "holdout subPath climbing out": (
        with_required(holdout={"claim": "c", "subPath": "a/../../b"}),
        "at '/holdout/subPath'",
    ),
    "holdout data as a value": (
        with_required(holdout={"secret": "h", "labels": "3,1,4"}),
        "at '/holdout': additional properties 'labels' not allowed",
    ),
}


# A self-hosted OpenAI-compatible server (vLLM, llama.cpp): no key, no secrets.llm entry, free tokens.
KEYLESS = {
    **REQUIRED,
    "runtime": {
        "student": {
            "kind": "openhands",
            "llm": {
                "model": "openai/qwen",
                "baseUrl": "http://vllm.research.svc:8000/v1",
                "inputCostPerToken": 0,
                "outputCostPerToken": 0,
            },
        }
    },
}


def deep_merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


@pytest.fixture(scope="module")
def helm(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Every render and lint of this module, done by one Helm process; answers by name."""
    # helm lint reads the chart's own values.yaml, so lint a copy that carries the required values too
    linted = tmp_path_factory.mktemp("chart") / "senpai"
    shutil.copytree(CHART, linted)
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    (linted / "values.yaml").write_text(yaml.safe_dump(deep_merge(defaults, REQUIRED)))
    base = {"action": "install", "chart": str(CHART), "release": RELEASE, "namespace": NAMESPACE}
    requests = {
        "lint": {"action": "lint", "chart": str(linted)},
        "lint-without-required": {"action": "lint", "chart": str(CHART)},
    }
    for kv in KUBE_VERSIONS:
        requests[f"default-{kv}"] = {**base, "values": REQUIRED, "kube_version": kv}
        requests[f"big-{kv}"] = {**base, "values": BIG, "kube_version": kv}
    requests |= {name: {**base, "values": values} for name, (values, _) in BAD.items()}
    requests["keyless"] = {**base, "values": KEYLESS, "kube_version": KUBE_VERSIONS[-1]}
    for kv in KUBE_VERSIONS:
        requests[f"holdout-secret-{kv}"] = {**base, "values": HOLDOUT_SECRET, "kube_version": kv}
        requests[f"holdout-claim-{kv}"] = {**base, "values": HOLDOUT_CLAIM, "kube_version": kv}
    requests["long release"] = {**base, "release": "r" * 41, "values": REQUIRED}  # Helm allows 53
    proc = subprocess.run(
        [sys.executable, str(RENDER)],
        input=json.dumps(list(requests.values())),
        env={**os.environ, "HELM_DRIVER": "memory"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return dict(zip(requests, json.loads(proc.stdout), strict=True))


def manifests(answer: dict) -> list[dict]:
    assert "error" not in answer, answer["error"]
    return [d for d in yaml.safe_load_all(answer["manifest"]) if d]


def one(docs: list[dict], kind: str) -> dict:
    [doc] = [d for d in docs if d["kind"] == kind]
    return doc


def harness(docs: list[dict]) -> HarnessConfig:
    return HarnessConfig.model_validate(yaml.safe_load(one(docs, "ConfigMap")["data"]["harness.yaml"]))


def test_lint_passes_with_the_required_values_and_fails_without(helm: dict) -> None:
    lint = helm["lint"]["lint"]
    assert lint["TotalChartsLinted"] == 1 and not lint["Errors"], lint
    assert all(m["Severity"] < 2 for m in lint["Messages"]), lint  # nothing above INFO
    missing = helm["lint-without-required"]["lint"]
    assert {m["Path"] for m in missing["Messages"] if m["Severity"] == 3} >= {"values.yaml"}, missing


@pytest.mark.parametrize("case", ["default", "big", "holdout-secret", "holdout-claim"])
@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
def test_every_manifest_is_valid_kubernetes(helm: dict, case: str, kube_version: str) -> None:
    docs = manifests(helm[f"{case}-{kube_version}"])
    assert docs
    for doc in docs:
        try:
            kubernetes_validate.validate(doc, kube_version, strict=True)
        except kubernetes_validate.ValidationError as e:
            pytest.fail(
                f"{doc['kind']}/{doc['metadata']['name']} against {kube_version}: {'.'.join(map(str, e.path))}: {e.message}"
            )


def test_default_values_render_the_expected_objects(helm: dict) -> None:
    docs = manifests(helm["default-1.30"])
    kinds = sorted((d["kind"], d["metadata"]["name"]) for d in docs)
    assert kinds == [
        ("ConfigMap", "digits-senpai-config"),
        ("Deployment", "digits-senpai-wrapper"),
        ("PersistentVolumeClaim", "digits-senpai-data"),
        ("Role", "digits-senpai-wrapper"),
        ("RoleBinding", "digits-senpai-wrapper"),
        ("ServiceAccount", "digits-senpai-job"),
        ("ServiceAccount", "digits-senpai-wrapper"),
    ]
    # what Helm sent to the API server is exactly the rendered set (releases kept in memory, not as Secrets)
    posted = sorted((d["kind"], d["metadata"]["name"]) for d in helm["default-1.30"]["posted"])
    assert posted == kinds


def test_default_harness_config(helm: dict) -> None:
    docs = manifests(helm["default-1.30"])
    cfg = harness(docs)
    fleet = cfg.fleet
    assert fleet.backend == "kubernetes" and fleet.namespace == NAMESPACE and fleet.instance == RELEASE
    assert fleet.config_map == one(docs, "ConfigMap")["metadata"]["name"]
    assert fleet.pvc == one(docs, "PersistentVolumeClaim")["metadata"]["name"] and fleet.mount_path == "/data"
    assert fleet.images == {
        "advisor": "senpai/advisor:0.1.0",
        "student": "senpai/student:0.1.0",
        "verifier": "senpai/student:0.1.0",
    }
    assert fleet.service_account == "digits-senpai-job"
    assert [(s.env, s.secret, s.key) for s in fleet.secret_env] == [("GITHUB_TOKEN", "senpai-github", "token")]
    assert cfg.forge.repo == "acme/digits" and cfg.forge.token_env == "GITHUB_TOKEN"
    assert cfg.tracker.dir == "/data/wandb" and cfg.state_dir == "/data/state"
    assert [(s.name, s.gpus, s.cpus) for s in cfg.students] == [("ada", 1, 2)]
    assert cfg.runtime.advisor.kind == cfg.runtime.student.kind == "search"
    assert cfg.max_experiments is None and cfg.patience is None
    assert cfg.advisor_wall_seconds is None and cfg.verifier_wall_seconds is None  # derived (senpai.config.budgets)
    pvc = one(docs, "PersistentVolumeClaim")
    assert pvc["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"}  # helm uninstall keeps the data
    assert pvc["spec"]["resources"]["requests"]["storage"] == "50Gi" and "storageClassName" not in pvc["spec"]


@pytest.mark.parametrize(
    "case, expected",
    [
        ("default", None),
        ("holdout-secret", {"secret": "digits-holdout", "claim": None, "sub_path": None, "mount_path": "/holdout"}),
        ("holdout-claim", {"secret": None, "claim": "sealed", "sub_path": "digits/v1", "mount_path": "/sealed"}),
    ],
)
def test_the_sealed_holdout_reaches_only_verifier_scoring(helm: dict, case: str, expected: dict | None) -> None:
    """The rendered fleet settings, built into Jobs: only a verifier's `checkout` (its fingerprint)
    and `score` containers mount the holdout."""
    answer = helm[f"{case}-1.37"]
    fleet = harness(manifests(answer)).fleet
    assert (fleet.holdout and fleet.holdout.model_dump()) == expected
    if expected is None:
        assert "Sealed holdout: none" in answer["notes"]
        return
    assert f"read-only at {expected['mount_path']} in the checkout and score containers of verifier Jobs only" in answer["notes"]
    for role in ("advisor", "student", "verifier"):
        spec = JobSpec(name=f"senpai-{role}-pr3-1", role=role, command=["senpai", "job", role], wall_seconds=60, gpus=1)
        job = client.ApiClient().sanitize_for_serialization(build_job(spec, fleet))
        kubernetes_validate.validate(job, "1.37", strict=True)
        pod = job["spec"]["template"]["spec"]
        holders = {
            c["name"]
            for c in [*pod.get("initContainers", []), *pod["containers"]]
            for m in c["volumeMounts"]
            if m["mountPath"] == expected["mount_path"] or m["name"] == "holdout"
        }
        assert holders == ({"checkout", "score"} if role == "verifier" else set()), role
        if role == "verifier":  # one train step per side, each on its own side's volume, with the GPUs
            names = [c["name"] for c in [*pod["initContainers"], *pod["containers"]]]
            assert names == ["checkout", "train-baseline", "train-candidate", "score"]
            train = pod["initContainers"][2]
            assert {m["mountPath"] for m in train["volumeMounts"]} & {"/work", "/work/baseline"} == set()
            assert [c["name"] for c in pod["initContainers"] if fleet.gpu_resource in c["resources"]["limits"]] == names[1:3]


def test_four_students_with_eight_gpus_land_in_the_harness_config(helm: dict) -> None:
    docs = manifests(helm["big-1.37"])
    cfg = harness(docs)
    fleet = cfg.fleet
    assert [(s.name, s.gpus, s.cpus) for s in cfg.students] == [(n, 8, 32) for n in ("ada", "bo", "cy", "dee")]
    assert fleet.gpu_resource == "nvidia.com/gpu"
    assert fleet.node_selector == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    # plain dicts here; typed core/v1 Tolerations once the fleet backend types them
    tolerations = [t if isinstance(t, dict) else t.model_dump(by_alias=True, exclude_none=True) for t in fleet.tolerations]
    assert tolerations == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert fleet.resources["student"].requests == {"cpu": "32", "memory": "256Gi"}
    assert fleet.resources["advisor"].limits == {"memory": "4Gi"}  # untouched defaults survive the merge
    assert fleet.images["verifier"] == fleet.images["student"] == "registry.example.com/senpai/student:0.1.0-cu128"
    assert fleet.image_pull_policy == "Always" and fleet.pvc == "datasets"
    assert {s.env: s.secret for s in fleet.secret_env} == {
        "GITHUB_TOKEN": "senpai-github",
        "WANDB_API_KEY": "wandb",
        "LLM_API_KEY": "llm-keys",
    }
    assert cfg.runtime.advisor.kind == "openhands" and cfg.runtime.advisor.llm.reasoning_effort == "high"
    assert cfg.runtime.advisor.llm.input_cost_per_token == 3e-06 and cfg.runtime.advisor.llm.output_cost_per_token is None
    assert cfg.runtime.student.budget.dollars == 20.0 and cfg.runtime.student.budget.llm_calls == 60
    assert cfg.forge.base_url == "https://ghe.example.com/api/v3" and cfg.forge.base_branch == "research"
    assert cfg.tracker.entity == "acme" and cfg.tracker.mode == "online"
    assert cfg.max_experiments == 40 and cfg.patience == 8
    assert not [d for d in docs if d["kind"] == "PersistentVolumeClaim"]  # existingClaim: none created
    job_sa = [d for d in docs if d["kind"] == "ServiceAccount" and d["metadata"]["name"].endswith("-job")][0]
    assert job_sa["imagePullSecrets"] == [{"name": "registry-creds"}] and job_sa["automountServiceAccountToken"] is False


def test_a_keyless_base_url_llm_needs_no_secret(helm: dict) -> None:
    docs = manifests(helm["keyless"])
    for doc in docs:
        kubernetes_validate.validate(doc, KUBE_VERSIONS[-1], strict=True)
    cfg = harness(docs)
    llm = cfg.runtime.student.llm
    assert (cfg.runtime.student.kind, llm.model, llm.base_url) == ("openhands", "openai/qwen", "http://vllm.research.svc:8000/v1")
    assert llm.input_cost_per_token == llm.output_cost_per_token == 0.0
    assert "LLM_API_KEY" not in {s.env for s in cfg.fleet.secret_env}  # the runtime calls the server keyless


def test_wrapper_deployment(helm: dict) -> None:
    docs = manifests(helm["big-1.30"])
    dep = one(docs, "Deployment")
    assert dep["spec"]["replicas"] == 1 and dep["spec"]["strategy"] == {"type": "Recreate"}
    pod = dep["spec"]["template"]["spec"]
    [c] = pod["containers"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] == 10001
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert c["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert c["args"][:4] == ["--log-format=json", "wrapper", "run", "--config=/etc/senpai/harness.yaml"]
    assert "--health-port=8080" in c["args"]
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert c["ports"] == [{"name": "health", "containerPort": 8080, "protocol": "TCP"}]
    assert c["resources"]["requests"] and c["resources"]["limits"]
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    assert mounts == {"/etc/senpai": "config", "/data": "data", "/tmp": "tmp"}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["data"]["persistentVolumeClaim"]["claimName"] == "datasets"
    assert volumes["config"]["configMap"]["name"] == one(docs, "ConfigMap")["metadata"]["name"]
    assert volumes["tmp"] == {"name": "tmp", "emptyDir": {}}
    secret_env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in c["env"] if "valueFrom" in e}
    assert secret_env == {
        "GITHUB_TOKEN": {"name": "senpai-github", "key": "token"},
        "WANDB_API_KEY": {"name": "wandb", "key": "api-key"},
    }
    assert pod["serviceAccountName"] == one(docs, "RoleBinding")["subjects"][0]["name"]
    assert re.fullmatch(r"[0-9a-f]{64}", dep["spec"]["template"]["metadata"]["annotations"]["checksum/config"])


def test_role_is_least_privilege(helm: dict) -> None:
    role = one(manifests(helm["default-1.30"]), "Role")
    rules = {(g, r): sorted(rule["verbs"]) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]}
    assert rules == {
        ("batch", "jobs"): ["create", "delete", "get", "list", "watch"],
        ("", "pods"): ["get", "list", "watch"],
        ("", "pods/log"): ["get"],
    }


@pytest.mark.parametrize("case", ["default-1.30", "big-1.30"])
def test_no_secret_is_rendered(helm: dict, case: str) -> None:
    docs = manifests(helm[case])
    assert not [d for d in docs + helm[case]["posted"] if d["kind"] == "Secret"]
    for doc in docs:
        for c in (
            (doc.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])) if doc["kind"] == "Deployment" else []
        ):
            for e in c["env"]:
                assert "value" not in e or e["name"] in ("SENPAI_CONFIG", "HOME"), e  # secrets only by reference


@pytest.mark.parametrize("name", list(BAD))
def test_bad_values_are_refused_with_a_clear_message(helm: dict, name: str) -> None:
    answer = helm[name]
    assert "error" in answer, f"{name}: rendered anyway"
    assert BAD[name][1] in answer["error"], answer["error"]


def test_a_release_name_too_long_for_job_names_is_refused(helm: dict) -> None:
    assert "release name rrrrr" in helm["long release"].get("error", "rendered anyway")
    assert "is 41 characters: senpai names its Jobs after it, use at most 40" in helm["long release"]["error"]


def test_notes_say_what_to_do_next(helm: dict) -> None:
    notes = helm["default-1.30"]["notes"]
    for expected in (
        "logs -f deploy/digits-senpai-wrapper",
        "port-forward deploy/digits-senpai-wrapper 8080:8080",
        "senpai ledger --json",
        "senpai preflight",
        "get configmap digits-senpai-config -o jsonpath='{.data.harness\\.yaml}'",  # for preflight from a workstation
    ):
        assert expected in notes
    assert "WARNING" not in notes and "Students: ada (1 GPU)\n" in notes
    assert "Students: ada (8 GPUs), bo (8 GPUs), cy (8 GPUs), dee (8 GPUs)" in helm["big-1.30"]["notes"]


def test_every_value_is_documented_in_the_chart_readme() -> None:
    readme = (CHART / "README.md").read_text().split("## Values", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([^`]+)` \|", readme, re.M))

    def leaves(d: dict, prefix: str = "") -> list[str]:
        out = []
        for k, v in d.items():
            key = f"{prefix}{k}"
            whole = re.search(r"^(images|resources)\.\w+$|nodeSelector$|\.llm$|\.budget$", key)  # one row each
            out += leaves(v, key + ".") if isinstance(v, dict) and v and not whole else [key]
        return out

    keys = set(leaves(yaml.safe_load((CHART / "values.yaml").read_text())))
    assert keys - documented == set(), "undocumented values"
    assert documented - keys == set(), "documented values that do not exist"
