"""KubernetesFleet: the Job it builds, and its behaviour through the official client.

There is no Kubernetes cluster where these tests run. The Job shape is validated with
kubernetes-validate (strict, 1.30 and 1.37), and the client talks HTTP to the API-server stand-in
in tests/k8s_apiserver.py, which validates every body it receives the same way. The live-cluster
test is `make kind-e2e`. The Fleet contract (tests/contract/test_fleet_contract.py) also runs
against the stand-in.
"""

import json
import time
from typing import TYPE_CHECKING

import httpx
import pytest
from forge_fixtures import commit_and_push
from k8s_fixtures import NAMESPACE, SECRET_VALUE, as_dict, build_job, k8s_fleet, k8s_settings, seed

from senpai.errors import NotFound, PermanentError, TransientError
from senpai.fleet.base import JobSpec
from senpai.ledger import transitions
from senpai.ledger.blocks import BaselineRef, BudgetRef, Hypothesis, MetricRef
from senpai.ledger.experiment import read_experiment
from senpai.wrapper.actions import FailureEvidence
from senpai.wrapper.dispatch import Dispatcher

if TYPE_CHECKING:
    from k8s_apiserver import ApiServer

CONFIG = "/etc/senpai/harness.yaml"


def spec(role: str = "student", gpus: int = 0, name: str | None = None, **kw) -> JobSpec:
    pr = None if role == "advisor" else 7
    return JobSpec(
        name=name or f"senpai-{role}-pr7-1",
        role=role,
        pr=pr,
        student="ada" if role == "student" else None,
        command=["/opt/senpai/bin/python", "-m", "senpai", "job", role],
        env={"SENPAI_CONFIG": CONFIG, "SENPAI_EVENTS": '{"events": []}'},
        wall_seconds=900,
        gpus=gpus,
        **kw,
    )


def posted_jobs(server: "ApiServer") -> list[dict]:
    return [body for method, path, body in server.cluster.requests if method == "POST" and path.endswith("/jobs")]


# --------------------------------------------------------------------------- Job shape


@pytest.mark.parametrize("role, gpus", [("advisor", 0), ("student", 0), ("student", 2), ("verifier", 0), ("verifier", 1)])
@pytest.mark.parametrize("version", ["1.30", "1.37"])
def test_every_job_is_valid_for_kubernetes(role, gpus, version):
    import kubernetes_validate  # the kubernetes client (seconds): when run, not when the suite is collected

    job = as_dict(build_job(spec(role, gpus), k8s_settings()))
    assert kubernetes_validate.validate(job, version, strict=True) == version


def test_gpu_student_gets_gpus_node_selector_and_tolerations():
    pod = as_dict(build_job(spec("student", gpus=2), k8s_settings()))["spec"]["template"]["spec"]
    (train,) = [c for c in pod["initContainers"] if c["name"] == "train"]  # the GPUs are the train step's alone
    res = train["resources"]
    assert res["requests"] == {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "2"}
    assert res["limits"] == {"memory": "16Gi", "nvidia.com/gpu": "2"}
    assert {e["name"]: e.get("value") for e in train["env"]}["SENPAI_GPUS"] == "2"  # no CUDA_VISIBLE_DEVICES here
    for c in [pod["initContainers"][0], *pod["containers"]]:  # prepare and report hold the token, not the GPUs
        assert "nvidia.com/gpu" not in c["resources"]["requests"]
        assert {e["name"]: e.get("value") for e in c["env"]}["SENPAI_TRAIN_GPUS"] == "2"  # report counts the GPU seconds
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


