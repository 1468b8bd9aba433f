"""The Helm chart charts/senpai, rendered and linted by the real Helm engine (helm-sdkpy, Helm v4).

Every rendered manifest (and the `helm test` hook) is checked against the Kubernetes 1.30 and 1.37
schemas in strict mode (kubernetes-validate; the ServiceMonitor, a CRD, by its shape), the rendered
harness.yaml against HarnessConfig and, built into Jobs by `k8s_job.build_job`, against the same
schemas; bad values against the messages of values.schema.json and of the chart's own checks. All renders run in one
subprocess (tests/helm_render.py) because Helm reads HELM_DRIVER=memory only at process start.
"""

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from k8s_fixtures import as_dict, build_job

from senpai.config.harness import CapSettings, HarnessConfig
from senpai.config.secret_env import SECRET_ENV
from senpai.fleet.base import JobSpec
from senpai.job.walls import senpai_paths

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
    "tracker": {"project": "pretrain", "entity": "acme", "mode": "online", "installation": "0badc0de"},
    "runtime": {
        "advisor": {
            "kind": "openhands",
            "llm": {"model": "anthropic/claude-sonnet-4-5", "reasoningEffort": "high", "inputCostPerToken": 3e-06},
        },
        "student": {"kind": "openhands", "llm": {"model": "anthropic/claude-sonnet-4-5"}, "turn": {"dollars": 20.0}},
    },
    "students": [{"name": n, "gpus": 8, "cpus": 32} for n in ("ada", "bo", "cy", "dee")],
    "gpu": {
        "resource": "nvidia.com/gpu",
        "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    },
    "resources": {"student": {"requests": {"cpu": "32", "memory": "256Gi"}, "limits": {"memory": "512Gi"}}},
    "persistence": {"existingClaim": "datasets", "accessModes": ["ReadWriteMany"]},
    "loop": {
        "maxExperiments": 40,
        "patience": 8,
        "caps": {
            "dollars": 250,
            "tokens": 9_000_000,
            "gpuHours": 100.5,
            "endAt": "2027-01-31T18:00:00+00:00",
            "onExhausted": "stop",
        },
    },
    "wrapper": {"logFormat": "json"},
}


