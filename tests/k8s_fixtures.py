"""KubernetesFleet wired to the API-server stand-in (tests/k8s_apiserver.py); no cluster involved.

The kubernetes client, the fleet and the stand-in (jsonschema) are imported by the helpers that use
them: conftest.py loads this module in every pytest process, most of which run no kubernetes test.
"""

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import pytest

from senpai.config.harness import KubernetesFleetSettings
from senpai.fleet.base import JobSpec

if TYPE_CHECKING:
    from k8s_apiserver import ApiServer
    from kubernetes import client

    from senpai.fleet.kubernetes import KubernetesFleet

NAMESPACE = "senpai"
SECRET_VALUE = "ghp_standin_0123456789"  # must never appear in a request the fleet sends


def k8s_settings(**overrides: object) -> KubernetesFleetSettings:
    """Settings as the chart renders them, with GPU scheduling and secrets by reference."""
    base: dict = {
        "backend": "kubernetes",
        "namespace": NAMESPACE,
        "images": {role: f"ghcr.io/senpai/{role}:0.1.0" for role in ("advisor", "student", "verifier")},
        "pvc": "senpai-data",
        "config_map": "senpai-config",
        "secret_env": [
            {"env": "GITHUB_TOKEN", "secret": "senpai-secrets", "key": "github-token"},
            {"env": "WANDB_API_KEY", "secret": "senpai-secrets", "key": "wandb-api-key", "optional": True},
        ],
        "node_selector": {"nvidia.com/gpu.present": "true"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "resources": {"student": {"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"memory": "16Gi"}}},
        "service_account": "senpai-job",
    }
    return KubernetesFleetSettings.model_validate(base | overrides)


def build_job(spec: JobSpec, settings: KubernetesFleetSettings, hidden: Sequence[str] = ()) -> "client.V1Job":
    """`senpai.fleet.k8s_job.build_job`, imported by the first Job a test builds rather than by
    collecting the test module (it imports the kubernetes client's models)."""
    from senpai.fleet import k8s_job

    return k8s_job.build_job(spec, settings, hidden)


def as_dict(job: "client.V1Job") -> dict:
    """`job` as the JSON body the official client would send."""
    from kubernetes import client

    return client.ApiClient().sanitize_for_serialization(job)


def seed(server: "ApiServer") -> "ApiServer":
    """Give the stand-in what the chart would create: the Secret, PVC and ConfigMap of k8s_settings()."""
    c = server.cluster
    with c.lock:
        c.secrets[(NAMESPACE, "senpai-secrets")] = {"github-token": SECRET_VALUE, "wandb-api-key": "wandb-" + SECRET_VALUE}
        c.pvcs[(NAMESPACE, "senpai-data")] = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "senpai-data", "namespace": NAMESPACE},
            "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "10Gi"}}},
            "status": {"phase": "Bound"},
        }
        c.configmaps[(NAMESPACE, "senpai-config")] = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "senpai-config", "namespace": NAMESPACE},
            "data": {"harness.yaml": "schema_version: 1\n"},
        }
    return server


def k8s_fleet(server: "ApiServer", **overrides: object) -> "KubernetesFleet":
    """A KubernetesFleet through the official client against `server` (no retry delay)."""
    from kubernetes import client

    from senpai.fleet.kubernetes import KubernetesFleet

    api = client.ApiClient(client.Configuration(host=server.url))
    return KubernetesFleet(k8s_settings(**overrides), api, retry_wait=0.0)


@pytest.fixture
def apiserver() -> Iterator["ApiServer"]:
    from k8s_apiserver import ApiServer

    with ApiServer() as server:
        yield seed(server)