@pytest.mark.parametrize("role", ["advisor", "student", "verifier"])
def test_every_container_gets_the_jobs_thread_counts_unless_its_env_sets_them(role):
    threads = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
    for job_spec, expected in ((spec(role, cpus=4), ["4", "4", "4"]), (spec(role), ["1", "1", "1"])):
        pod = as_dict(build_job(job_spec, k8s_settings()))["spec"]["template"]["spec"]
        for c in [*pod.get("initContainers", []), *pod["containers"]]:
            env = {e["name"]: e.get("value") for e in c["env"]}
            assert [env[t] for t in threads] == expected, c["name"]
    own = spec(role, cpus=4).model_copy(update={"env": {"SENPAI_CONFIG": CONFIG, "OMP_NUM_THREADS": "2"}})
    container = as_dict(build_job(own, k8s_settings()))["spec"]["template"]["spec"]["containers"][0]
    env = [(e["name"], e.get("value")) for e in container["env"]]
    assert [v for k, v in env if k in threads] == ["2", "4", "4"]  # one entry each: Kubernetes keeps the last of a name


def test_tolerations_take_the_kubernetes_shape():
    toleration = {"key": "gpu", "operator": "Equal", "value": "a100", "effect": "NoExecute", "tolerationSeconds": 60}
    pod = as_dict(build_job(spec("student", 1), k8s_settings(tolerations=[toleration])))["spec"]["template"]["spec"]
    assert pod["tolerations"] == [toleration]
    with pytest.raises(ValueError, match="tolerationSecond"):
        k8s_settings(tolerations=[{"key": "gpu", "tolerationSecond": 60}])


@pytest.mark.parametrize("role, gpus", [("advisor", 0), ("verifier", 0), ("student", 0)])
def test_cpu_jobs_get_no_gpus_and_no_gpu_scheduling(role, gpus):
    pod = as_dict(build_job(spec(role, gpus), k8s_settings(gpu_resource="amd.com/gpu")))["spec"]["template"]["spec"]
    res = pod["containers"][0]["resources"]
    assert "amd.com/gpu" not in res.get("requests", {}) and "amd.com/gpu" not in res.get("limits", {})
    assert "nodeSelector" not in pod and "tolerations" not in pod
    if role == "advisor":  # roles without their own resources get the defaults
        assert res == {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "4Gi"}}