# Every value this chart added for operators, set at once (beside BIG's): they must land in the
# Deployment, in the Jobs the wrapper builds from the ConfigMap, and in the optional objects.
NODE_NAME = {"fieldRef": {"fieldPath": "spec.nodeName"}}
JOB_ENV = [{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "NODE_NAME", "valueFrom": NODE_NAME}]
OPERATOR = {
    "imagePullSecrets": [{"name": "registry-creds"}],
    "podSecurityContext": {
        "runAsNonRoot": True,
        "runAsUser": 1000680000,
        "fsGroup": 1000680000,
        "fsGroupChangePolicy": "OnRootMismatch",
        "seccompProfile": {"type": "RuntimeDefault"},
    },
    "securityContext": {
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
        "seLinuxOptions": {"level": "s0:c26,c5"},
    },
    "wrapper": {
        "logFormat": "json",
        "podLabels": {"team": "ml", "app.kubernetes.io/component": "not-the-wrapper"},
        "podAnnotations": {"example.com/owner": "ml-platform"},
        "priorityClassName": "senpai-control",
        "runtimeClassName": "runc",
        "extraEnv": [
            # the wrapper runs no agent code: a Secret may reach it
            {"name": "HTTPS_PROXY", "valueFrom": {"secretKeyRef": {"name": "proxy", "key": "url"}}},
            {"name": "NO_PROXY", "value": ".svc,.cluster.local"},
        ],
        "extraEnvFrom": [{"configMapRef": {"name": "proxy-env"}}],
        "extraVolumes": [{"name": "corp-ca", "configMap": {"name": "corp-ca"}}],
        "extraVolumeMounts": [{"name": "corp-ca", "mountPath": "/etc/ssl/corp", "readOnly": True}],
    },
    "jobs": {
        "extraEnv": JOB_ENV,
        "extraEnvFrom": [{"configMapRef": {"name": "job-env"}, "prefix": "ACME_"}],
        "extraVolumes": [
            {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}},
            {"name": "datasets", "persistentVolumeClaim": {"claimName": "imagenet"}},
        ],
        "extraVolumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}, {"name": "datasets", "mountPath": "/datasets"}],
        "podLabels": {"team": "ml", "app.kubernetes.io/instance": "someone-else"},
        "podAnnotations": {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"},
        "priorityClassName": "research",
        "runtimeClassName": "gvisor",
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["research"]}]}]
                }
            }
        },
    },
    "metrics": {
        "service": {"enabled": True, "annotations": {"prometheus.io/scrape": "true"}},
        "serviceMonitor": {"enabled": True, "interval": "15s", "labels": {"release": "kube-prometheus-stack"}},
    },
    "networkPolicy": {
        "enabled": True,
        "egress": [
            {"cidr": "140.82.112.0/20", "ports": [443]},
            {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"], "ports": [3128, 8080]},
        ],
    },
}
SERVICE_MONITOR = "monitoring.coreos.com/v1"
DEFAULTS = yaml.safe_load((CHART / "values.yaml").read_text())


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
    "a Secret in Jobs' env": (
        with_required(jobs={"extraEnv": [{"name": "HF_HOME", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}]}),
        "at '/jobs/extraEnv/0/valueFrom': additional properties 'secretKeyRef' not allowed",
    ),
    "a credential's name in Jobs' env": (
        with_required(jobs={"extraEnv": [{"name": "HF_TOKEN", "value": "hf_0123456789"}]}),
        "at '/jobs/extraEnv/0/name'",
    ),
    "an LLM key's env in Jobs' env": (
        with_required(
            secrets={**REQUIRED["secrets"], "llm": [{"env": "OPENAI", "name": "llm", "key": "openai"}]},
            jobs={"extraEnv": [{"name": "OPENAI", "value": "placeholder"}]},
        ),
        "jobs.extraEnv OPENAI is filled from a Secret (secrets.*)",
    ),
    "a Secret's keys as Jobs' env": (
        with_required(jobs={"extraEnvFrom": [{"secretRef": {"name": "cloud-keys"}}]}),
        "at '/jobs/extraEnvFrom/0': additional properties 'secretRef' not allowed",
    ),
    "a Secret volume in Jobs": (
        with_required(jobs={"extraVolumes": [{"name": "keys", "secret": {"secretName": "cloud-keys"}}]}),
        "at '/jobs/extraVolumes/0': additional properties 'secret' not allowed",
    ),
    "a writable root filesystem": (
        with_required(securityContext={**OPERATOR["securityContext"], "readOnlyRootFilesystem": False}),
        "at '/securityContext/readOnlyRootFilesystem': value must be true",
    ),
    "root pods": (
        with_required(podSecurityContext={"runAsNonRoot": False}),
        "at '/podSecurityContext/runAsNonRoot': value must be true",
    ),
    "an end with no zone": (with_required(loop={"caps": {"endAt": "2026-12-31T18:00:00"}}), "at '/loop/caps/endAt'"),
    "an end that is no time": (with_required(loop={"caps": {"endAt": "next friday"}}), "at '/loop/caps/endAt'"),
    "a cap past the largest taken": (with_required(loop={"caps": {"dollars": 2e9}}), "at '/loop/caps/dollars'"),
    "an added capability": (
        with_required(securityContext={**OPERATOR["securityContext"], "capabilities": {"drop": ["ALL"], "add": ["NET_ADMIN"]}}),
        "at '/securityContext/capabilities/add'",
    ),
    "an egress rule without ports": (
        with_required(networkPolicy={"enabled": True, "egress": [{"cidr": "0.0.0.0/0"}]}),
        "at '/networkPolicy/egress/0': missing property 'ports'",
    ),
    "negative LLM retries": (
        with_required(runtime={"advisor": {"kind": "search", "llm": {"numRetries": -1}}}),
        "at '/runtime/advisor/llm/numRetries': minimum: got -1, want 0",
    ),
    "a zero LLM timeout": (
        with_required(runtime={"student": {"kind": "search", "llm": {"timeout": 0}}}),
        "at '/runtime/student/llm/timeout': minimum: got 0, want 1",
    ),
    "a fractional output-token cap": (
        with_required(runtime={"student": {"kind": "search", "llm": {"maxOutputTokens": 512.5}}}),
        "at '/runtime/student/llm/maxOutputTokens': got number, want integer",
    ),
    "an LLM extra body that is no object": (
        with_required(runtime={"advisor": {"kind": "search", "llm": {"extraBody": "tool_choice=required"}}}),
        "at '/runtime/advisor/llm/extraBody': got string, want object",
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


# A slow local llama.cpp server for the advisor: every LLM setting for slow and local servers set; the
# student sets only numRetries 0, which must not be dropped as "unset".
LLAMA_CPP = {"model": "openai/qwen3-coder", "baseUrl": "http://llama.research.svc:8080/v1"}
FREE = {"inputCostPerToken": 0, "outputCostPerToken": 0}
EXTRA_BODY = {"tool_choice": "required", "chat_template_kwargs": {"enable_thinking": False}, "top_k": 20}
LLM_SETTINGS = {
    **REQUIRED,
    "runtime": {
        "advisor": {
            "kind": "openhands",
            "llm": {**LLAMA_CPP, **FREE, "timeout": 600, "numRetries": 1, "maxOutputTokens": 4096, "extraBody": EXTRA_BODY},
        },
        "student": {"kind": "openhands", "llm": {**LLAMA_CPP, **FREE, "numRetries": 0}},
    },
}
# values written before `runtime.<role>.turn` was named so: the old `budget` key still renders, as `turn`
# (the advisor's: a field it sets is read over turn's, a 0 too)
OLD_TURN_KEY = {
    **REQUIRED,
    "runtime": {
        "student": {"kind": "openhands", "llm": LLAMA_CPP | FREE, "budget": {"dollars": 20.0}},
        "advisor": {
            "kind": "openhands",
            "llm": LLAMA_CPP | FREE,
            "budget": {"dollars": 0, "llmCalls": 7},
            "turn": {"dollars": 1.5},
        },
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
        operator = {**base, "values": deep_merge(BIG, OPERATOR), "kube_version": kv, "api_versions": [SERVICE_MONITOR]}
        requests[f"operator-{kv}"] = operator
    requests["openshift"] = {**base, "values": REQUIRED, "api_versions": ["security.openshift.io/v1"]}
    requests["service monitor without its CRD"] = {**base, "values": with_required(metrics=OPERATOR["metrics"])}
    requests |= {name: {**base, "values": values} for name, (values, _) in BAD.items()}
    requests["keyless"] = {**base, "values": KEYLESS, "kube_version": KUBE_VERSIONS[-1]}
    requests["emptied caps"] = {**base, "values": with_required(loop={"caps": None})}
    requests["llm settings"] = {**base, "values": LLM_SETTINGS}
    requests["old turn key"] = {**base, "values": OLD_TURN_KEY}
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


@pytest.mark.parametrize("case", ["default", "big", "holdout-secret", "holdout-claim", "operator"])
@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
def test_every_manifest_is_valid_kubernetes(helm: dict, case: str, kube_version: str) -> None:
    import kubernetes_validate  # with the kubernetes client (seconds): when run, not at collection

    answer = helm[f"{case}-{kube_version}"]
    docs = manifests(answer) + [d for h in answer["hooks"] for d in yaml.safe_load_all(h) if d]
    assert docs
    for doc in docs:
        if doc["apiVersion"] == SERVICE_MONITOR:  # a CRD: no schema in kubernetes-validate (test_operator_values checks it)
            continue
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
    assert cfg.tracker.dir == "/data/wandb" and cfg.state_dir == "/data/state" and cfg.tracker.installation is None
    assert [(s.name, s.gpus, s.cpus) for s in cfg.students] == [("ada", 1, 2)]
    assert cfg.runtime.advisor.kind == cfg.runtime.student.kind == "search"
    assert cfg.max_experiments is None and cfg.patience is None
    assert cfg.caps == CapSettings()  # no fleet cap unless one is set
    assert cfg.advisor_wall_seconds is None and cfg.verifier_wall_seconds is None  # derived (senpai.config.time_limits)
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
    import kubernetes_validate  # with the kubernetes client (seconds): when run, not at collection

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
        job = as_dict(build_job(spec, fleet))
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
    assert cfg.runtime.student.turn.dollars == 20.0 and cfg.runtime.student.turn.llm_calls == 60
    assert cfg.forge.base_url == "https://ghe.example.com/api/v3" and cfg.forge.base_branch == "research"
    assert cfg.tracker.entity == "acme" and cfg.tracker.mode == "online" and cfg.tracker.installation == "0badc0de"
    assert cfg.max_experiments == 40 and cfg.patience == 8
    assert (cfg.caps.dollars, cfg.caps.tokens, cfg.caps.gpu_hours, cfg.caps.cpu_hours) == (250.0, 9_000_000, 100.5, None)
    assert cfg.caps.end_at == datetime(2027, 1, 31, 18, tzinfo=UTC) and cfg.caps.on_exhausted == "stop"
    assert not [d for d in docs if d["kind"] == "PersistentVolumeClaim"]  # existingClaim: none created
    job_sa = [d for d in docs if d["kind"] == "ServiceAccount" and d["metadata"]["name"].endswith("-job")][0]
    assert "imagePullSecrets" not in job_sa and job_sa["automountServiceAccountToken"] is False
    assert fleet.pod.image_pull_secrets == ["registry-creds"]  # in each Job's pod spec instead


def test_an_emptied_caps_section_renders_no_cap(helm: dict) -> None:
    assert "error" not in helm["emptied caps"], helm["emptied caps"]["error"]
    assert harness(manifests(helm["emptied caps"])).caps == CapSettings()


def test_a_keyless_base_url_llm_needs_no_secret(helm: dict) -> None:
    import kubernetes_validate  # with the kubernetes client (seconds): when run, not at collection

    docs = manifests(helm["keyless"])
    for doc in docs:
        kubernetes_validate.validate(doc, KUBE_VERSIONS[-1], strict=True)
    cfg = harness(docs)
    llm = cfg.runtime.student.llm
    assert (cfg.runtime.student.kind, llm.model, llm.base_url) == ("openhands", "openai/qwen", "http://vllm.research.svc:8000/v1")
    assert llm.input_cost_per_token == llm.output_cost_per_token == 0.0
    assert "LLM_API_KEY" not in {s.env for s in cfg.fleet.secret_env}  # the runtime calls the server keyless


def test_llm_settings_for_slow_and_local_servers_reach_the_harness_config(helm: dict) -> None:
    docs = manifests(helm["llm settings"])
    raw = yaml.safe_load(one(docs, "ConfigMap")["data"]["harness.yaml"])["runtime"]
    advisor = raw["advisor"]["llm"]
    assert {k: advisor[k] for k in ("timeout", "num_retries", "max_output_tokens", "extra_body")} == {
        "timeout": 600,
        "num_retries": 1,
        "max_output_tokens": 4096,
        "extra_body": EXTRA_BODY,
    }
    assert all(type(advisor[k]) is int for k in ("timeout", "num_retries", "max_output_tokens"))  # not 600.0
    student = raw["student"]["llm"]
    assert student["num_retries"] == 0 and not {"timeout", "max_output_tokens", "extra_body"} & set(student)
    cfg = harness(docs)
    llm = cfg.runtime.advisor.llm
    assert (llm.timeout, llm.num_retries, llm.max_output_tokens, llm.extra_body) == (600, 1, 4096, EXTRA_BODY)
    llm = cfg.runtime.student.llm
    assert (llm.timeout, llm.num_retries, llm.max_output_tokens, llm.extra_body) == (None, 0, None, {})
    # unset (BIG sets none of them), none is rendered and the harness defaults hold
    big = manifests(helm["big-1.30"])
    rendered = yaml.safe_load(one(big, "ConfigMap")["data"]["harness.yaml"])["runtime"]["advisor"]["llm"]
    assert not {"timeout", "num_retries", "max_output_tokens", "extra_body"} & set(rendered)
    llm = harness(big).runtime.advisor.llm
    assert (llm.timeout, llm.num_retries, llm.max_output_tokens, llm.extra_body) == (None, 2, None, {})


def test_the_old_budget_key_of_a_role_renders_as_its_turn_limits_and_the_notes_warn(helm: dict) -> None:
    docs = manifests(helm["old turn key"])
    raw = yaml.safe_load(one(docs, "ConfigMap")["data"]["harness.yaml"])["runtime"]["student"]
    assert "budget" not in raw and raw["turn"] == {"llm_calls": 60, "tokens": 2000000, "dollars": 20.0, "wall_seconds": 1800}
    assert harness(docs).runtime.student.turn.dollars == 20.0
    advisor = harness(docs).runtime.advisor.turn
    assert (advisor.dollars, advisor.llm_calls, advisor.tokens) == (0.0, 7, 2000000)  # a $0 cap stays $0
    notes = helm["old turn key"]["notes"]
    for role in ("student", "advisor"):
        assert f"WARNING: runtime.{role}.budget is deprecated: it is now runtime.{role}.turn (read as that" in notes
    assert notes.count("is deprecated") == 2


def test_wrapper_deployment(helm: dict) -> None:
    docs = manifests(helm["big-1.30"])
    dep = one(docs, "Deployment")
    assert dep["spec"]["replicas"] == 1 and dep["spec"]["strategy"] == {"type": "Recreate"}
    pod = dep["spec"]["template"]["spec"]
    [c] = pod["containers"]
    # no uid: the image's USER, or the one OpenShift assigns
    assert pod["securityContext"] == {"runAsNonRoot": True, "fsGroup": 10001, "seccompProfile": {"type": "RuntimeDefault"}}
    assert c["securityContext"] == {
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert c["args"][:4] == ["--log-format=json", "wrapper", "run", "--config=/etc/senpai/harness.yaml"]
    assert "--health-port=8080" in c["args"]
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert c["ports"] == [{"name": "health", "containerPort": 8080, "protocol": "TCP"}]
    assert c["resources"]["requests"] and c["resources"]["limits"]
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    assert mounts == {"/etc/senpai": "config", "/data": "data", "/cache": "cache", "/tmp": "tmp"}
    assert harness(docs).cache_dir == "/cache"  # the wrapper's SQLite: on its own emptyDir, on no volume a job mounts
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
        "helm test digits -n research",
        "logs digits-senpai-preflight",
        "/metrics | grep ^senpai_",
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
            whole = re.search(r"^(images|resources)\.\w+$|^(pod)?[sS]ecurityContext$|[sS]elector$|\.llm$|\.turn$", key)
            out += leaves(v, key + ".") if isinstance(v, dict) and v and not whole else [key]
        return out

    keys = set(leaves(yaml.safe_load((CHART / "values.yaml").read_text())))
    assert keys - documented == set(), "undocumented values"
    assert documented - keys == set(), "documented values that do not exist"


def hooks(answer: dict) -> list[dict]:
    return [d for h in answer["hooks"] for d in yaml.safe_load_all(h) if d]


def built_jobs(cfg, kube_version: str = "1.37") -> dict[str, dict]:
    """The Job of each role as the wrapper builds it from the rendered harness config (`make_fleet`:
    senpai's folders hidden from the target's code), valid in strict mode."""
    import kubernetes_validate  # with the kubernetes client (seconds): when run, not at collection

    jobs = {}
    hidden = [*senpai_paths(cfg), *cfg.wall.hidden]
    for role in ("advisor", "student", "verifier"):
        command = ["senpai", "job", role]
        spec = JobSpec(name=f"senpai-{role}-pr3-1", role=role, student="ada", command=command, wall_seconds=60, gpus=1)
        jobs[role] = as_dict(build_job(spec, cfg.fleet, hidden))
        kubernetes_validate.validate(jobs[role], kube_version, strict=True)
    return jobs


def test_optional_objects_are_off_by_default_and_helm_test_runs_preflight(helm: dict) -> None:
    answer = helm["default-1.30"]
    kinds = {d["kind"] for d in manifests(answer)}
    assert not kinds & {"NetworkPolicy", "Service", "ServiceMonitor"}
    [pod] = hooks(answer)
    assert pod["kind"] == "Pod" and pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    [c] = pod["spec"]["containers"]
    assert c["args"] == ["preflight", "--config=/etc/senpai/harness.yaml"] and c["image"] == "senpai/wrapper:0.1.0"
    assert pod["spec"]["serviceAccountName"] == "digits-senpai-wrapper"  # the RBAC rows check the wrapper's own rights
    assert {e["name"] for e in c["env"] if "valueFrom" in e} == {"GITHUB_TOKEN"}
    assert c["securityContext"]["readOnlyRootFilesystem"] is True and pod["spec"]["securityContext"]["runAsNonRoot"] is True
    # every secrets.* entry, the LLM keys too: preflight pings the LLMs
    [big_pod] = hooks(helm["big-1.30"])
    assert {e["name"] for e in big_pod["spec"]["containers"][0]["env"] if "valueFrom" in e} == {
        "GITHUB_TOKEN",
        "WANDB_API_KEY",
        "LLM_API_KEY",
    }


def test_operator_values_reach_the_wrapper(helm: dict) -> None:
    dep = one(manifests(helm["operator-1.30"]), "Deployment")
    meta, pod = dep["spec"]["template"]["metadata"], dep["spec"]["template"]["spec"]
    assert meta["labels"]["team"] == "ml" and meta["labels"]["app.kubernetes.io/component"] == "wrapper"  # the selector wins
    assert meta["annotations"]["example.com/owner"] == "ml-platform"
    assert (pod["priorityClassName"], pod["runtimeClassName"]) == ("senpai-control", "runc")
    assert pod["imagePullSecrets"] == [{"name": "registry-creds"}]
    assert pod["securityContext"] == OPERATOR["podSecurityContext"]
    [c] = pod["containers"]
    assert c["securityContext"] == deep_merge(DEFAULTS["securityContext"], OPERATOR["securityContext"])  # Helm merges values
    env = {e["name"]: e for e in c["env"]}
    assert env["HTTPS_PROXY"]["valueFrom"] == {"secretKeyRef": {"name": "proxy", "key": "url"}}
    assert env["NO_PROXY"]["value"] == ".svc,.cluster.local" and "GITHUB_TOKEN" in env
    assert c["envFrom"] == [{"configMapRef": {"name": "proxy-env"}}]
    assert {"name": "corp-ca", "mountPath": "/etc/ssl/corp", "readOnly": True} in c["volumeMounts"]
    assert {"name": "corp-ca", "configMap": {"name": "corp-ca"}} in pod["volumes"]


def test_operator_values_reach_every_job(helm: dict) -> None:
    """The Jobs the wrapper builds from the ConfigMap carry every jobs.* value; the credential rule holds."""
    jobs = built_jobs(harness(manifests(helm["operator-1.37"])))
    for role, job in jobs.items():
        meta, pod = job["spec"]["template"]["metadata"], job["spec"]["template"]["spec"]
        assert meta["labels"]["team"] == "ml" and meta["labels"]["app.kubernetes.io/instance"] == RELEASE, role  # senpai's win
        assert meta["annotations"] == {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}
        assert (pod["priorityClassName"], pod["runtimeClassName"]) == ("research", "gvisor")
        assert pod["affinity"] == OPERATOR["jobs"]["affinity"] and pod["imagePullSecrets"] == [{"name": "registry-creds"}]
        assert pod["securityContext"] == OPERATOR["podSecurityContext"]
        assert {"name": "datasets", "persistentVolumeClaim": {"claimName": "imagenet"}} in pod["volumes"]
        containers = {c["name"]: c for c in [*pod.get("initContainers", []), *pod["containers"]]}
        for name, c in containers.items():
            assert c["securityContext"] == deep_merge(DEFAULTS["securityContext"], OPERATOR["securityContext"]), name
            assert [e for e in c["env"] if e["name"] in ("NCCL_DEBUG", "NODE_NAME")] == JOB_ENV, name
            mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
            assert {"/dev/shm", "/datasets"} <= set(mounts), name
        with_env_from = {n for n, c in containers.items() if c.get("envFrom")}
        holders = {"verifier": {"checkout", "score"}, "student": {"prepare", "report"}, "advisor": {"job"}}
        assert with_env_from == holders[role], role
        for n in with_env_from:
            assert containers[n]["envFrom"] == [{"configMapRef": {"name": "job-env"}, "prefix": "ACME_"}]
    # the verifier's and the student's train steps run the candidate's code: no secret, the datasets read-only, an shm
    # of their own, and senpai's state and tracker folders on the shared volume masked by empty ones
    verifier, student = (jobs[r]["spec"]["template"]["spec"] for r in ("verifier", "student"))
    for train in [*verifier["initContainers"][1:], student["initContainers"][1]]:
        assert not [e for e in train["env"] if "valueFrom" in e and "secretKeyRef" in e["valueFrom"]]
        mounts = {m["mountPath"]: m for m in train["volumeMounts"]}
        assert mounts["/datasets"]["readOnly"] is True and mounts["/dev/shm"]["name"] == "train-shm"
        assert mounts["/data"]["readOnly"] is True and {"/data/state", "/data/wandb"} <= set(mounts)
        assert all(mounts[p]["readOnly"] and mounts[p]["name"].startswith("hide-") for p in ("/data/state", "/data/wandb"))
    volumes = {v["name"]: v for v in verifier["volumes"]}
    assert volumes["train-shm"]["emptyDir"] == volumes["shm"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "8Gi"}


def test_network_policy_selects_the_job_pods_and_allows_only_dns_and_the_listed_endpoints(helm: dict) -> None:
    docs = manifests(helm["operator-1.37"])
    policy = one(docs, "NetworkPolicy")
    job_labels = built_jobs(harness(docs))["student"]["spec"]["template"]["metadata"]["labels"]
    selector = policy["spec"]["podSelector"]["matchLabels"]
    assert selector.items() <= job_labels.items()
    dep_labels = one(docs, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert not selector.items() <= dep_labels.items()  # the wrapper is not a Job: it keeps its egress
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"] and "ingress" not in policy["spec"]  # nothing connects in
    dns, *rest = policy["spec"]["egress"]
    assert dns["ports"] == [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]
    assert dns["to"][0]["podSelector"] == {"matchLabels": {"k8s-app": "kube-dns"}}
    assert [(r["to"], r["ports"]) for r in rest] == [
        ([{"ipBlock": {"cidr": "140.82.112.0/20"}}], [{"port": 443, "protocol": "TCP"}]),
        (
            [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}],
            [{"port": 3128, "protocol": "TCP"}, {"port": 8080, "protocol": "TCP"}],
        ),
    ]


def test_metrics_service_and_service_monitor(helm: dict) -> None:
    docs = manifests(helm["operator-1.37"])
    service, monitor, dep = one(docs, "Service"), one(docs, "ServiceMonitor"), one(docs, "Deployment")
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    [port] = service["spec"]["ports"]
    assert port["targetPort"] == dep["spec"]["template"]["spec"]["containers"][0]["ports"][0]["name"] == "health"
    assert service["metadata"]["annotations"] == {"prometheus.io/scrape": "true"}
    # the CRD's own shape, the fields prometheus-operator reads (kubernetes-validate has no schema for it)
    assert monitor["apiVersion"] == SERVICE_MONITOR and monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    assert monitor["spec"]["endpoints"] == [{"port": port["name"], "path": "/metrics", "interval": "15s", "scrapeTimeout": "10s"}]
    assert set(monitor) == {"apiVersion", "kind", "metadata", "spec"}
    assert "ServiceMonitor" in helm["service monitor without its CRD"].get("error", "rendered anyway")


def test_openshift_assigns_the_group(helm: dict) -> None:
    docs = manifests(helm["openshift"])
    pod = one(docs, "Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    fleet = harness(docs).fleet
    assert "fsGroup" not in fleet.pod.pod_security_context
    for job in built_jobs(harness(docs)).values():
        assert "fsGroup" not in job["spec"]["template"]["spec"]["securityContext"]
        assert all("runAsUser" not in c["securityContext"] for c in job["spec"]["template"]["spec"]["containers"])


def test_the_schema_refuses_the_names_senpai_treats_as_secret() -> None:
    """values.schema.json's pattern for Jobs' env names is senpai's SECRET_ENV, so Helm refuses what the config would."""
    schema = json.loads((CHART / "values.schema.json").read_text())
    name = schema["properties"]["jobs"]["properties"]["extraEnv"]["items"]["properties"]["name"]
    assert name["not"]["pattern"] == "(?i)" + SECRET_ENV.pattern
