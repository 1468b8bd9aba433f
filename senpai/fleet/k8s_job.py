"""The batch/v1 Job senpai creates for a JobSpec, and the JobStatus read back from a Job and its pod.

Functions over the official client's models (no API calls; `build_job` reads the clock once, for
the job's deadline), so the shape can be validated against the Kubernetes OpenAPI schema without
a cluster. docs/kubernetes.md describes the shape.

Advisor Jobs run one container, `job`. A student Job runs `senpai job student` in three steps
(`--step <step> --work /work` appended): init container `prepare` (forge token: the runtime's work
on the branch, pushed; `/work` and the `train` volume at `/work/train`), init container `train` (the
target's code: no secret of any kind, only `/work/train`, its own HOME and /tmp, the shared PVC
read-only with senpai's state and tracker folders masked, the GPUs), then container `report`
(forge token: the runs taken in, the evidence posted). A verifier Job runs `senpai job verify` in four
steps (`--step <step> [--side <side>] --work /work` appended to the spec's command): init container
`checkout` (forge token; mounts the emptyDir `/work` and both side emptyDirs, `/work/baseline` and
`/work/candidate`, and the sealed holdout read-only, only to fingerprint it for baseline reuse:
nothing of a side's code runs there), init containers `train-baseline` then `train-candidate` (that side's code: no
secret of any kind, only its own side's volume, not `/work`, not the other side, its own HOME and
/tmp, the shared PVC read-only), then container `score` (`/work`, both sides, the sealed holdout
read-only). A verifier's GPUs (its student's) go to the two train
containers only; every container that gets GPUs also gets ENV_GPUS, their count.

The operator's additions (`fleet.pod`, `senpai.config.pod`: env, envFrom, volumes, labels,
scheduling, security contexts) are built into the client's models here; their env and volume
mounts reach every container (read-only in the train steps, an emptyDir there their own copy),
their envFrom only the containers that hold the token.
"""

import posixpath
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from kubernetes import client

from senpai.config.harness import ENV_CONFIG, KubernetesFleetSettings
from senpai.config.pod import JobPodSettings
from senpai.config.roles import Role
from senpai.errors import ConfigError, PermanentError
from senpai.fleet.base import ENV_DEADLINE, ENV_GPUS, ENV_TRAIN_GPUS, JobSpec, JobStatus, Phase

NAME = "app.kubernetes.io/name"
INSTANCE = "app.kubernetes.io/instance"
COMPONENT = "app.kubernetes.io/component"
MANAGED_BY = "app.kubernetes.io/managed-by"
ROLE = "senpai.dev/role"
PR = "senpai.dev/pr"
STUDENT = "senpai.dev/student"
JOB = "senpai.dev/job"  # the JobSpec name, when the Job's own name carries the instance
CONTROLLER_UID = "batch.kubernetes.io/controller-uid"  # set on pods by the Job controller (1.27+)
MANAGER = "senpai-wrapper"

CONTAINER = "job"  # the one container of advisor Jobs
SIDES = ("baseline", "candidate")
VERIFY_STEPS = ("checkout", "train-baseline", "train-candidate", "score")  # verifier Jobs: 3 init containers, then the main one
STUDENT_STEPS = ("prepare", "train", "report")  # student Jobs: 2 init containers, then the main one
TRAIN = "train"  # a student's train step's own volume, /work/train
HOLDOUT_VOLUME = "holdout"
WORK_DIR = "/work"
HOME_DIR = "/home/senpai"
TMP_DIR = "/tmp"
DEFAULT_CONFIG_PATH = "/etc/senpai/harness.yaml"  # where the chart mounts it; used if the spec names none
CONFIG_KEY = "harness.yaml"


def job_name(spec_name: str, settings: KubernetesFleetSettings) -> str:
    """The Kubernetes name of the Job for JobSpec name `spec_name`.

    For the default instance `senpai` it is the spec name itself. Another instance replaces the
    leading `senpai` with its own name (`team-a-student-pr12-1`), so two installs in one
    namespace never claim each other's Jobs. Raises PermanentError if that exceeds 63 characters.
    """
    if settings.instance == "senpai":
        return spec_name
    name = f"{settings.instance}-{spec_name.removeprefix('senpai-')}"
    if len(name) > 63:
        raise PermanentError(f"job name {name!r} is longer than 63 characters; use a shorter fleet.instance")
    return name