def test_job_shape():
    job = as_dict(build_job(spec("student", 1), k8s_settings(ttl_seconds_after_finished=600, instance="team-a")))
    labels = {
        "app.kubernetes.io/name": "senpai",
        "app.kubernetes.io/instance": "team-a",
        "app.kubernetes.io/component": "student",
        "app.kubernetes.io/managed-by": "senpai-wrapper",
        "senpai.dev/role": "student",
        "senpai.dev/pr": "7",
        "senpai.dev/student": "ada",
        "senpai.dev/job": "senpai-student-pr7-1",
    }
    assert job["metadata"]["name"] == "team-a-student-pr7-1"  # another instance: its name, not senpai's
    assert job["metadata"]["labels"] == labels == job["spec"]["template"]["metadata"]["labels"]
    assert (job["spec"]["activeDeadlineSeconds"], job["spec"]["backoffLimit"], job["spec"]["ttlSecondsAfterFinished"]) == (
        900,
        0,
        600,
    )
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never" and pod["serviceAccountName"] == "senpai-job"
    assert [c["name"] for c in pod["initContainers"]] == ["prepare", "train"]
    (c,) = pod["containers"]
    assert c["name"] == "report" and c["image"] == "ghcr.io/senpai/student:0.1.0"
    command = ["/opt/senpai/bin/python", "-m", "senpai", "job", "student"]
    assert c["command"] == [*command, "--step", "report", "--work", "/work"]
    assert pod["initContainers"][1]["command"] == [*command, "--step", "train", "--work", "/work"]
    assert c["workingDir"] == "/work" and pod["initContainers"][1]["workingDir"] == "/work/train"
    assert c["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,  # no uid: the image's USER, or the one the platform assigns (OpenShift)
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert pod["securityContext"] == {"runAsNonRoot": True, "fsGroup": 10001, "seccompProfile": {"type": "RuntimeDefault"}}
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    assert mounts["data"]["mountPath"] == "/data" and mounts["work"]["mountPath"] == "/work"
    assert mounts["config"] == {"name": "config", "mountPath": "/etc/senpai", "readOnly": True}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["data"]["persistentVolumeClaim"] == {"claimName": "senpai-data"}
    assert volumes["config"]["configMap"] == {"name": "senpai-config", "items": [{"key": "harness.yaml", "path": "harness.yaml"}]}
    assert all("emptyDir" in volumes[n] for n in ("work", "home", "tmp"))
    env = {e["name"]: e for e in c["env"]}
    assert env["SENPAI_CONFIG"]["value"] == CONFIG and env["HOME"]["value"] == "/home/senpai" and env["TMPDIR"]["value"] == "/tmp"


def test_secrets_are_passed_by_reference_only(apiserver):
    fleet = k8s_fleet(apiserver)
    fleet.launch(spec("student", 1))
    (body,) = posted_jobs(apiserver)
    assert SECRET_VALUE not in json.dumps(body)
    env = {e["name"]: e for e in body["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["GITHUB_TOKEN"] == {
        "name": "GITHUB_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "senpai-secrets", "key": "github-token", "optional": False}},
    }
    assert env["WANDB_API_KEY"]["valueFrom"]["secretKeyRef"]["optional"] is True


# --------------------------------------------------------------------------- through the client


@pytest.fixture
def scripted() -> "ApiServer":
    """A stand-in whose pods stay Pending until the test ends them with Cluster.finish."""
    from k8s_apiserver import ApiServer, Cluster

    with ApiServer(Cluster(run_pods=False)) as server:
        yield seed(server)


def test_create_get_logs_delete(scripted):
    fleet = k8s_fleet(scripted)
    status = fleet.launch(spec("verifier"))
    assert (status.name, status.role, status.pr, status.phase) == ("senpai-verifier-pr7-1", "verifier", 7, "pending")
    assert fleet.logs(status.name) == ""  # the container is waiting to start
    scripted.cluster.finish(NAMESPACE, status.name, 0, log="".join(f"line {i}\n" for i in range(10)))
    done = fleet.get(status.name)
    assert (done.phase, done.exit_code, done.reason) == ("succeeded", 0, None)
    assert done.started_at is not None and done.finished_at is not None
    assert fleet.logs(status.name, tail_lines=3) == "line 7\nline 8\nline 9\n"
    assert [s.name for s in fleet.list()] == [status.name]
    fleet.delete(status.name)
    assert fleet.get(status.name) is None and fleet.list() == []
    assert not scripted.cluster.pods  # propagationPolicy Background: the pod goes too
    with pytest.raises(NotFound):
        fleet.logs(status.name)
    fleet.delete(status.name)  # missing: no-op


def test_already_exists_returns_the_existing_job(scripted):
    fleet = k8s_fleet(scripted)
    first = fleet.launch(spec("student"))
    scripted.cluster.finish(NAMESPACE, first.name, 0)
    again = fleet.launch(spec("student"))
    assert again.phase == "succeeded"
    assert len(posted_jobs(scripted)) == 2 and len(scripted.cluster.jobs) == 1 and len(scripted.cluster.pods) == 1


@pytest.mark.parametrize(
    "exit_code, reason, deadline, expected",
    [
        (137, "OOMKilled", False, "OOMKilled"),
        (137, "Error", True, "DeadlineExceeded"),
        (3, None, False, "Error"),
    ],
)
def test_failure_reasons(scripted, exit_code, reason, deadline, expected):
    fleet = k8s_fleet(scripted)
    name = fleet.launch(spec("student", 1)).name
    scripted.cluster.finish(NAMESPACE, name, exit_code, reason, log="epoch 1\nKilled\n", deadline=deadline)
    status = fleet.get(name)
    assert (status.phase, status.exit_code, status.reason) == ("failed", exit_code, expected)
    assert fleet.list()[0].reason == expected
    assert fleet.logs(name, tail_lines=1) == "Killed\n"


def test_oom_reason_and_log_tail_reach_the_failure_evidence(scripted, forge_repo, tmp_path):
    forge, _ = forge_repo
    base = forge.branch_sha("advisor")
    hypothesis = Hypothesis(
        id="h-oom",
        hypothesis="wider",
        rationale="test",
        plan="train",
        params={"width": 4096},
        metric=MetricRef(name="val_accuracy", direction="maximize"),
        baseline=BaselineRef(commit=base, run_id=None, value=None),
        budget=BudgetRef(wall_seconds=120, attempts=2),
        stop_condition="2 attempts",
        student="ada",
    )
    commit_and_push(forge, tmp_path / "seed", "senpai/ada/h-oom", {"notes.md": "plan\n"}, start="advisor")
    pr = transitions.open_experiment(forge, hypothesis, "senpai/ada/h-oom", "advisor", "wider")
    fleet = k8s_fleet(scripted)
    name = fleet.launch(spec("student", 1, name=f"senpai-student-pr{pr.number}-1")).name
    scripted.cluster.finish(NAMESPACE, name, 137, "OOMKilled", log="loading data\nepoch 1\n", container="train")
    exp = read_experiment(forge.get_pull(pr.number), forge.list_comments(pr.number), forge.login)
    Dispatcher(forge, fleet, CONFIG, {"ada": 1}).apply(FailureEvidence(pr.number, 1, name, to_review=False), {pr.number: exp})
    (ev,) = read_experiment(forge.get_pull(pr.number), forge.list_comments(pr.number), forge.login).evidence
    assert ev.outcome == "failed" and ev.failure == f"job {name} ended without evidence: OOMKilled, exit 137"
    assert ev.log_tail == "--- prepare ---\n--- train ---\nloading data\nepoch 1\n"  # the train step's, the last


def test_two_instances_share_a_namespace(scripted):
    ours, theirs = k8s_fleet(scripted), k8s_fleet(scripted, instance="team-b")
    ours.launch(spec("advisor", name="senpai-advisor-abc-1"))
    theirs.launch(spec("advisor", name="senpai-advisor-abc-1"))  # the same JobSpec name: no 409
    assert sorted(name for _, name in scripted.cluster.jobs) == ["senpai-advisor-abc-1", "team-b-advisor-abc-1"]
    scripted.cluster.finish(NAMESPACE, "team-b-advisor-abc-1", 1)
    assert [(s.name, s.phase) for s in ours.list()] == [("senpai-advisor-abc-1", "pending")]
    assert [(s.name, s.phase) for s in theirs.list()] == [("senpai-advisor-abc-1", "failed")]
    assert theirs.get("senpai-advisor-abc-1").phase == "failed" and ours.get("senpai-advisor-abc-1").phase == "pending"
    theirs.delete("senpai-advisor-abc-1")
    assert ours.get("senpai-advisor-abc-1") is not None and theirs.get("senpai-advisor-abc-1") is None


def test_instance_names_must_fit_a_job_name():
    long = k8s_settings(instance="a" * 40)
    with pytest.raises(PermanentError, match="longer than 63"):
        build_job(spec("advisor", name="senpai-advisor-" + "f" * 40 + "-1"), long)
    with pytest.raises(ValueError, match="instance"):
        k8s_settings(instance="Team_A")


def test_forbidden_names_the_missing_permission(scripted):
    scripted.cluster.deny.add(("create", "jobs"))
    with pytest.raises(PermanentError) as e:
        k8s_fleet(scripted).launch(spec("student"))
    assert "may not create jobs in namespace senpai" in str(e.value)
    assert 'cannot create resource "jobs"' in str(e.value) and "Role" in str(e.value)


def test_the_stand_in_rejects_what_kubernetes_rejects(scripted):
    """The stand-in's schema check is what makes the tests above meaningful."""
    job = as_dict(build_job(spec("student", 1), k8s_settings()))
    url = f"{scripted.url}/apis/batch/v1/namespaces/{NAMESPACE}/jobs"
    job["spec"]["template"]["spec"]["restartPolicyy"] = "Never"
    typo = httpx.post(url, json=job)
    del job["spec"]["template"]["spec"]["restartPolicyy"]
    job["spec"]["activeDeadlineSeconds"] = "900"  # a string where an integer belongs
    wrong_type = httpx.post(url, json=job)
    for response in (typo, wrong_type):
        assert response.status_code == 422 and response.json()["reason"] == "Invalid"
    assert "restartPolicyy" in typo.json()["message"]
    assert scripted.cluster.jobs == {}


def test_http_422_is_permanent(scripted):
    scripted.cluster.faults.append(422)
    with pytest.raises(PermanentError, match="create jobs in namespace senpai: HTTP 422"):
        k8s_fleet(scripted).launch(spec("student"))


def test_missing_command_is_a_start_error(apiserver):
    fleet = k8s_fleet(apiserver)
    name = fleet.launch(spec("advisor")).name  # /opt/senpai/bin/python exists only in the image
    for _ in range(200):
        if (status := fleet.get(name)).done:
            break
        time.sleep(0.05)
    assert (status.phase, status.exit_code, status.reason) == ("failed", 128, "StartError")


def test_server_errors_are_retried_then_transient(scripted):
    fleet = k8s_fleet(scripted)
    scripted.cluster.faults.extend([503, 429])
    assert fleet.get("senpai-student-pr7-1") is None  # two faults, then the real 404
    scripted.cluster.faults.extend([500] * 4)
    with pytest.raises(TransientError, match="HTTP 500"):
        fleet.launch(spec("student"))
    assert scripted.cluster.jobs == {}


def test_unreachable_api_server_is_transient():
    from k8s_apiserver import ApiServer

    server = ApiServer()
    server.server_close()  # a port nobody listens on
    with pytest.raises(TransientError, match="cannot get jobs"):
        k8s_fleet(server).get("senpai-student-pr7-1")


def test_secret_values_reach_the_steps_that_hold_the_token_and_never_the_train_step(apiserver):
    fleet = k8s_fleet(apiserver)
    echo = ["sh", "-c", 'echo "token=$GITHUB_TOKEN"']
    name = fleet.launch(JobSpec(name="tok", role="student", pr=1, student="ada", command=echo, wall_seconds=20)).name
    for _ in range(200):
        if fleet.get(name).done:
            break
        time.sleep(0.05)
    # resolved by the "kubelet", not sent by us; the step that runs the target's code has no token at all
    expected = f"--- prepare ---\ntoken={SECRET_VALUE}\n--- train ---\ntoken=\n--- report ---\ntoken={SECRET_VALUE}"
    assert fleet.logs(name).strip() == expected


def test_a_stuck_job_says_why_it_is_pending(scripted):
    fleet = k8s_fleet(scripted)
    name = fleet.launch(spec("student", 4)).name
    assert fleet.get(name).reason is None  # ContainerCreating is not news
    with scripted.cluster.lock:
        pod = scripted.cluster._pod_of(NAMESPACE, name)
        pod["status"]["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes have 4 GPUs"}
        ]
        pod["status"]["containerStatuses"][0]["state"] = {}
    assert (fleet.get(name).phase, fleet.get(name).reason) == ("pending", "Unschedulable")


def test_a_missing_secret_leaves_the_job_pending_with_the_reason():
    from k8s_apiserver import ApiServer

    with ApiServer() as server:  # no Secret created
        fleet = k8s_fleet(server)
        name = fleet.launch(spec("verifier")).name
        for _ in range(100):
            if (status := fleet.get(name)).reason:
                break
            time.sleep(0.05)
    assert (status.phase, status.reason) == ("pending", "CreateContainerConfigError")
