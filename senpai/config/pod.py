"""What an operator adds to every Kubernetes Job pod senpai creates (`fleet.pod`; the chart's
`jobs.*`, `imagePullSecrets`, `podSecurityContext` and `securityContext`), and the rules that keep
a credential away from the containers that run code agents wrote.

Objects are in the Kubernetes JSON shape (camelCase, as in a manifest). The fleet turns them into
the official client's models (`senpai.fleet.k8s_job`), which check every field; this module checks
what the shape alone does not say:

- **env** reaches every container of every Job, the verifier's train steps included (they run the
  candidate's code). So it never carries a credential: `valueFrom` may be `configMapKeyRef`,
  `fieldRef` or `resourceFieldRef`, never `secretKeyRef`; a name that looks secret (`SECRET_ENV`:
  `HF_TOKEN`, `AWS_SECRET_ACCESS_KEY`, ...) or that senpai fills from a Secret (`fleet.secret_env`,
  the forge token, an LLM key) is refused, and so are the names senpai sets itself (RESERVED_ENV,
  `SENPAI_*`). Credentials go through `fleet.secret_env` (the chart's `secrets.*`): only the
  containers that talk to the forge get them, and senpai scrubs them before it runs untrusted code.
- **env_from** names ConfigMaps only (`configMapRef`, never `secretRef`). Its variable names are not
  known here, so it reaches only the containers that hold the token anyway (an advisor's or a
  student's `job`, a verifier's `checkout` and `score`), never a train step.
- **volumes** are emptyDir, persistentVolumeClaim, configMap, nfs or ephemeral (VOLUME_SOURCES):
  never a Secret, a projected volume (Secrets, ServiceAccount tokens), CSI or hostPath.
  **volume_mounts** name one of them and reach every container; in a verifier's train steps they
  are read-only, and an emptyDir is the train steps' own copy (as their HOME and /tmp are).
- **Security contexts** keep what makes a pod fit to run agents' code (POD_REQUIRED,
  CONTAINER_REQUIRED): non-root, no privilege escalation, not privileged, a read-only root
  filesystem, every capability dropped and none added. No uid is fixed by default: the image's
  USER runs, or the uid the platform assigns (OpenShift's restricted SCC).
"""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from senpai.config.secret_env import SECRET_ENV, secret_value

