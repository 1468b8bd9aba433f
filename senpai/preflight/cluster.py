"""Cluster checks of `senpai preflight` (kubernetes fleet only), over senpai.fleet.k8s_cluster probes.

A read the caller is not allowed (HTTP 403) is a skip naming the permission, not a failure: the
wrapper's Role does not need to read namespaces, nodes or Secrets, so running preflight with it
leaves those unchecked. The RBAC rows are SelfSubjectAccessReviews, so they check whoever runs
preflight: run it in the wrapper pod (`kubectl exec deploy/<release>-wrapper -- senpai preflight`)
to check the ServiceAccount itself.
"""

from collections.abc import Callable

from senpai.config.harness import HarnessConfig, KubernetesFleetSettings
from senpai.errors import ConfigError, Forbidden, SenpaiError
from senpai.fleet.k8s_cluster import WRAPPER_PERMISSIONS, ClusterProbe
from senpai.fleet.k8s_job import CONFIG_KEY, check_pod
from senpai.preflight import CheckResult, failed, passed, skipped

K8S = "cluster"


def _guard(check: str, fn: Callable[[], CheckResult]) -> CheckResult:
    try:
        return fn()
    except Forbidden as e:
        return skipped(K8S, check, f"not checked: {e}")
    except SenpaiError as e:
        return failed(K8S, check, str(e), "check the cluster connection (kubeconfig context or in-cluster ServiceAccount)")


def _namespace(s: KubernetesFleetSettings, probe: ClusterProbe) -> CheckResult:
    if probe.namespace_exists():
        return passed(K8S, "namespace", f"{s.namespace} exists")
    return failed(K8S, "namespace", f"{s.namespace} does not exist", f"kubectl create namespace {s.namespace}")


def _pvc(s: KubernetesFleetSettings, probe: ClusterProbe) -> CheckResult:
    phase = probe.pvc_phase(s.pvc)
    if phase == "Bound":
        return passed(K8S, "PVC", f"{s.pvc} is Bound")
    if phase is None:
        return failed(K8S, "PVC", f"{s.pvc} does not exist", "install the chart with persistence enabled, or create the claim")
    fix = "check its StorageClass and PersistentVolumes; a WaitForFirstConsumer class binds only when a pod mounts it"
    return failed(K8S, "PVC", f"{s.pvc} is {phase}", fix)


def _config_map(s: KubernetesFleetSettings, probe: ClusterProbe) -> CheckResult:
    keys = probe.config_map_keys(s.config_map)
    if keys is None:
        return failed(K8S, "ConfigMap", f"{s.config_map} does not exist", "install the chart, or set fleet.config_map")
    if CONFIG_KEY not in keys:
        return failed(
            K8S, "ConfigMap", f"{s.config_map} has no key {CONFIG_KEY} (keys: {keys})", f"put the config under {CONFIG_KEY}"
        )
    return passed(K8S, "ConfigMap", f"{s.config_map} has {CONFIG_KEY}")


def _secret(s: KubernetesFleetSettings, probe: ClusterProbe, name: str) -> CheckResult:
    entries = [e for e in s.secret_env if e.secret == name]
    keys = probe.secret_keys(name)
    required = sorted({e.key for e in entries if not e.optional})
    if keys is None:
        if not required:
            return passed(K8S, f"Secret {name}", "absent, and every key from it is optional")
        fix = f"kubectl -n {s.namespace} create secret generic {name} " + " ".join(f"--from-literal={k}=..." for k in required)
        return failed(K8S, f"Secret {name}", "does not exist", fix)
    missing = [k for k in required if k not in keys]
    if missing:
        return failed(K8S, f"Secret {name}", f"has no key {', '.join(missing)}", f"add {', '.join(missing)} to Secret {name}")
    return passed(K8S, f"Secret {name}", f"keys {', '.join(sorted({e.key for e in entries} & set(keys)))} present")


def _job_pod(s: KubernetesFleetSettings) -> CheckResult:
    """`fleet.pod` builds into a pod and takes none of senpai's own volumes or paths (no API call)."""
    try:
        check_pod(s)
    except ConfigError as e:
        return failed(
            K8S,
            "Job pod",
            str(e),
            "fix fleet.pod (the chart's jobs.* values); docs/kubernetes.md#what-the-operator-adds-fleetpod",
        )
    pod = s.pod
    classes = [f"{k} {v}" for k, v in (("runtimeClass", pod.runtime_class_name), ("priorityClass", pod.priority_class_name)) if v]
    added = f"{len(pod.env)} env, {len(pod.env_from)} envFrom, {len(pod.volumes)} volumes added"
    return passed(K8S, "Job pod", ", ".join([added, *classes]))


