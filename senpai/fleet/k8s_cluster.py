"""Read-only probes of the cluster a KubernetesFleet will use, for `senpai preflight`.

Each probe is one or two API reads and answers with plain values; deciding pass or fail and
writing the fix is the preflight's job. Secrets are read for their key names only: values are
never returned. Errors: Forbidden (the caller may not read it), TransientError, PermanentError.
"""

from collections.abc import Callable
from functools import cached_property
from typing import NamedTuple, TypeVar

from kubernetes import client
from kubernetes.utils import parse_quantity

from senpai.config.harness import KubernetesFleetSettings
from senpai.errors import NotFound
from senpai.fleet.kubernetes import api_client, call_api

T = TypeVar("T")


class Permission(NamedTuple):
    """One RBAC rule the wrapper's ServiceAccount needs in the fleet namespace."""

    verb: str
    resource: str
    group: str = ""
    subresource: str | None = None

    def __str__(self) -> str:
        sub = f"/{self.subresource}" if self.subresource else ""
        return f"{self.verb} {self.resource}{sub}" + (f" ({self.group})" if self.group else "")


# Every verb and resource the wrapper uses (docs/kubernetes.md#rbac); watch is granted for tooling.
WRAPPER_PERMISSIONS = [
    *(Permission(verb, "jobs", "batch") for verb in ("create", "get", "list", "watch", "delete")),
    *(Permission(verb, "pods") for verb in ("get", "list", "watch")),
    Permission("get", "pods", subresource="log"),
]


class GpuNode(NamedTuple):
    name: str
    gpus: int  # allocatable units of the GPU resource


class ClusterProbe:
    """Probes of `settings.namespace` through `api` (None: in-cluster config or kubeconfig, loaded
    at the first probe, so a missing config is that probe's ConfigError, not the constructor's)."""

    def __init__(self, settings: KubernetesFleetSettings, api: client.ApiClient | None = None, retry_wait: float = 0.5) -> None:
        self.settings, self.ns, self._retry_wait = settings, settings.namespace, retry_wait
        self._given_api = api

    @cached_property
    def api(self) -> client.ApiClient:
        return self._given_api or api_client(self.settings)

    @cached_property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api)

    @cached_property
    def authz(self) -> client.AuthorizationV1Api:
        return client.AuthorizationV1Api(self.api)

    def host(self) -> str:
        """The API server's URL; loads the config. Raises ConfigError if no config can be loaded."""
        return self.api.configuration.host

    def _call(self, verb: str, resource: str, fn: Callable[[], T]) -> T:
        return call_api(verb, resource, self.ns, fn, self._retry_wait)

    def _read(self, resource: str, fn: Callable[[], T]) -> T | None:
        try:
            return self._call("get", resource, fn)
        except NotFound:
            return None

    def namespace_exists(self) -> bool:
        """Kubernetes: GET /api/v1/namespaces/{ns} (cluster-scoped; a namespaced Role cannot)."""
        return self._read("namespaces", lambda: self.core.read_namespace(self.ns)) is not None

    def pvc_phase(self, name: str) -> str | None:
        """The claim's status.phase (Bound, Pending, Lost), or None if it does not exist."""
        pvc = self._read("persistentvolumeclaims", lambda: self.core.read_namespaced_persistent_volume_claim(name, self.ns))
        return None if pvc is None else (pvc.status.phase if pvc.status else None) or "Unknown"

    def config_map_keys(self, name: str) -> list[str] | None:
        """The ConfigMap's data keys, or None if it does not exist."""
        cm = self._read("configmaps", lambda: self.core.read_namespaced_config_map(name, self.ns))
        return None if cm is None else sorted({*(cm.data or {}), *(cm.binary_data or {})})

    def secret_keys(self, name: str) -> list[str] | None:
        """The Secret's key names (never its values), or None if it does not exist."""
        secret = self._read("secrets", lambda: self.core.read_namespaced_secret(name, self.ns))
        return None if secret is None else sorted({*(secret.data or {}), *(secret.string_data or {})})

    def gpu_nodes(self) -> list[GpuNode]:
        """Nodes matching the student node_selector, with their allocatable `gpu_resource`.

        Kubernetes: GET /api/v1/nodes?labelSelector=... (cluster-scoped: needs a ClusterRole).
        """
        selector = ",".join(f"{k}={v}" for k, v in self.settings.node_selector.items()) or None
        nodes = self._call("list", "nodes", lambda: self.core.list_node(label_selector=selector))
        out = []
        for node in nodes.items:
            allocatable = (node.status and node.status.allocatable) or {}
            out.append(GpuNode(node.metadata.name, int(parse_quantity(allocatable.get(self.settings.gpu_resource, "0")))))
        return out

    def can(self, p: Permission) -> tuple[bool, str]:
        """(allowed, reason) for the caller. Kubernetes: POST .../selfsubjectaccessreviews."""
        attrs = client.V1ResourceAttributes(
            namespace=self.ns, verb=p.verb, resource=p.resource, group=p.group, subresource=p.subresource
        )
        review = client.V1SelfSubjectAccessReview(
            api_version="authorization.k8s.io/v1",
            kind="SelfSubjectAccessReview",
            spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=attrs),
        )
        result = self._call("create", "selfsubjectaccessreviews", lambda: self.authz.create_self_subject_access_review(review))
        return bool(result.status and result.status.allowed), (result.status and result.status.reason) or ""