def instance_selector(settings: KubernetesFleetSettings) -> str:
    """Label selector of every Job this fleet manages."""
    return f"{INSTANCE}={settings.instance},{MANAGED_BY}={MANAGER}"


def labels(spec: JobSpec, settings: KubernetesFleetSettings) -> dict[str, str]:
    """Labels of the Job and its pod template."""
    out = {
        NAME: "senpai",
        INSTANCE: settings.instance,
        COMPONENT: spec.role,
        MANAGED_BY: MANAGER,
        ROLE: spec.role,
        JOB: spec.name,
    }
    if spec.pr is not None:
        out[PR] = str(spec.pr)
    if spec.student is not None:
        out[STUDENT] = spec.student
    return out


def _env(spec: JobSpec, settings: KubernetesFleetSettings, deadline: int, secrets: bool, gpus: int) -> list[client.V1EnvVar]:
    """HOME/TMPDIR and the thread counts (`JobSpec.thread_env`), the spec's env by value over them,
    then the job's deadline (epoch seconds), if the container gets `gpus` > 0 ENV_GPUS, and in a
    verifier's containers ENV_TRAIN_GPUS (its train steps' GPUs, part of the baseline key); then
    the operator's `fleet.pod.env`; then, if `secrets`, each secret_env entry by reference (the
    verifier's train steps get none)."""
    env = {"HOME": HOME_DIR, "TMPDIR": TMP_DIR, **spec.thread_env(), **spec.env, ENV_DEADLINE: str(deadline)}
    env |= {ENV_GPUS: str(gpus)} if gpus else {}
    env |= {ENV_TRAIN_GPUS: str(spec.gpus)} if spec.role != Role.ADVISOR else {}
    out = [client.V1EnvVar(name=k, value=v) for k, v in env.items()]
    out += [client.V1EnvVar.model_validate(e) for e in settings.pod.env]  # no credential: senpai.config.pod
    for s in settings.secret_env if secrets else ():
        ref = client.V1SecretKeySelector(name=s.secret, key=s.key, optional=s.optional)
        out.append(client.V1EnvVar(name=s.env, value_from=client.V1EnvVarSource(secret_key_ref=ref)))
    return out


def _resources(spec: JobSpec, settings: KubernetesFleetSettings, gpus: int) -> client.V1ResourceRequirements:
    """The role's resources, plus `gpus` of the GPU resource (requests and limits) if > 0."""
    res = settings.resources_for(spec.role)
    requests, limits = dict(res.requests), dict(res.limits)
    if gpus > 0:
        requests[settings.gpu_resource] = limits[settings.gpu_resource] = str(gpus)
    return client.V1ResourceRequirements(requests=requests or None, limits=limits or None)


def _volumes(spec: JobSpec, settings: KubernetesFleetSettings) -> tuple[list[client.V1Volume], list[client.V1VolumeMount]]:
    """The volumes of every Job and the mounts of each of its containers (the holdout is separate)."""
    config_path = spec.env.get(ENV_CONFIG, DEFAULT_CONFIG_PATH)
    config_dir, config_file = posixpath.split(config_path)
    empty = client.V1EmptyDirVolumeSource()
    # the emptyDirs under /work that a step running the target's code mounts alone: a verifier's per side, a student's one
    sides = SIDES if spec.role == Role.VERIFIER else (TRAIN,) if spec.role == Role.STUDENT else ()
    volumes = [
        client.V1Volume(name="work", empty_dir=empty),
        *(client.V1Volume(name=f"side-{side}", empty_dir=empty) for side in sides),
        client.V1Volume(name="home", empty_dir=empty),
        client.V1Volume(name="tmp", empty_dir=empty),
        client.V1Volume(name="data", persistent_volume_claim=client.V1PersistentVolumeClaimVolumeSource(claim_name=settings.pvc)),
        client.V1Volume(
            name="config",
            config_map=client.V1ConfigMapVolumeSource(
                name=settings.config_map, items=[client.V1KeyToPath(key=CONFIG_KEY, path=config_file or CONFIG_KEY)]
            ),
        ),
    ]
    mounts = [
        client.V1VolumeMount(name="work", mount_path=WORK_DIR),
        *(client.V1VolumeMount(name=f"side-{side}", mount_path=f"{WORK_DIR}/{side}") for side in sides),
        client.V1VolumeMount(name="home", mount_path=HOME_DIR),
        client.V1VolumeMount(name="tmp", mount_path=TMP_DIR),
        client.V1VolumeMount(name="data", mount_path=settings.mount_path),
        client.V1VolumeMount(name="config", mount_path=config_dir or "/", read_only=True),
    ]
    volumes += [client.V1Volume.model_validate(v) for v in settings.pod.volumes]
    mounts += [client.V1VolumeMount.model_validate(m) for m in settings.pod.volume_mounts]
    return volumes, mounts


