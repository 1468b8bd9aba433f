"""Verifier Jobs on Kubernetes: checkout, train-baseline, train-candidate (each on its own side's
volume only), score, and the sealed holdout only in `checkout` (its fingerprint, for baseline
reuse) and `score`, never in a step that runs a side's code.

The Job specs are the ones KubernetesFleet builds, validated strictly against the Kubernetes 1.30
and 1.37 schemas, then run by the API-server stand-in (tests/k8s_apiserver.py), whose "kubelet"
runs the init containers in order and the main container last. docs/kubernetes.md describes the shape.
"""

import json
import time
from typing import TYPE_CHECKING

import pytest
from k8s_fixtures import NAMESPACE, SECRET_VALUE, as_dict, build_job, k8s_fleet, k8s_settings, seed

from senpai.errors import PermanentError
from senpai.fleet.base import THREAD_ENV, JobSpec

if TYPE_CHECKING:
    from k8s_apiserver import ApiServer

COMMAND = ["/opt/senpai/bin/python", "-m", "senpai", "job", "verify", "--pr", "7"]
SECRET_HOLDOUT = {"secret": "digits-holdout", "mount_path": "/holdout"}
CLAIM_HOLDOUT = {"claim": "sealed", "sub_path": "digits/v1", "mount_path": "/sealed"}


def spec(role: str = "verifier", gpus: int = 0, command: list[str] = COMMAND, name: str = "") -> JobSpec:
    return JobSpec(
        name=name or f"senpai-{role}-pr7-1",
        role=role,
        pr=None if role == "advisor" else 7,
        student=None if role == "advisor" else "ada",
        command=command,
        env={"SENPAI_CONFIG": "/etc/senpai/harness.yaml"},
        wall_seconds=900,
        gpus=gpus,
    )


def pod_of(role: str, holdout: dict | None, gpus: int = 0) -> dict:
    job = build_job(spec(role, gpus), k8s_settings(holdout=holdout))
    return as_dict(job)["spec"]["template"]["spec"]


def every_container(pod: dict) -> list[dict]:
    return [*pod.get("initContainers", []), *pod["containers"]]


def reads_holdout(pod: dict, container: dict, holdout: dict) -> bool:
    """Whether `container` mounts any volume whose source is the holdout's Secret or claim."""
    wanted = {("secret", holdout.get("secret")), ("claim", holdout.get("claim"))} - {("secret", None), ("claim", None)}
    sources = {
        v["name"]
        for v in pod["volumes"]
        if {("secret", v.get("secret", {}).get("secretName")), ("claim", v.get("persistentVolumeClaim", {}).get("claimName"))}
        & wanted
    }
    return any(m["name"] in sources for m in container.get("volumeMounts", []))


STEPS = {
    "checkout": ["--step", "checkout"],
    "train-baseline": ["--step", "train", "--side", "baseline"],
    "train-candidate": ["--step", "train", "--side", "candidate"],
    "score": ["--step", "score"],
}
SIDE_MOUNTS = {"side-baseline": "/work/baseline", "side-candidate": "/work/candidate"}


@pytest.mark.parametrize("holdout", [None, SECRET_HOLDOUT, CLAIM_HOLDOUT], ids=["none", "secret", "claim"])
@pytest.mark.parametrize("version", ["1.30", "1.37"])
def test_verifier_job_is_checkout_then_one_train_per_side_then_score(holdout, version):
    import kubernetes_validate  # with the kubernetes client (seconds): when run, not at collection

    from senpai.fleet.k8s_job import VERIFY_STEPS

    job = as_dict(build_job(spec(), k8s_settings(holdout=holdout)))
    assert kubernetes_validate.validate(job, version, strict=True) == version
    pod = job["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["initContainers"]] == ["checkout", "train-baseline", "train-candidate"]
    assert [c["name"] for c in pod["containers"]] == ["score"]
    assert [c["name"] for c in every_container(pod)] == list(VERIFY_STEPS)
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["work"] == {"name": "work", "emptyDir": {}}
    for side in ("baseline", "candidate"):
        assert volumes[f"side-{side}"] == {"name": f"side-{side}", "emptyDir": {}}
    for c in every_container(pod):
        assert c["command"] == [*COMMAND, *STEPS[c["name"]], "--work", "/work"]
        mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
        if c["name"].startswith("train-"):
            side = c["name"].removeprefix("train-")
            assert "work" not in mounts and c["workingDir"] == f"/work/{side}"
            assert {k: v for k, v in mounts.items() if k.startswith("side-")} == {f"side-{side}": f"/work/{side}"}
        else:
            assert mounts["work"] == "/work" and c["workingDir"] == "/work"
            assert {k: v for k, v in mounts.items() if k.startswith("side-")} == SIDE_MOUNTS
        assert c["resources"] == {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "4Gi"}}
        assert c["securityContext"]["runAsNonRoot"] is True and c["securityContext"]["readOnlyRootFilesystem"] is True
        assert c["securityContext"]["allowPrivilegeEscalation"] is False
        assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}


