"""A Kubernetes API-server stand-in for tests: just the endpoints senpai's fleet and preflight use.

There is no cluster on the machines these tests run on; the live-cluster test is `make kind-e2e`.
This server is a threaded `http.server` on 127.0.0.1 speaking the real wire format to the real
official client:

- every request body (Job, DeleteOptions, SelfSubjectAccessReview) is validated against the
  Kubernetes OpenAPI schema with kubernetes-validate in strict mode for 1.30 and 1.37, and every
  Job and Pod it returns is validated for 1.37; a bad body gets a 422 `Invalid` Status;
- errors are Status objects as the API server sends them (404 NotFound, 409 AlreadyExists,
  403 Forbidden naming the verb and resource, 400 for logs of a waiting container);
- it fills in what the control plane would: uid, creationTimestamp, the controller-uid and
  job-name labels, one pod per Job.

Pods either run, or, with `run_pods=False`, stay Pending until a test scripts their end with
`finish()` (e.g. OOMKilled, DeadlineExceeded). A running pod is a "kubelet" thread that runs the
init containers in order, then the main container, each command as a local subprocess with its
own log (pods/log takes `container`; without it, the main container's):
- its env is the container env, with secretKeyRef values resolved from `secrets` (a missing one
  leaves the pod waiting with CreateContainerConfigError, as a kubelet does);
- each emptyDir mount is a local dir shared by the pod's containers, and workingDir and env
  values under a mountPath (HOME=/home/senpai, TMPDIR=/tmp) and command arguments equal to one
  (`--work /work`) are mapped onto it, the innermost mount winning. A mount nested in another of
  the same container (`/work/candidate` in `/work`) is a symlink in the outer one's dir; an argument
  that is no mount but holds some (`--work /work` where only `/work/candidate` is mounted) maps to a
  dir of the container's own holding just those. The PVC, ConfigMap and Secret mounts use the host's own
  paths (tests point mount paths at a host dir), a Secret volume's keys written there as files
  when a container that mounts it starts. readOnly and subPath are not enforced: what a container
  may see is checked on the Job specs, not here;
- an init container that exits non-zero fails the pod and the Job, as with restartPolicy Never;
- activeDeadlineSeconds is enforced by killing it (Job condition Failed/DeadlineExceeded).
"""

import functools
import json
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import jsonschema
import kubernetes_validate
from kubernetes_validate.utils import schema_contents
from referencing import Registry, Resource

VERSIONS = ("1.30", "1.37")
CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"


def schema_name(obj: dict) -> str:
    """kubernetes_validate's schema file stem for `obj`: Job batch/v1 -> job-batch-v1."""
    if obj["kind"] == "DeleteOptions":
        return "deleteoptions-meta-v1"  # one schema for every group
    return f"{obj['kind'].lower()}-{re.sub(r'^([^./]*)(?:\.[^/]*)?/', r'\1-', obj['apiVersion'])}"


@functools.cache
def _validator(stem: str, version: str) -> jsonschema.Validator:
    """The strict validator kubernetes_validate.validate builds, cached (it re-reads the schema per call)."""
    full = next(v for v in reversed(kubernetes_validate.utils.all_versions()) if v.startswith(version + "."))
    base = f"kubernetes-json-schema/v{full}-local-strict"
    schema = schema_contents(f"{base}/{stem}.json", version)
    registry = Resource.from_contents(schema) @ Registry()
    registry = Resource.from_contents(schema_contents(f"{base}/_definitions.json", version)) @ registry
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


def validate(obj: dict, versions: tuple[str, ...] = VERSIONS) -> None:
    """Raise jsonschema.ValidationError unless `obj` is valid (strict) for every version."""
    for version in versions:
        error = jsonschema.exceptions.best_match(_validator(schema_name(obj), version).iter_errors(obj))
        if error is not None:
            raise jsonschema.ValidationError(f"k8s {version}: {'.'.join(map(str, error.absolute_path))}: {error.message}")


def _containers(pod: dict) -> list[str]:
    """The pod's container names in the order they run: init containers, then the main container."""
    spec = pod["spec"]
    return [c["name"] for c in [*spec.get("initContainers", []), spec["containers"][0]]]


def _status(pod: dict, container: str) -> dict:
    """The (init) container status of `container` in `pod`."""
    every = [*pod["status"].get("initContainerStatuses", []), *pod["status"]["containerStatuses"]]
    return next(s for s in every if s["name"] == container)