def check_pod(settings: KubernetesFleetSettings) -> None:
    """Raise ConfigError if `fleet.pod` does not build (a field the client's models refuse) or its
    volumes or mounts take a name or path of senpai's own (work, home, tmp, data, config, holdout,
    `side-*`, `train-*`; /work, /data, ...)."""
    spec = JobSpec(name="senpai-verifier-pr1-1", role=Role.VERIFIER, command=["senpai"], wall_seconds=60)
    try:
        _volumes(spec, settings)
        _pod_security(settings)
        [client.V1EnvVar.model_validate(e) for e in settings.pod.env]
        [client.V1EnvFromSource.model_validate(e) for e in settings.pod.env_from]
        client.V1Affinity.model_validate(settings.pod.affinity or {})
    except ValueError as e:  # pydantic's ValidationError
        raise ConfigError(f"fleet.pod does not build a Kubernetes pod: {e}") from None
    volumes, mounts = _volumes(spec, settings.model_copy(update={"pod": JobPodSettings()}))  # senpai's own alone
    names = {v.name for v in volumes} | {HOLDOUT_VOLUME}
    paths = {m.mount_path.rstrip("/") for m in mounts}
    if settings.holdout is not None:
        paths.add(settings.holdout.mount_path.rstrip("/"))
    for v in settings.pod.volumes:
        if v["name"] in names or str(v["name"]).startswith(("side-", "train-")):
            raise ConfigError(f"fleet.pod.volumes: the name {v['name']!r} is senpai's own; pick another")
    for m in settings.pod.volume_mounts:
        if str(m.get("mountPath", "")).rstrip("/") in paths:
            raise ConfigError(f"fleet.pod.volume_mounts: {m.get('mountPath')} is a mount of senpai's own; pick another path")


def _pod_security(settings: KubernetesFleetSettings) -> tuple[client.V1PodSecurityContext, client.V1SecurityContext]:
    """The pod's and every container's security context (`fleet.pod`; senpai.config.pod keeps them safe)."""
    pod = settings.pod
    return (
        client.V1PodSecurityContext.model_validate(pod.pod_security_context),
        client.V1SecurityContext.model_validate(pod.security_context),
    )


def _holdout(
    settings: KubernetesFleetSettings, mounts: list[client.V1VolumeMount]
) -> tuple[client.V1Volume, client.V1VolumeMount]:
    """The sealed holdout's volume (a Secret, files mode 0440, or a read-only PVC) and its read-only
    mount. Raises PermanentError if its mount_path is another mount's, or is, holds or lies under
    /work (which the train step writes)."""
    hold = settings.holdout
    assert hold is not None
    path, work = hold.mount_path.rstrip("/") + "/", WORK_DIR + "/"
    if path.startswith(work) or work.startswith(path) or path in {m.mount_path.rstrip("/") + "/" for m in mounts}:
        raise PermanentError(f"fleet.holdout.mount_path {hold.mount_path} collides with a job mount or with {WORK_DIR}")
    if hold.secret is not None:
        source = {"secret": client.V1SecretVolumeSource(secret_name=hold.secret, default_mode=0o440)}
    else:
        claim = client.V1PersistentVolumeClaimVolumeSource(claim_name=hold.claim, read_only=True)
        source = {"persistent_volume_claim": claim}
    mount = client.V1VolumeMount(name=HOLDOUT_VOLUME, mount_path=hold.mount_path, read_only=True, sub_path=hold.sub_path)
    return client.V1Volume(name=HOLDOUT_VOLUME, **source), mount


TRAIN_OWN = {"home": "train-home", "tmp": "train-tmp"}  # emptyDirs of the verifier's train step alone


def _train_own(settings: KubernetesFleetSettings) -> dict[str, str]:
    """TRAIN_OWN, plus each emptyDir of `fleet.pod.volumes` -> `train-<name>`: its train steps' own copy."""
    return TRAIN_OWN | {v["name"]: f"train-{v['name']}" for v in settings.pod.volumes if "emptyDir" in v}