@pytest.mark.parametrize("holdout", [SECRET_HOLDOUT, CLAIM_HOLDOUT], ids=["secret", "claim"])
@pytest.mark.parametrize("gpus", [0, 2])
def test_the_train_steps_get_no_secret_and_no_holdout(holdout, gpus):
    pod = pod_of("verifier", holdout, gpus)
    checkout, *trains = pod["initContainers"]
    expected = {"HOME", "TMPDIR", "SENPAI_CONFIG", "SENPAI_JOB_DEADLINE", "SENPAI_TRAIN_GPUS", *THREAD_ENV}
    expected |= {"SENPAI_GPUS"} if gpus else set()
    for train in trains:
        assert "envFrom" not in train
        assert [e for e in train["env"] if "valueFrom" in e] == []  # no secretKeyRef, not even the optional W&B key
        assert {e["name"] for e in train["env"]} == expected
        secret_volumes = {v["name"] for v in pod["volumes"] if "secret" in v}
        assert not [m for m in train["volumeMounts"] if m["name"] in secret_volumes or m["mountPath"] == holdout["mount_path"]]
        assert not reads_holdout(pod, train, holdout)
    assert reads_holdout(pod, checkout, holdout)  # senpai's code only: it fingerprints the holdout
    # the steps that talk to the forge keep their token, by reference
    for c in (checkout, pod["containers"][0]):
        refs = {e["name"]: e["valueFrom"]["secretKeyRef"]["key"] for e in c["env"] if "valueFrom" in e}
        assert refs == {"GITHUB_TOKEN": "github-token", "WANDB_API_KEY": "wandb-api-key"}


def test_the_candidates_train_step_sees_neither_work_nor_the_baseline():
    pod = pod_of("verifier", SECRET_HOLDOUT)
    by_name = {c["name"]: c for c in every_container(pod)}
    candidate = by_name["train-candidate"]
    paths = {m["mountPath"] for m in candidate["volumeMounts"]}
    assert "/work" not in paths and "/work/baseline" not in paths and "/holdout" not in paths
    assert "side-baseline" not in {m["name"] for m in candidate["volumeMounts"]}
    writable = {n: {m["name"] for m in c["volumeMounts"] if not m.get("readOnly")} for n, c in by_name.items()}
    assert writable["train-candidate"] & (writable["checkout"] | writable["score"]) == {"side-candidate"}
    assert writable["train-baseline"] & (writable["checkout"] | writable["score"]) == {"side-baseline"}
    assert writable["train-candidate"] & writable["train-baseline"] == {"train-home", "train-tmp"}  # emptied by neither
    for train in (by_name["train-baseline"], candidate):
        mounts = {m["mountPath"]: m for m in train["volumeMounts"]}
        assert mounts["/home/senpai"]["name"] == "train-home" and mounts["/tmp"]["name"] == "train-tmp"
        assert mounts["/data"] == {"name": "data", "mountPath": "/data", "readOnly": True}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["train-home"] == {"name": "train-home", "emptyDir": {}} == {**volumes["train-tmp"], "name": "train-home"}