K8sObject = dict[str, JsonValue]  # a Kubernetes API object in its JSON shape; the fleet checks its fields
RESERVED_ENV = frozenset({"HOME", "TMPDIR", "PATH", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"})
ENV_SOURCES = frozenset({"configMapKeyRef", "fieldRef", "resourceFieldRef"})
VOLUME_SOURCES = frozenset({"emptyDir", "persistentVolumeClaim", "configMap", "nfs", "ephemeral"})
DEFAULT_POD_SECURITY = {"runAsNonRoot": True, "fsGroup": 10001, "seccompProfile": {"type": "RuntimeDefault"}}
DEFAULT_CONTAINER_SECURITY = {
    "runAsNonRoot": True,
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}
POD_REQUIRED = {"runAsNonRoot": True}
CONTAINER_REQUIRED = {"runAsNonRoot": True, "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True}
WHY = "Job containers run code that agents wrote"


class JobPodSettings(BaseModel):
    """Additions to every Job pod and container (see the module docstring for what is refused)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    env: list[K8sObject] = Field(default_factory=list, description="core/v1 EnvVar list, into every container.")
    env_from: list[K8sObject] = Field(
        default_factory=list, description="core/v1 EnvFromSource list (configMapRef only), for the containers holding the token."
    )
    volumes: list[K8sObject] = Field(default_factory=list, description="core/v1 Volume list (VOLUME_SOURCES only).")
    volume_mounts: list[K8sObject] = Field(default_factory=list, description="core/v1 VolumeMount list, into every container.")
    labels: dict[str, str] = Field(default_factory=dict, description="Pod labels; senpai's own labels win.")
    annotations: dict[str, str] = Field(default_factory=dict, description="Pod annotations.")
    priority_class_name: str | None = Field(None, description="PriorityClass of Job pods.")
    runtime_class_name: str | None = Field(None, description="RuntimeClass of Job pods (e.g. gvisor, kata, nvidia).")
    affinity: K8sObject | None = Field(None, description="core/v1 Affinity of Job pods.")
    image_pull_secrets: list[str] = Field(default_factory=list, description="Names of registry Secrets of Job pods.")
    pod_security_context: K8sObject = Field(
        default_factory=lambda: dict(DEFAULT_POD_SECURITY), description="core/v1 PodSecurityContext (POD_REQUIRED kept)."
    )
    security_context: K8sObject = Field(
        default_factory=lambda: dict(DEFAULT_CONTAINER_SECURITY),
        description="core/v1 SecurityContext of every container (CONTAINER_REQUIRED kept, no capability added).",
    )

    @model_validator(mode="after")
    def _no_credential(self) -> "JobPodSettings":
        problems = [*env_problems(self.env, ()), *self._source_problems(), *self._security_problems()]
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def _source_problems(self) -> list[str]:
        out = []
        for i, src in enumerate(self.env_from):
            if set(src) - {"configMapRef", "prefix"}:
                out.append(f"env_from[{i}]: only configMapRef is allowed ({WHY}; a Secret goes in fleet.secret_env)")
        names = set()
        for i, vol in enumerate(self.volumes):
            names.add(vol.get("name"))
            kinds = set(vol) - {"name"}
            if len(kinds) != 1 or not kinds <= VOLUME_SOURCES:
                allowed = ", ".join(sorted(VOLUME_SOURCES))
                out.append(f"volumes[{i}] ({vol.get('name')}): {', '.join(sorted(kinds))} refused: one of {allowed} ({WHY})")
            elif not isinstance(vol[kind := next(iter(kinds))], dict):
                out.append(f"volumes[{i}] ({vol.get('name')}): {kind} must be a mapping (core/v1 Volume)")
        for i, mount in enumerate(self.volume_mounts):
            if mount.get("name") not in names:
                out.append(f"volume_mounts[{i}]: {mount.get('name')!r} is not one of fleet.pod.volumes")
        return out

    def _security_problems(self) -> list[str]:
        pod, container = self.pod_security_context, self.security_context
        out = [f"pod_security_context.{k} must be {v!r} ({WHY})" for k, v in POD_REQUIRED.items() if pod.get(k) != v]
        out += [f"security_context.{k} must be {v!r} ({WHY})" for k, v in CONTAINER_REQUIRED.items() if container.get(k) != v]
        caps: Any = self.security_context.get("capabilities") or {}
        if not isinstance(caps, dict):
            return [*out, "security_context.capabilities must be a mapping (core/v1 Capabilities: add, drop)"]
        if self.security_context.get("privileged") or caps.get("add") or "ALL" not in (caps.get("drop") or []):
            out.append(f"security_context: not privileged, capabilities drop [ALL] and add none ({WHY})")
        if 0 in (self.pod_security_context.get("runAsUser"), self.security_context.get("runAsUser")):
            out.append(f"runAsUser 0 is root ({WHY})")
        return out


def env_problems(env: list[K8sObject], secret_names: tuple[str, ...] | list[str]) -> list[str]:
    """Why each entry of `env` (core/v1 EnvVar dicts) may not reach code agents wrote: a Secret
    reference, a name that looks secret or is one of `secret_names`, a literal value that looks like a
    credential (`secret_value`: a token shape, a URL with a password), or a name senpai sets."""
    out = []
    for i, var in enumerate(env):
        name, source = str(var.get("name", "")), var.get("valueFrom") or {}
        where = f"env[{i}] ({name})"
        if not isinstance(source, dict):
            out.append(f"{where}: valueFrom must be a mapping (core/v1 EnvVarSource)")
        elif set(source) - ENV_SOURCES:
            out.append(f"{where}: valueFrom may be {', '.join(sorted(ENV_SOURCES))} ({WHY}; a Secret goes in fleet.secret_env)")
        if SECRET_ENV.search(name) or name in secret_names:
            out.append(f"{where}: the name holds a credential ({WHY}); give it through fleet.secret_env (chart: secrets.*)")
        elif isinstance(var.get("value"), str) and secret_value(var["value"]):
            out.append(f"{where}: the value looks like a credential ({WHY}); give it through fleet.secret_env (chart: secrets.*)")
        if name in RESERVED_ENV or name.startswith("SENPAI_"):
            out.append(f"{where}: senpai sets {name} itself")
    return out