def _train_mounts(mounts: list[client.V1VolumeMount], side: str, own: dict[str, str]) -> list[client.V1VolumeMount]:
    """The verifier's `train-<side>` step shares only its side's volume (`/work/<side>`) with the
    other steps: not `/work` (plan, the base clone) nor the other side (its artifacts and
    train.json). Its HOME, /tmp and the operator's emptyDirs are its own (`own`: the candidate's
    code cannot leave a ~/.gitconfig or a temp file for the steps that hold the token), and every
    other volume is read-only (the shared PVC, the operator's: datasets; no writes into W&B,
    state, or what the score step reads)."""
    out = []
    for m in mounts:
        if m.name == "work" or (m.name.startswith("side-") and m.name != f"side-{side}"):
            continue
        if m.name in own:
            m = m.model_copy(update={"name": own[m.name]})
        elif not m.name.startswith("side-") and m.name != "config":
            m = m.model_copy(update={"read_only": True})
        out.append(m)
    return out


def _scheduling(spec: JobSpec, settings: KubernetesFleetSettings) -> dict:
    """nodeSelector and tolerations: only for students (and verifiers, as their student) that ask for GPUs."""
    if spec.role == Role.ADVISOR or spec.gpus == 0:
        return {}
    tolerations = [
        client.V1Toleration(
            key=t.key, operator=t.operator, value=t.value, effect=t.effect, toleration_seconds=t.toleration_seconds
        )
        for t in settings.tolerations
    ]
    return {"node_selector": dict(settings.node_selector) or None, "tolerations": tolerations or None}


def _container(
    name: str,
    command: list[str],
    env: list[client.V1EnvVar],
    mounts: list[client.V1VolumeMount],
    spec: JobSpec,
    settings: KubernetesFleetSettings,
    *,
    gpus: int = 0,
    working_dir: str = WORK_DIR,
    env_from: bool = True,
) -> client.V1Container:
    """One container; `env_from`: with the operator's `fleet.pod.env_from` (the containers that hold the token)."""
    return client.V1Container(
        name=name,
        image=settings.images[spec.role],
        image_pull_policy=settings.image_pull_policy,
        command=command,
        env=env,
        env_from=([client.V1EnvFromSource.model_validate(e) for e in settings.pod.env_from] or None) if env_from else None,
        working_dir=working_dir,
        resources=_resources(spec, settings, gpus),
        volume_mounts=mounts,
        security_context=_pod_security(settings)[1],
    )


def _containers(spec: JobSpec, settings: KubernetesFleetSettings, hidden: Sequence[str]) -> tuple[list, list, list]:
    """(init containers, containers, volumes). An advisor runs its spec's command in one container.
    A student runs it once per step of STUDENT_STEPS with `--step <step> --work /work`; a verifier
    once per step of VERIFY_STEPS (`--step train --side <side>` for `train-<side>`); `checkout`
    (to fingerprint it) and `score` mount the holdout. The steps that run the target's code (a
    student's `train`, a verifier's `train-<side>`) get no secret, no holdout, their own volume only,
    every `hidden` path masked (`_train_step`), and the GPUs."""
    volumes, mounts = _volumes(spec, settings)
    deadline = int(time.time()) + spec.wall_seconds  # activeDeadlineSeconds counts from now: the Job is created at once
    with_secrets = _env(spec, settings, deadline, True, 0)  # the GPUs are the train steps' alone
    if spec.role == Role.ADVISOR:
        return [], [_container(CONTAINER, list(spec.command), with_secrets, mounts, spec, settings)], volumes
    bare, own = _env(spec, settings, deadline, False, spec.gpus), _train_own(settings)
    empty = {v.name: v.empty_dir for v in volumes if v.empty_dir is not None}  # home, tmp and the operator's emptyDirs
    volumes += [client.V1Volume(name=twin, empty_dir=empty[name]) for name, twin in own.items()]
    masks = _masks(hidden, mounts)
    volumes += [client.V1Volume(name=m.name, empty_dir=client.V1EmptyDirVolumeSource()) for m in masks]

    def step(name: str, args: list[str], env, step_mounts, **kw) -> client.V1Container:
        return _container(name, [*spec.command, *args, "--work", WORK_DIR], env, step_mounts, spec, settings, **kw)

    def train(name: str, side: str, args: list[str]) -> client.V1Container:
        train_mounts = [*_train_mounts(mounts, side, own), *masks]
        return step(name, args, bare, train_mounts, gpus=spec.gpus, working_dir=f"{WORK_DIR}/{side}", env_from=False)

    if spec.role == Role.STUDENT:
        init = [step("prepare", ["--step", "prepare"], with_secrets, mounts), train("train", TRAIN, ["--step", "train"])]
        return init, [step("report", ["--step", "report"], with_secrets, mounts)], volumes
    score_mounts = list(mounts)
    if settings.holdout is not None:
        volume, mount = _holdout(settings, mounts)
        volumes.append(volume)
        score_mounts.append(mount)
    init = [step("checkout", ["--step", "checkout"], with_secrets, score_mounts)]
    for name in VERIFY_STEPS[1:-1]:  # train-baseline, train-candidate
        side = name.removeprefix("train-")
        init.append(train(name, side, ["--step", "train", "--side", side]))
    return init, [step("score", ["--step", "score"], with_secrets, score_mounts)], volumes


