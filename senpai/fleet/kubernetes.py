"""Kubernetes fleet: one batch/v1 Job per JobSpec, through the official client.

The Job shape (labels, volumes, security context, GPUs) is built by `senpai.fleet.k8s_job` and
described in docs/kubernetes.md. This module talks to the API server:

- **launch** POSTs the Job. The name is deterministic (the JobSpec name, with the instance in
  place of `senpai` for other instances: `k8s_job.job_name`), so HTTP 409 AlreadyExists means an
  earlier launch won: the existing Job is read back and returned (already exists = success).
- **get** reads the Job and its newest pod (label `batch.kubernetes.io/controller-uid=<job uid>`,
  so pods of an older, deleted Job of the same name are never mixed in) and maps them to a
  JobStatus (`k8s_job.job_status`).
- **logs** reads pods/log of that pod with `tailLines` (every started step of a verifier pod).
- **delete** uses propagationPolicy Background, so the Job's pods are garbage-collected too.
- **list** selects `app.kubernetes.io/instance=<instance>,app.kubernetes.io/managed-by=senpai-wrapper`.

API errors are translated at this boundary: 404 → NotFound (or None/no-op where the port says so),
429/5xx/connection errors → TransientError after a few tenacity retries, 401/403 → Forbidden (a
PermanentError) naming the verb and resource the ServiceAccount lacks, anything else → PermanentError.
"""