def _kill(proc: subprocess.Popen) -> None:
    """SIGKILL the pod's process group; it may have exited (and been reaped) already."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str, details: dict | None = None) -> None:
        super().__init__(message)
        self.status = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        }
        if details:
            self.status["details"] = details


def not_found(resource: str, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{resource} "{name}" not found', {"name": name, "kind": resource.split(".")[0]})


@dataclass
class Cluster:
    """The stand-in's state. Tests read and change it directly (guarded by `lock`)."""

    run_pods: bool = True
    namespaces: set[str] = field(default_factory=lambda: {"senpai"})
    jobs: dict[tuple[str, str], dict] = field(default_factory=dict)
    pods: dict[tuple[str, str], dict] = field(default_factory=dict)
    logs: dict[tuple[str, str, str], Path] = field(default_factory=dict, metadata={"doc": "(ns, pod, container) -> log"})
    pvcs: dict[tuple[str, str], dict] = field(default_factory=dict)
    configmaps: dict[tuple[str, str], dict] = field(default_factory=dict)
    secrets: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    nodes: list[dict] = field(default_factory=list)
    deny: set[tuple[str, str]] = field(default_factory=set, metadata={"doc": "(verb, resource) the caller may not do"})
    faults: list[int] = field(default_factory=list, metadata={"doc": "HTTP codes returned to the next requests"})
    requests: list[tuple[str, str, dict | None]] = field(default_factory=list, metadata={"doc": "(method, path, body)"})
    lock: threading.RLock = field(default_factory=threading.RLock)
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="k8s-standin-")))
    procs: dict[tuple[str, str], subprocess.Popen] = field(default_factory=dict)

    # ---------------------------------------------------------------- scripted pod ends

    def finish(
        self,
        ns: str,
        job: str,
        exit_code: int,
        reason: str | None = None,
        log: str = "",
        deadline: bool = False,
        container: str | None = None,
    ) -> None:
        """End job `job`'s pod in container `container` (default: the main one; the init containers
        before it complete with exit 0): it terminates with `exit_code` and `reason` (e.g.
        "OOMKilled"; default Completed/Error) after writing `log`; `deadline` fails the Job with
        condition reason DeadlineExceeded as the Job controller does at activeDeadlineSeconds."""
        with self.lock:
            pod = self._pod_of(ns, job)
            order = _containers(pod)
            container = container or order[-1]
            for name in order[: order.index(container)]:
                self._start(ns, job, pod, name)
                self._terminate(ns, job, pod, name, 0, None, False)
            self.logs[(ns, pod["metadata"]["name"], container)].write_text(log)
            self._start(ns, job, pod, container)
            self._terminate(ns, job, pod, container, exit_code, reason, deadline)

    def _pod_of(self, ns: str, job: str) -> dict:
        uid = self.jobs[(ns, job)]["metadata"]["uid"]
        return next(p for p in self.pods.values() if p["metadata"]["labels"].get(CONTROLLER_UID) == uid)

    def _start(self, ns: str, job: str, pod: dict, container: str) -> None:
        cs = _status(pod, container)
        if "waiting" not in cs["state"] or pod["status"]["phase"] != "Pending":
            return
        t = now()
        cs.update(state={"running": {"startedAt": t}}, ready=True, started=True)
        if container == _containers(pod)[-1]:  # the pod runs once its init containers are done
            pod["status"]["phase"] = "Running"
        pod["status"].setdefault("startTime", t)
        self.jobs[(ns, job)]["status"].setdefault("startTime", t)
        self.jobs[(ns, job)]["status"]["active"] = 1

    def _terminate(  # noqa: PLR0913
        self, ns: str, job: str, pod: dict, container: str, exit_code: int, reason: str | None, deadline: bool
    ) -> None:
        """`container` exits; the pod and Job end unless an init container completed with exit 0."""
        jobobj = self.jobs.get((ns, job))
        if jobobj is None or pod["status"]["phase"] in ("Succeeded", "Failed"):
            return
        t = now()
        cs = _status(pod, container)
        started = cs["state"].get("running", {}).get("startedAt", t)
        reason = reason or ("Completed" if exit_code == 0 else "Error")
        cs.update(
            state={"terminated": {"exitCode": exit_code, "reason": reason, "startedAt": started, "finishedAt": t}}, ready=False
        )
        cs["started"] = False
        if exit_code == 0 and not deadline and container != _containers(pod)[-1]:
            return  # an init container completed: the next one starts
        pod["status"]["phase"] = "Succeeded" if exit_code == 0 and not deadline else "Failed"
        status = jobobj["status"]
        status.pop("active", None)
        if exit_code == 0 and not deadline:
            status.update(succeeded=1, completionTime=t)
            kinds = [("SuccessCriteriaMet", "CompletionsReached"), ("Complete", "CompletionsReached")]
        else:
            status["failed"] = 1
            why = "DeadlineExceeded" if deadline else "BackoffLimitExceeded"
            kinds = [("FailureTarget", why), ("Failed", why)]
        status["conditions"] = [
            {"type": k, "status": "True", "reason": r, "message": r, "lastProbeTime": t, "lastTransitionTime": t}
            for k, r in kinds
        ]

    # ---------------------------------------------------------------- the "kubelet"

    def create_pod(self, ns: str, job: dict) -> None:
        name = f"{job['metadata']['name']}-{uuid.uuid4().hex[:5]}"
        template = job["spec"]["template"]
        init = template["spec"].get("initContainers", [])

        def waiting(c: dict, reason: str) -> dict:
            state = {"waiting": {"reason": reason}}
            return {
                "name": c["name"],
                "image": c["image"],
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "started": False,
                "state": state,
            }

        main = template["spec"]["containers"][0]
        status: dict = {
            "phase": "Pending",
            "containerStatuses": [waiting(main, "PodInitializing" if init else "ContainerCreating")],
        }
        if init:
            status["initContainerStatuses"] = [waiting(c, "PodInitializing") for c in init]
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": ns,
                "uid": str(uuid.uuid4()),
                "creationTimestamp": now(),
                "labels": dict(template["metadata"]["labels"]),
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": job["metadata"]["name"],
                        "uid": job["metadata"]["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": template["spec"],
            "status": status,
        }
        self.pods[(ns, name)] = pod
        for container in _containers(pod):
            self.logs[(ns, name, container)] = self.workdir / f"{ns}-{name}-{container}.log"
            self.logs[(ns, name, container)].write_text("")
        if self.run_pods:
            threading.Thread(target=self._run, args=(ns, job["metadata"]["name"], pod), daemon=True).start()

    def _mounts(self, ns: str, pod: dict, container: dict, root: Path) -> dict[str, Path] | str:
        """mountPath -> local dir for each mount of `container`: a dir under `root` shared by the pod's
        containers for an emptyDir; the host's own path for the other volumes (the PVC, the ConfigMap,
        a Secret, whose keys are written there as files). A message if a Secret volume's Secret is missing."""
        volumes = {v["name"]: v for v in pod["spec"].get("volumes", [])}
        out = {}
        for m in container.get("volumeMounts", []):
            volume = volumes[m["name"]]
            out[m["mountPath"]] = root / m["name"] if "emptyDir" in volume else Path(m["mountPath"])
            out[m["mountPath"]].mkdir(parents=True, exist_ok=True)
            if "secret" in volume:
                data = self.secrets.get((ns, volume["secret"]["secretName"]))
                if data is None:
                    return (
                        f'MountVolume.SetUp failed for volume "{m["name"]}": secret "{volume["secret"]["secretName"]}" not found'
                    )
                for key, value in data.items():
                    (out[m["mountPath"]] / key).write_text(value)
        pod_dirs = [p for p in out if out[p].is_relative_to(root)]  # emptyDirs
        for outer in pod_dirs:  # nested emptyDirs: symlinks in the outer one's dir (made once, shared by the pod)
            for inner in pod_dirs:
                link = out[outer] / inner[len(outer) :].lstrip("/")
                if inner.startswith(outer.rstrip("/") + "/") and not link.is_symlink():
                    link.parent.mkdir(parents=True, exist_ok=True)
                    link.symlink_to(out[inner])
        return out

    @staticmethod
    def _arg(arg: str, mounts: dict[str, Path], view: Path) -> str:
        """A command argument mapped onto the host: a mount's dir; for a path that only holds mounts,
        a dir under `view` (the container's own) with a symlink per mount; else as it is."""
        if arg in mounts:
            return str(mounts[arg])
        emptydirs = [m for m in mounts if mounts[m].is_relative_to(view.parent)]
        inside = [m for m in emptydirs if arg.startswith("/") and m.startswith(arg.rstrip("/") + "/")]
        for m in inside:
            link = view / arg.strip("/") / m[len(arg) :].lstrip("/")
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.is_symlink():
                link.symlink_to(mounts[m])
        return str(view / arg.strip("/")) if inside else arg

    @staticmethod
    def _host(path: str, mounts: dict[str, Path]) -> str:
        """`path` as the container sees it, mapped onto the host through the innermost mount."""
        for mount in sorted(mounts, key=len, reverse=True):
            if path == mount or path.startswith(mount.rstrip("/") + "/"):
                return str(mounts[mount]) + path[len(mount) :]
        return path

    def _env(self, ns: str, container: dict, mounts: dict[str, Path]) -> dict[str, str] | str:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        for e in container.get("env", []):
            if "value" in e:
                env[e["name"]] = self._host(e["value"], mounts)
                continue
            ref = e["valueFrom"]["secretKeyRef"]
            value = self.secrets.get((ns, ref["name"]), {}).get(ref["key"])
            if value is None and not ref.get("optional"):
                return f'secret "{ref["name"]}" not found or has no key "{ref["key"]}"'
            if value is not None:
                env[e["name"]] = value
        return env

    def _run(self, ns: str, job: str, pod: dict) -> None:
        """Run the init containers in order, then the main container, within activeDeadlineSeconds."""
        deadline = self.jobs[(ns, job)]["spec"].get("activeDeadlineSeconds")
        end = time.monotonic() + deadline if deadline else None
        for container in [*pod["spec"].get("initContainers", []), pod["spec"]["containers"][0]]:
            proc = self._exec(ns, job, pod, container)
            if proc is None:
                return
            try:
                code, late = proc.wait(timeout=None if end is None else max(0.0, end - time.monotonic())), False
            except subprocess.TimeoutExpired:
                _kill(proc)
                code, late = proc.wait(), True
            self._unmount_secrets(pod, container)
            with self.lock:
                self.procs.pop((ns, pod["metadata"]["name"]), None)
                if (ns, pod["metadata"]["name"]) not in self.pods:
                    return
                self._terminate(ns, job, pod, container["name"], 137 if late else code, None, late)
                if pod["status"]["phase"] != "Pending":
                    return

    @staticmethod
    def _unmount_secrets(pod: dict, container: dict) -> None:
        """Remove the Secret files `_mounts` wrote at the host's path once `container` ends: a kubelet
        mounts a volume per container, so the next container must not find them there."""
        volumes = {v["name"]: v for v in pod["spec"].get("volumes", [])}
        for m in container.get("volumeMounts", []):
            if "secret" in volumes[m["name"]]:
                for f in Path(m["mountPath"]).iterdir():
                    f.unlink()

    def _exec(self, ns: str, job: str, pod: dict, container: dict) -> subprocess.Popen | None:
        """Start `container` as a local process (args, env values and workingDir under a mountPath
        mapped onto the host); None if it cannot start (the pod then waits or fails, as with a kubelet)."""
        name = container["name"]
        with self.lock:
            if (ns, pod["metadata"]["name"]) not in self.pods:
                return None
            mounts = self._mounts(ns, pod, container, self.workdir / pod["metadata"]["name"])
            env = mounts if isinstance(mounts, str) else self._env(ns, container, mounts)
            if isinstance(env, str):
                reason = "ContainerCreating" if isinstance(mounts, str) else "CreateContainerConfigError"
                _status(pod, name)["state"] = {"waiting": {"reason": reason, "message": env}}
                return None
            work = Path(self._host(container.get("workingDir", "/"), mounts))
            # an argument that names a mount (`--work /work`) is mapped; others may be host paths
            view = self.workdir / pod["metadata"]["name"] / f"view-{name}"
            command = [self._arg(arg, mounts, view) for arg in container["command"]]
            log = self.logs[(ns, pod["metadata"]["name"], name)]
            try:
                with open(log, "ab") as out:
                    proc = subprocess.Popen(
                        command, env=env, cwd=work, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                    )
            except OSError as e:  # as containerd reports an exec failure
                log.write_text(f"exec {container['command'][0]}: {e.strerror}\n")
                self._start(ns, job, pod, name)
                self._terminate(ns, job, pod, name, 128, "StartError", False)
                return None
            self.procs[(ns, pod["metadata"]["name"])] = proc
            self._start(ns, job, pod, name)
            return proc

    def stop(self) -> None:
        with self.lock:
            for proc in self.procs.values():
                _kill(proc)