def _masks(hidden: Sequence[str], mounts: list[client.V1VolumeMount]) -> list[client.V1VolumeMount]:
    """An empty, read-only mount over each of `hidden` (senpai's state dir, the tracker's dir) that
    lies inside a volume the train steps mount (the shared PVC), so the target's code finds nothing
    of senpai's there: `hide-<i>`, each its own emptyDir."""
    inside = [h.rstrip("/") for h in hidden if any(h.rstrip("/").startswith(m.mount_path.rstrip("/") + "/") for m in mounts)]
    return [client.V1VolumeMount(name=f"hide-{i}", mount_path=h, read_only=True) for i, h in enumerate(sorted(set(inside)))]


def build_job(spec: JobSpec, settings: KubernetesFleetSettings, hidden: Sequence[str] = ()) -> client.V1Job:
    """The batch/v1 Job that runs `spec` (see the module docstring); `hidden`: paths of senpai's the
    target's code must not see, masked in its containers (`_masks`). Raises PermanentError if its
    name is too long or the holdout's mount_path overlaps another mount, ConfigError if `fleet.pod`
    does not build (`check_pod`)."""
    check_pod(settings)
    init, containers, volumes = _containers(spec, settings, hidden)
    extra = settings.pod
    pod = client.V1PodSpec(
        restart_policy="Never",
        service_account_name=settings.service_account,
        automount_service_account_token=False,  # jobs talk to the forge and W&B, never to the API server
        security_context=_pod_security(settings)[0],
        init_containers=init or None,
        containers=containers,
        volumes=volumes,
        image_pull_secrets=[client.V1LocalObjectReference(name=n) for n in extra.image_pull_secrets] or None,
        priority_class_name=extra.priority_class_name,
        runtime_class_name=extra.runtime_class_name,
        affinity=client.V1Affinity.model_validate(extra.affinity) if extra.affinity else None,
        **_scheduling(spec, settings),
    )
    meta_labels = labels(spec, settings)
    pod_meta = client.V1ObjectMeta(labels={**extra.labels, **meta_labels}, annotations=dict(extra.annotations) or None)
    return client.V1Job(
        api_version="batch/v1",
        kind="Job",
        metadata=client.V1ObjectMeta(name=job_name(spec.name, settings), namespace=settings.namespace, labels=meta_labels),
        spec=client.V1JobSpec(
            active_deadline_seconds=spec.wall_seconds,
            backoff_limit=0,
            ttl_seconds_after_finished=settings.ttl_seconds_after_finished,
            template=client.V1PodTemplateSpec(metadata=pod_meta, spec=pod),
        ),
    )


# --------------------------------------------------------------------------- status


def _utc(t: datetime | None) -> datetime | None:
    if t is None:
        return None
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def _condition(job: client.V1Job, *types: str) -> client.V1JobCondition | None:
    for c in (job.status and job.status.conditions) or []:
        if c.type in types and c.status == "True":
            return c
    return None


def _states(pod: client.V1Pod | None) -> list[client.V1ContainerState]:
    """The states of the pod's init containers in order, then of its main container (the first in spec)."""
    if pod is None or pod.status is None:
        return []
    main = pod.spec.containers[0].name if pod.spec and pod.spec.containers else CONTAINER
    init = [s.state for s in pod.status.init_container_statuses or [] if s.state is not None]
    return init + [s.state for s in pod.status.container_statuses or [] if s.name == main and s.state is not None]