import json
import logging
import os
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TypeVar

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from senpai.config.harness import KubernetesFleetSettings
from senpai.errors import ConfigError, Forbidden, NotFound, PermanentError, SenpaiError, TransientError
from senpai.fleet.base import JobSpec, JobStatus
from senpai.fleet.k8s_job import (
    CONTROLLER_UID,
    build_job,
    check_pod,
    instance_selector,
    job_name,
    job_status,
    started_containers,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

RETRY_ATTEMPTS = 4
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
RBAC_DOC = "docs/kubernetes.md#rbac"


def api_client(settings: KubernetesFleetSettings) -> client.ApiClient:
    """An ApiClient for the cluster this process runs in (KUBERNETES_SERVICE_HOST set: the pod's
    ServiceAccount), else for `settings.kubeconfig_context` of ~/.kube/config ($KUBECONFIG).
    Raises ConfigError when neither can be loaded."""
    conf = client.Configuration()
    try:
        if os.environ.get("KUBERNETES_SERVICE_HOST"):
            config.load_incluster_config(client_configuration=conf)
        else:
            # $KUBECONFIG read now: the client reads it once, at import
            path = os.environ.get("KUBECONFIG")
            config.load_kube_config(config_file=path, context=settings.kubeconfig_context, client_configuration=conf)
    except (config.ConfigException, OSError) as e:
        raise ConfigError(f"fleet.backend kubernetes: cannot load the cluster config: {e}") from e
    return client.ApiClient(conf)


def _status_message(e: ApiException) -> str:
    """The `message` of the Status body the API server returned, else the HTTP reason."""
    try:
        return json.loads(e.body or "{}").get("message") or str(e.reason)
    except (ValueError, AttributeError):
        return str(e.reason)


def translate(e: BaseException, verb: str, resource: str, namespace: str) -> SenpaiError:
    """Map a client error for `verb resource` in `namespace` to senpai's error tree."""
    what = f"{verb} {resource} in namespace {namespace}"
    if not isinstance(e, ApiException):
        return TransientError(f"kubernetes: cannot {what}: {e}")
    message = _status_message(e)
    if e.status == 404:
        return NotFound(f"kubernetes: {what}: {message}")
    if e.status in (401, 403):
        return Forbidden(
            f"kubernetes: the ServiceAccount may not {what} (HTTP {e.status}: {message}); "
            f"grant verb {verb!r} on {resource!r} in its Role (see {RBAC_DOC})"
        )
    if e.status == 429 or e.status >= 500:
        return TransientError(f"kubernetes: {what}: HTTP {e.status}: {message}")
    return PermanentError(f"kubernetes: {what}: HTTP {e.status}: {message}")


def _is_transient(e: BaseException) -> bool:
    if isinstance(e, ApiException):
        return e.status == 429 or e.status >= 500
    return isinstance(e, (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError))


def call_api(verb: str, resource: str, namespace: str, fn: Callable[[], T], retry_wait: float = 0.5) -> T:
    """Run one API call, retrying transient failures (RETRY_ATTEMPTS tries, exponential from
    `retry_wait` seconds, capped at 8 s); raises the translated error (see `translate`).

    A 429/503 with Retry-After is first retried by urllib3 itself (it honours the header), so
    it reaches here as a connection-level error once those retries are spent.
    """
    retrying = Retrying(
        stop=stop_after_attempt(RETRY_ATTEMPTS),
        wait=wait_exponential(multiplier=retry_wait, max=8),
        retry=retry_if_exception(_is_transient),
        reraise=True,
    )
    try:
        return retrying(fn)
    except (ApiException, urllib3.exceptions.HTTPError, ConnectionError, TimeoutError) as e:
        raise translate(e, verb, resource, namespace) from e


class KubernetesFleet:
    """Fleet of batch/v1 Jobs in `settings.namespace`.

    `api` is the ApiClient to use (tests pass one pointed at a stand-in API server); None builds
    one with `api_client(settings)`. `hidden`: senpai's folders on the shared volume (its state dir,
    the tracker's dir) that the containers running a target's code get masked (`k8s_job.build_job`).
    `retry_wait` is the first retry delay, seconds (doubling, capped at 8 s). Raises ConfigError if
    `settings.pod` does not build a pod (`k8s_job.check_pod`). Safe to use from several threads:
    every call is one or two HTTP requests.
    """

    def __init__(
        self,
        settings: KubernetesFleetSettings,
        api: client.ApiClient | None = None,
        retry_wait: float = 0.5,
        hidden: Sequence[str] = (),
    ) -> None:
        check_pod(settings)  # a bad fleet.pod stops the wrapper at start, not each launch
        self.settings = settings
        self.hidden = tuple(hidden)  # senpai's folders the containers that run a target's code never see
        self.ns = settings.namespace
        api = api or api_client(settings)
        self.batch = client.BatchV1Api(api)
        self.core = client.CoreV1Api(api)
        self._retry_wait = retry_wait

    def _call(self, verb: str, resource: str, fn: Callable[[], T]) -> T:
        return call_api(verb, resource, self.ns, fn, self._retry_wait)

    # ----------------------------------------------------------------------- Fleet

    def launch(self, spec: JobSpec) -> JobStatus:
        """Create the Job for `spec`. Kubernetes: POST /apis/batch/v1/namespaces/{ns}/jobs.

        HTTP 409 AlreadyExists returns the existing Job's status unchanged. Raises PermanentError
        (403: the ServiceAccount lacks `create jobs`; 422: the API server rejected the Job) or
        TransientError.
        """
        body = build_job(spec, self.settings, self.hidden)
        try:
            job = self._call("create", "jobs", lambda: self.batch.create_namespaced_job(self.ns, body))
        except PermanentError as e:
            if not isinstance(e.__cause__, ApiException) or e.__cause__.status != 409:
                raise
            if (existing := self.get(spec.name)) is None:
                raise TransientError(f"kubernetes: job {spec.name} existed at create and was gone right after") from e
            return existing
        log.info("created job %s in %s", spec.name, self.ns)
        return job_status(job, None)

    def get(self, name: str) -> JobStatus | None:
        """The Job's status, or None if there is no Job `name`.

        Kubernetes: GET /apis/batch/v1/namespaces/{ns}/jobs/{name}, then GET /api/v1/namespaces/{ns}/pods
        ?labelSelector=batch.kubernetes.io/controller-uid=<uid>. Raises PermanentError/TransientError.
        """
        try:
            job = self._call("get", "jobs", lambda: self.batch.read_namespaced_job(job_name(name, self.settings), self.ns))
        except NotFound:
            return None
        return job_status(job, self._pod(job))

    def list(self) -> list[JobStatus]:
        """Jobs of this instance, sorted by name; two requests however many Jobs there are.

        Kubernetes: GET .../jobs and GET .../pods, both ?labelSelector=<instance>,<managed-by>
        (pods carry the Job template's labels); each Job is joined to its newest pod by controller-uid.
        Jobs being deleted are left out.
        """
        selector = instance_selector(self.settings)
        jobs = self._call("list", "jobs", lambda: self.batch.list_namespaced_job(self.ns, label_selector=selector))
        pods = self._call("list", "pods", lambda: self.core.list_namespaced_pod(self.ns, label_selector=selector))
        by_uid: dict[str, list[client.V1Pod]] = {}
        for pod in pods.items:
            by_uid.setdefault((pod.metadata.labels or {}).get(CONTROLLER_UID, ""), []).append(pod)
        statuses = [
            job_status(j, _newest(by_uid.get(j.metadata.uid, []))) for j in jobs.items if j.metadata.deletion_timestamp is None
        ]
        return sorted(statuses, key=lambda s: s.name)

    def logs(self, name: str, tail_lines: int = 50) -> str:
        """The last `tail_lines` lines of the job's pod log; "" while no container has started.

        A student's or verifier's pod log is each started step's log (`prepare`, `train`, `report`;
        `checkout`, `train-<side>`, `score`), each under a `--- <step> ---` line, so a failed step's
        output is the tail. Kubernetes:
        GET /api/v1/namespaces/{ns}/pods/{pod}/log?tailLines=N[&container=<step>]. Raises NotFound if
        there is no Job `name` or it has no pod (not created yet, or garbage-collected).
        """
        if tail_lines <= 0:
            return ""
        job = self._call("get", "jobs", lambda: self.batch.read_namespaced_job(job_name(name, self.settings), self.ns))
        pod = self._pod(job)
        if pod is None:
            raise NotFound(f"kubernetes: job {name} in namespace {self.ns} has no pod")
        if not (pod.spec and pod.spec.init_containers):
            return self._log(pod, None, tail_lines)
        text = ""
        for container in started_containers(pod):
            out = self._log(pod, container, tail_lines)
            text += f"--- {container} ---\n{out}" + ("" if out.endswith("\n") or not out else "\n")
        return "".join(text.splitlines(keepends=True)[-tail_lines:])

    def _log(self, pod: client.V1Pod, container: str | None, tail_lines: int) -> str:
        """The tail of one container's log (None: the pod's only container); "" if it is waiting to start."""
        extra = {"container": container} if container else {}
        try:
            return self._call(
                "get",
                "pods/log",
                lambda: self.core.read_namespaced_pod_log(pod.metadata.name, self.ns, tail_lines=tail_lines, **extra),
            )
        except PermanentError as e:
            waiting = isinstance(e.__cause__, ApiException) and e.__cause__.status == 400
            if waiting and (pod.status is None or pod.status.phase == "Pending"):
                return ""  # "container ... is waiting to start": no output yet
            raise

    def delete(self, name: str) -> None:
        """Delete the Job and (propagationPolicy Background) its pods; a missing Job is a no-op.

        Kubernetes: DELETE /apis/batch/v1/namespaces/{ns}/jobs/{name}.
        """
        body = client.V1DeleteOptions(propagation_policy="Background")
        try:
            self._call(
                "delete", "jobs", lambda: self.batch.delete_namespaced_job(job_name(name, self.settings), self.ns, body=body)
            )
        except NotFound:
            return
        log.info("deleted job %s in %s", name, self.ns)

    # ----------------------------------------------------------------------- internals

    def _pod(self, job: client.V1Job) -> client.V1Pod | None:
        """The Job's newest pod, or None."""
        selector = f"{CONTROLLER_UID}={job.metadata.uid}"
        pods = self._call("list", "pods", lambda: self.core.list_namespaced_pod(self.ns, label_selector=selector))
        return _newest(pods.items)


def _newest(pods: list[client.V1Pod]) -> client.V1Pod | None:
    """The most recently created pod (a Job with backoffLimit 0 normally has one), or None."""
    return max(pods, key=lambda p: p.metadata.creation_timestamp or _EPOCH, default=None)