def test_a_gpu_verifier_gives_its_gpus_to_the_train_steps_only():
    pod = pod_of("verifier", SECRET_HOLDOUT, gpus=2)
    gpus = {c["name"]: c["resources"]["requests"].get("nvidia.com/gpu") for c in every_container(pod)}
    assert gpus == {"checkout": None, "train-baseline": "2", "train-candidate": "2", "score": None}
    limits = {c["name"]: c["resources"]["limits"].get("nvidia.com/gpu") for c in every_container(pod)}
    assert limits == gpus
    told = {c["name"]: {e["name"]: e.get("value") for e in c["env"]}.get("SENPAI_GPUS") for c in every_container(pod)}
    assert told == {"checkout": None, "train-baseline": "2", "train-candidate": "2", "score": None}
    # every step knows the train steps' count: the checkout step puts it in the baseline key
    trains = {c["name"]: {e["name"]: e.get("value") for e in c["env"]}["SENPAI_TRAIN_GPUS"] for c in every_container(pod)}
    assert set(trains.values()) == {"2"}
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    cpu = pod_of("verifier", SECRET_HOLDOUT, gpus=0)
    assert "nodeSelector" not in cpu and "tolerations" not in cpu


def test_only_checkout_and_score_mount_the_secret_holdout_read_only():
    pod = pod_of("verifier", SECRET_HOLDOUT)
    holdout = [v for v in pod["volumes"] if v["name"] == "holdout"]
    assert holdout == [{"name": "holdout", "secret": {"secretName": "digits-holdout", "defaultMode": 0o440}}]
    readers = [c["name"] for c in every_container(pod) if reads_holdout(pod, c, SECRET_HOLDOUT)]
    assert readers == ["checkout", "score"]
    for c in (pod["initContainers"][0], pod["containers"][0]):
        (mount,) = [m for m in c["volumeMounts"] if m["name"] == "holdout"]
        assert mount == {"name": "holdout", "mountPath": "/holdout", "readOnly": True}


def test_only_checkout_and_score_mount_the_claim_holdout_read_only_at_its_sub_path():
    pod = pod_of("verifier", CLAIM_HOLDOUT)
    (volume,) = [v for v in pod["volumes"] if v["name"] == "holdout"]
    assert volume["persistentVolumeClaim"] == {"claimName": "sealed", "readOnly": True}
    assert [c["name"] for c in every_container(pod) if reads_holdout(pod, c, CLAIM_HOLDOUT)] == ["checkout", "score"]
    (mount,) = [m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "holdout"]
    assert mount == {"name": "holdout", "mountPath": "/sealed", "readOnly": True, "subPath": "digits/v1"}


@pytest.mark.parametrize("holdout", [SECRET_HOLDOUT, CLAIM_HOLDOUT], ids=["secret", "claim"])
@pytest.mark.parametrize("role, gpus", [("advisor", 0), ("student", 0), ("student", 4)])
def test_student_and_advisor_pods_never_mount_the_holdout(holdout, role, gpus):
    pod = pod_of(role, holdout, gpus)
    assert [c["name"] for c in every_container(pod)] == (["job"] if role == "advisor" else ["prepare", "train", "report"])
    assert "holdout" not in {v["name"] for v in pod["volumes"]}
    for c in every_container(pod):
        assert not reads_holdout(pod, c, holdout)
        assert holdout["mount_path"] not in {m["mountPath"] for m in c["volumeMounts"]}


def test_a_holdout_on_the_shared_claim_or_beside_the_work_dir_is_refused():
    with pytest.raises(ValueError, match="shared claim 'senpai-data' that every job mounts"):
        k8s_settings(holdout={"claim": "senpai-data"})
    for path in ("/work/holdout", "/work", "/", "/data"):
        with pytest.raises(PermanentError, match="collides"):
            build_job(spec(), k8s_settings(holdout={"secret": "h", "mount_path": path}))
    with pytest.raises(ValueError, match="exactly one of secret or claim"):
        k8s_settings(holdout={"secret": "h", "claim": "c"})


# --------------------------------------------------------------------------- through the stand-in


@pytest.fixture
def scripted() -> "ApiServer":
    from k8s_apiserver import ApiServer, Cluster

    with ApiServer(Cluster(run_pods=False)) as server:
        yield seed(server)


@pytest.mark.parametrize("reason, expected", [(None, "Error"), ("OOMKilled", "OOMKilled")])
def test_a_failed_train_step_is_the_verifier_job_failure(scripted, reason, expected):
    fleet = k8s_fleet(scripted, holdout=SECRET_HOLDOUT)
    name = fleet.launch(spec()).name
    assert fleet.logs(name) == "" and fleet.get(name).phase == "pending"
    scripted.cluster.finish(NAMESPACE, name, 3, reason, log="seed 0\nTraceback: boom\n", container="train-candidate")
    status = fleet.get(name)
    assert (status.phase, status.exit_code, status.reason) == ("failed", 3, expected)
    assert status.started_at is not None and status.finished_at is not None
    expected = "--- checkout ---\n--- train-baseline ---\n--- train-candidate ---\nseed 0\nTraceback: boom\n"
    assert fleet.logs(name) == expected  # score never started
    assert fleet.logs(name, tail_lines=1) == "Traceback: boom\n"