class _Handler(BaseHTTPRequestHandler):
    server: "ApiServer"
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, code: int, body: object, content_type: str = "application/json") -> None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self, method: str) -> None:
        url = urlparse(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        cluster = self.server.cluster
        try:
            with cluster.lock:
                cluster.requests.append((method, url.path, body))
                if cluster.faults:
                    code = cluster.faults.pop(0)
                    raise ApiError(code, "InternalError" if code >= 500 else "TooManyRequests", f"injected fault {code}")
            result = route(cluster, method, url.path, query, body)
        except ApiError as e:
            return self._send(e.status["code"], e.status)
        except Exception as e:  # a stand-in bug: answer like an API server would, not by hanging up
            return self._send(500, ApiError(500, "InternalError", f"stand-in: {type(e).__name__}: {e}").status)
        if isinstance(result, str):
            return self._send(200, result, "text/plain")
        return self._send(201 if method == "POST" else 200, result)

    def do_GET(self) -> None:  # noqa: N802
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    def do_DELETE(self) -> None:  # noqa: N802
        self._handle("DELETE")


def _matches(labels: dict[str, str], selector: str | None) -> bool:
    for term in filter(None, (selector or "").split(",")):
        key, _, value = term.partition("=")
        if labels.get(key) != value:
            return False
    return True


def _check(cluster: Cluster, verb: str, resource: str, ns: str | None, group: str = "") -> None:
    if (verb, resource) in cluster.deny:
        kind = resource.split("/")[0]
        where = f' in the namespace "{ns}"' if ns else " at the cluster scope"
        message = (
            f'{kind}{"." + group if group else ""} is forbidden: User "system:serviceaccount:{ns or "default"}:senpai" '
            f'cannot {verb} resource "{resource}" in API group "{group}"{where}'
        )
        raise ApiError(403, "Forbidden", message, {"kind": kind, "group": group})


def _validate_or_422(obj: dict, kind: str, name: str) -> None:
    try:
        validate(obj)
    except jsonschema.ValidationError as e:
        raise ApiError(422, "Invalid", f'{kind} "{name}" is invalid: {e.message}', {"name": name, "kind": kind}) from e


def _out(obj: dict) -> dict:
    validate(obj, ("1.37",))  # the stand-in itself must answer in the real shape
    return obj


def route(cluster: Cluster, method: str, path: str, query: dict, body: dict | None) -> dict | str:  # noqa: C901
    """Dispatch one request; raises ApiError."""
    if m := re.fullmatch(r"/apis/batch/v1/namespaces/([^/]+)/jobs(?:/([^/]+))?", path):
        return _jobs(cluster, method, m[1], m[2], query, body)
    if m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods", path):
        _check(cluster, "list", "pods", m[1])
        with cluster.lock:
            items = [
                _out(p)
                for (ns, _), p in sorted(cluster.pods.items())
                if ns == m[1] and _matches(p["metadata"]["labels"], query.get("labelSelector"))
            ]
        return {"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "1"}, "items": items}
    if m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)/log", path):
        _check(cluster, "get", "pods/log", m[1])
        with cluster.lock:
            pod = cluster.pods.get((m[1], m[2]))
            if pod is None:
                raise not_found("pods", m[2])
            container = query.get("container") or pod["spec"]["containers"][0]["name"]  # one main container
            if container not in _containers(pod):
                raise ApiError(400, "BadRequest", f"container {container} is not valid for pod {m[2]}")
            if waiting := _status(pod, container)["state"].get("waiting"):
                message = f'container "{container}" in pod "{m[2]}" is waiting to start: {waiting["reason"]}'
                raise ApiError(400, "BadRequest", message)
            text = cluster.logs[(m[1], m[2], container)].read_text()
        tail = int(query.get("tailLines", 0))
        return "".join(text.splitlines(keepends=True)[-tail:]) if tail else text
    if m := re.fullmatch(r"/api/v1/namespaces/([^/]+)", path):
        _check(cluster, "get", "namespaces", None)
        if m[1] not in cluster.namespaces:
            raise not_found("namespaces", m[1])
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": m[1]}, "status": {"phase": "Active"}}
    if m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/(persistentvolumeclaims|configmaps|secrets)/([^/]+)", path):
        _check(cluster, "get", m[2], m[1])
        return _named(cluster, m[1], m[2], m[3])
    if path == "/api/v1/nodes":
        _check(cluster, "list", "nodes", None)
        items = [n for n in cluster.nodes if _matches(n["metadata"].get("labels", {}), query.get("labelSelector"))]
        return {"apiVersion": "v1", "kind": "NodeList", "metadata": {}, "items": items}
    if path == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews" and method == "POST":
        _validate_or_422(body, "SelfSubjectAccessReview", "")
        attrs = body["spec"]["resourceAttributes"]
        resource = attrs["resource"] + (f"/{attrs['subresource']}" if attrs.get("subresource") else "")
        allowed = (attrs["verb"], resource) not in cluster.deny
        return {**body, "status": {"allowed": allowed, **({} if allowed else {"reason": "no RBAC rule"})}}
    raise ApiError(404, "NotFound", f"the server could not find the requested resource ({method} {path})")


def _named(cluster: Cluster, ns: str, resource: str, name: str) -> dict:
    with cluster.lock:
        if resource == "secrets":
            if (ns, name) not in cluster.secrets:
                raise not_found(resource, name)
            data = {k: "c2VjcmV0" for k in cluster.secrets[(ns, name)]}  # base64; values are not the point
            return {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": name, "namespace": ns},
                "type": "Opaque",
                "data": data,
            }
        store = cluster.pvcs if resource == "persistentvolumeclaims" else cluster.configmaps
        if (ns, name) not in store:
            raise not_found(resource, name)
        return store[(ns, name)]


def _jobs(cluster: Cluster, method: str, ns: str, name: str | None, query: dict, body: dict | None) -> dict:
    verb = {"POST": "create", "DELETE": "delete"}.get(method, "get" if name else "list")
    _check(cluster, verb, "jobs", ns, "batch")
    with cluster.lock:
        if ns not in cluster.namespaces:
            raise not_found("namespaces", ns)
        if method == "POST":
            name = body.get("metadata", {}).get("name", "")
            _validate_or_422(body, "Job", name)
            if (ns, name) in cluster.jobs:
                raise ApiError(
                    409, "AlreadyExists", f'jobs.batch "{name}" already exists', {"name": name, "group": "batch", "kind": "jobs"}
                )
            job = json.loads(json.dumps(body))
            uid = str(uuid.uuid4())
            job["metadata"].update(uid=uid, namespace=ns, creationTimestamp=now(), resourceVersion="1", generation=1)
            extra = {CONTROLLER_UID: uid, JOB_NAME: name, "controller-uid": uid, "job-name": name}
            job["spec"]["template"]["metadata"].setdefault("labels", {}).update(extra)
            job["spec"]["selector"] = {"matchLabels": {CONTROLLER_UID: uid}}
            job["status"] = {}
            cluster.jobs[(ns, name)] = job
            cluster.create_pod(ns, job)
            return _out(job)
        if name is None:
            items = [
                _out(j)
                for (n, _), j in sorted(cluster.jobs.items())
                if n == ns and _matches(j["metadata"].get("labels", {}), query.get("labelSelector"))
            ]
            return {"apiVersion": "batch/v1", "kind": "JobList", "metadata": {"resourceVersion": "1"}, "items": items}
        job = cluster.jobs.get((ns, name))
        if job is None:
            raise not_found("jobs.batch", name)
        if method == "GET":
            return _out(job)
        if body:
            _validate_or_422({"apiVersion": "batch/v1", "kind": "DeleteOptions", **body}, "DeleteOptions", name)
        policy = query.get("propagationPolicy") or (body or {}).get("propagationPolicy")
        del cluster.jobs[(ns, name)]
        if policy in ("Background", "Foreground"):  # the garbage collector removes the pods
            uid = job["metadata"]["uid"]
            for key, pod in list(cluster.pods.items()):
                if pod["metadata"]["labels"].get(CONTROLLER_UID) == uid:
                    del cluster.pods[key]
                    if (proc := cluster.procs.pop(key, None)) is not None:
                        _kill(proc)
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": {"name": name, "group": "batch", "kind": "jobs", "uid": job["metadata"]["uid"]},
        }


class ApiServer(ThreadingHTTPServer):
    """The stand-in on 127.0.0.1 (free port); `.url` is its base URL and `.cluster` its state."""

    daemon_threads = True

    def __init__(self, cluster: Cluster | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.cluster = cluster or Cluster()
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    def __enter__(self) -> "ApiServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cluster.stop()
        self.shutdown()
        self.server_close()