def _holdout(s: KubernetesFleetSettings, probe: ClusterProbe) -> CheckResult:
    """The sealed holdout's Secret has at least one key, or its claim is Bound (its files are not read)."""
    hold = s.holdout
    assert hold is not None
    if hold.secret is not None:
        keys = probe.secret_keys(hold.secret)
        if not keys:
            fix = f"kubectl -n {s.namespace} create secret generic {hold.secret} --from-file=<holdout file> ..."
            return failed(
                K8S, "sealed holdout", f"Secret {hold.secret} " + ("has no keys" if keys == [] else "does not exist"), fix
            )
        return passed(K8S, "sealed holdout", f"Secret {hold.secret} holds {', '.join(keys)}")
    phase = probe.pvc_phase(hold.claim or "")
    if phase == "Bound":
        return passed(K8S, "sealed holdout", f"claim {hold.claim} is Bound")
    fix = "create the claim and copy the holdout onto it (docs/kubernetes.md#the-sealed-holdout)"
    return failed(K8S, "sealed holdout", f"claim {hold.claim} " + (f"is {phase}" if phase else "does not exist"), fix)


def _gpus(cfg: HarnessConfig, s: KubernetesFleetSettings, probe: ClusterProbe) -> CheckResult:
    need = max(st.gpus for st in cfg.students)
    if need == 0:
        return skipped(K8S, "GPU nodes", "no student asks for GPUs")
    nodes = probe.gpu_nodes()
    fitting = [n.name for n in nodes if n.gpus >= need]
    where = f"nodes matching {s.node_selector or 'any labels'}"
    if fitting:
        return passed(K8S, "GPU nodes", f"{len(fitting)} of the {where} offer {need}+ {s.gpu_resource}")
    fix = f"add GPU nodes with {need}+ allocatable {s.gpu_resource}, or fix fleet.node_selector / the students' gpus"
    return failed(K8S, "GPU nodes", f"none of {len(nodes)} {where} offers {need} {s.gpu_resource}", fix)


def cluster_checks(cfg: HarnessConfig, probe: ClusterProbe) -> list[CheckResult]:
    """The connection (a failure is the only row), namespace, PVC, GPU nodes, ConfigMap, the Job
    pod (`fleet.pod`), Secrets, the sealed holdout (if set), then one RBAC row per wrapper permission."""
    s = cfg.fleet
    assert isinstance(s, KubernetesFleetSettings)
    try:
        host = probe.host()
    except ConfigError as e:  # no kubeconfig and not in a pod: nothing else here can be checked
        return [failed(K8S, "cluster connection", str(e), "set KUBECONFIG or fleet.kubeconfig_context, or run in the cluster")]
    out = [
        passed(K8S, "cluster connection", f"API server {host}"),
        _guard("namespace", lambda: _namespace(s, probe)),
        _guard("PVC", lambda: _pvc(s, probe)),
        _guard("GPU nodes", lambda: _gpus(cfg, s, probe)),
        _guard("ConfigMap", lambda: _config_map(s, probe)),
        _job_pod(s),
    ]
    for name in sorted({e.secret for e in s.secret_env}):
        out.append(_guard(f"Secret {name}", lambda n=name: _secret(s, probe, n)))
    if s.holdout is not None:
        out.append(_guard("sealed holdout", lambda: _holdout(s, probe)))
    for p in WRAPPER_PERMISSIONS:
        out.append(_guard(f"RBAC {p}", lambda p=p: _rbac(s, probe, p)))
    return out


def _rbac(s: KubernetesFleetSettings, probe: ClusterProbe, p) -> CheckResult:
    allowed, reason = probe.can(p)
    if allowed:
        return passed(K8S, f"RBAC {p}", f"allowed in {s.namespace}")
    resource = f"{p.resource}/{p.subresource}" if p.subresource else p.resource
    fix = f"add to the wrapper's Role: apiGroups [{p.group!r}], resources [{resource}], verbs [{p.verb}]"
    return failed(K8S, f"RBAC {p}", f"denied in {s.namespace}" + (f": {reason}" if reason else ""), fix)