def _container_state(states: list[client.V1ContainerState]) -> client.V1ContainerState | None:
    """The state that tells where the pod is: the first container that has not completed with exit
    0 (an init container waiting, running or failed), else the last (the main container)."""
    for state in states:
        if state.terminated is None or state.terminated.exit_code != 0:
            return state
    return states[-1] if states else None


def _first_start(states: list[client.V1ContainerState]) -> datetime | None:
    """When the pod's first container started (a verifier's `checkout`; else the one container)."""
    first = states[0] if states else None
    return first and ((first.terminated and first.terminated.started_at) or (first.running and first.running.started_at))


def started_containers(pod: client.V1Pod) -> list[str]:
    """Names of the pod's containers that have started (running or terminated), init containers first."""
    status = pod.status
    every = [*((status and status.init_container_statuses) or []), *((status and status.container_statuses) or [])]
    return [s.name for s in every if s.state and (s.state.running or s.state.terminated)]


def _unschedulable(pod: client.V1Pod | None) -> str | None:
    """ "Unschedulable" while the scheduler finds no node for the pod (no GPU free, selector, taints)."""
    for c in (pod and pod.status and pod.status.conditions) or []:
        if c.type == "PodScheduled" and c.status == "False" and c.reason:
            return c.reason
    return None


def job_status(job: client.V1Job, pod: client.V1Pod | None) -> JobStatus:
    """Map a Job and its pod (None if unknown) to a JobStatus.

    phase: `succeeded` (condition Complete/SuccessCriteriaMet), `failed` (Failed/FailureTarget),
    `running` (the container or pod is running), else `pending`.
    reason, first that applies: the container's OOMKilled; the Job condition's DeadlineExceeded;
    the container's terminated reason (Error, ...); the Job condition's reason
    (BackoffLimitExceeded, ...); while pending, the container's waiting reason (ImagePullBackOff,
    CreateContainerConfigError, ...) or the pod's PodScheduled reason (Unschedulable).
    "The container" is the pod's one container or, in a verifier, the first step that has not
    completed with exit 0 (a failed `train` gives its own exit code and reason). Times are UTC:
    the first container's start and that container's finish, else the Job's
    startTime/completionTime or the failure condition's transition time.
    """
    meta = job.metadata
    lab = meta.labels or {}
    done_ok = _condition(job, "Complete", "SuccessCriteriaMet")
    done_bad = _condition(job, "Failed", "FailureTarget")
    states = _states(pod)
    state = _container_state(states)
    term = state.terminated if state else None
    running = state.running if state else None
    waiting = state.waiting if state else None
    phase: Phase
    if done_ok:
        phase = "succeeded"
    elif done_bad:
        phase = "failed"
    elif running or (pod and pod.status and pod.status.phase == "Running"):
        phase = "running"
    else:
        phase = "pending"
    reason = None
    if term and term.reason == "OOMKilled":
        reason = "OOMKilled"
    elif done_bad and done_bad.reason == "DeadlineExceeded":
        reason = "DeadlineExceeded"
    elif phase == "failed":
        reason = (term and term.reason) or (done_bad and done_bad.reason) or "Failed"
    elif phase == "pending" and waiting and waiting.reason not in (None, "ContainerCreating", "PodInitializing"):
        reason = waiting.reason
    elif phase == "pending":
        reason = _unschedulable(pod)
    started = _first_start(states) or (job.status and job.status.start_time)
    finished = None
    if phase in ("succeeded", "failed"):
        finished = (term and term.finished_at) or (job.status and job.status.completion_time)
        finished = finished or (done_ok or done_bad).last_transition_time
    return JobStatus(
        name=lab.get(JOB, meta.name),
        role=lab.get(ROLE, Role.STUDENT),
        pr=int(lab[PR]) if PR in lab else None,
        student=lab.get(STUDENT),
        phase=phase,
        exit_code=term.exit_code if term else None,
        reason=reason,
        started_at=_utc(started),
        finished_at=_utc(finished),
        deadline_at=_deadline(job),
    )


def _deadline(job: client.V1Job) -> datetime | None:
    """When Kubernetes ends the Job: status.startTime + spec.activeDeadlineSeconds (None before it starts)."""
    start, wall = job.status and job.status.start_time, job.spec and job.spec.active_deadline_seconds
    return _utc(start + timedelta(seconds=wall)) if start and wall else None