def test_a_verifier_succeeds_when_score_does(scripted):
    fleet = k8s_fleet(scripted)
    name = fleet.launch(spec()).name
    scripted.cluster.finish(NAMESPACE, name, 0, log="accuracy: 0.97\n")
    status = fleet.get(name)
    assert (status.phase, status.exit_code, status.reason) == ("succeeded", 0, None)
    assert fleet.logs(name).endswith("--- score ---\naccuracy: 0.97\n")


def wait_done(fleet, name: str) -> None:
    deadline = time.monotonic() + 60
    while not fleet.get(name).done and time.monotonic() < deadline:
        time.sleep(0.05)


def test_the_stand_in_runs_the_steps_in_order_and_only_score_reads_the_holdout(apiserver, tmp_path):
    """Each step prints its token and what it finds at the holdout path; a train step also lists
    its `--work` (only its own side is there) and leaves a note in its side dir for `score`."""
    apiserver.cluster.secrets[(NAMESPACE, "digits-holdout")] = {"labels.csv": "3,1,4\n"}
    mount = str(tmp_path / "holdout")
    script = (
        'step=$2; [ "$2" != train ] || step=train-$4; for w; do :; done;'
        ' echo "$step token=${GITHUB_TOKEN:-none} holdout=$(cat "$HOLD/labels.csv" 2>/dev/null || echo none)";'
        ' case $step in train-*) echo "$step" >> "$w/$4/steps"; ls "$w"; touch "$HOME/.gitconfig";;'
        ' *) echo "$step" >> "$w/steps";; esac;'
        ' [ "$step" != score ] || { cat "$w/steps" "$w/baseline/steps" "$w/candidate/steps"; ls -a "$HOME"; }'
    )
    command = ["sh", "-c", f"HOLD={mount}; {script}", "sh"]
    fleet = k8s_fleet(apiserver, holdout={"secret": "digits-holdout", "mount_path": mount})
    name = fleet.launch(spec(command=command)).name
    wait_done(fleet, name)
    assert fleet.get(name).phase == "succeeded", fleet.logs(name)
    assert fleet.logs(name).splitlines() == [
        "--- checkout ---",
        f"checkout token={SECRET_VALUE} holdout=3,1,4",  # to fingerprint it; no side code runs here
        "--- train-baseline ---",
        "train-baseline token=none holdout=none",
        "baseline",  # its --work holds its own side only
        "--- train-candidate ---",
        "train-candidate token=none holdout=none",
        "candidate",
        "--- score ---",
        f"score token={SECRET_VALUE} holdout=3,1,4",
        "checkout",
        "score",
        "train-baseline",  # what each train step left in its side, seen by score at /work/<side>
        "train-candidate",
        ".",
        "..",  # no .gitconfig: the train steps' HOME is their own
    ]
    (body,) = [b for m, p, b in apiserver.cluster.requests if m == "POST" and p.endswith("/jobs")]
    assert SECRET_VALUE not in json.dumps(body) and "3,1,4" not in json.dumps(body)


def test_a_missing_holdout_secret_leaves_the_job_waiting_before_any_step_runs(apiserver, tmp_path):
    """`checkout` mounts the holdout too (to fingerprint it), so nothing runs until the Secret exists."""
    fleet = k8s_fleet(apiserver, holdout={"secret": "nowhere", "mount_path": str(tmp_path / "holdout")})
    name = fleet.launch(spec(command=["sh", "-c", 'echo "$2"', "sh"])).name

    def checkout_waiting() -> dict:
        with apiserver.cluster.lock:
            status = apiserver.cluster._pod_of(NAMESPACE, name)["status"]["initContainerStatuses"][0]
            return status["state"].get("waiting", {})

    deadline = time.monotonic() + 60
    while "message" not in checkout_waiting() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert 'secret "nowhere" not found' in checkout_waiting()["message"]
    status = fleet.get(name)
    assert (status.phase, status.exit_code) == ("pending", None)
    assert "checkout\n" not in fleet.logs(name)
