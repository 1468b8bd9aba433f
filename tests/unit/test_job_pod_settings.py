"""fleet.pod (senpai.config.pod): what an operator may add to Job pods, and what is refused because
Job containers run code agents wrote; then what `k8s_job.check_pod` refuses (senpai's own names and
paths, fields the Kubernetes models reject)."""

import pytest
from pydantic import ValidationError

from senpai.config.harness import HarnessConfig, KubernetesFleetSettings
from senpai.errors import ConfigError

FLEET = {
    "backend": "kubernetes",
    "namespace": "research",
    "images": {role: f"senpai/{role}:0.1.0" for role in ("advisor", "student", "verifier")},
    "pvc": "senpai-data",
    "config_map": "senpai-config",
    "secret_env": [{"env": "OPENAI", "secret": "llm", "key": "openai"}],
}
SECURITY = {
    "runAsNonRoot": True,
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
}


SEALED = {"claimName": "sealed"}
ZONE = {"configMapKeyRef": {"name": "c", "key": "z"}}


def fleet(**pod: object) -> KubernetesFleetSettings:
    return KubernetesFleetSettings.model_validate(FLEET | {"pod": pod})


def test_what_an_operator_may_add() -> None:
    f = fleet(
        env=[
            {"name": "NCCL_DEBUG", "value": "INFO"},
            {"name": "ZONE", "valueFrom": ZONE},
        ],
        env_from=[{"configMapRef": {"name": "job-env"}}],
        volumes=[{"name": "shm", "emptyDir": {"medium": "Memory"}}, {"name": "ds", "persistentVolumeClaim": {"claimName": "ds"}}],
        volume_mounts=[{"name": "shm", "mountPath": "/dev/shm"}],
        pod_security_context={"runAsNonRoot": True, "runAsUser": 1000680000},
        security_context=SECURITY,
    )
    from senpai.fleet.k8s_job import check_pod  # the kubernetes client (seconds): when run, not when the suite is collected

    check_pod(f)
    assert f.pod.pod_security_context == {
        "runAsNonRoot": True,
        "runAsUser": 1000680000,
    }  # no fixed uid by default: replaced whole


@pytest.mark.parametrize(
    "pod, message",
    [
        ({"env": [{"name": "HF_HOME", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}, "valueFrom may be"),
        ({"env": [{"name": "HF_TOKEN", "value": "x"}]}, "env[0] (HF_TOKEN): the name holds a credential"),
        ({"env": [{"name": "AWS_SECRET_ACCESS_KEY", "value": "x"}]}, "the name holds a credential"),
        ({"env": [{"name": "OPENAI", "value": "x"}]}, "env[0] (OPENAI): the name holds a credential"),  # a secret_env name
        ({"env": [{"name": "FOO", "value": "ghp_" + "a" * 36}]}, "env[0] (FOO): the value looks like a credential"),
        ({"env": [{"name": "DATABASE_URL", "value": "postgres://u:pw@db/x"}]}, "the value looks like a credential"),
        ({"env": [{"name": "HTTPS_PROXY", "value": "http://me:hunter2@proxy:3128"}]}, "the value looks like a credential"),
        ({"env": [{"name": "SENPAI_CONFIG", "value": "/x"}]}, "senpai sets SENPAI_CONFIG itself"),
        ({"env": [{"name": "HOME", "value": "/x"}]}, "senpai sets HOME itself"),
        ({"env_from": [{"secretRef": {"name": "cloud-keys"}}]}, "env_from[0]: only configMapRef"),
        ({"volumes": [{"name": "k", "secret": {"secretName": "cloud-keys"}}]}, "volumes[0] (k): secret refused"),
        ({"volumes": [{"name": "t", "projected": {"sources": []}}]}, "volumes[0] (t): projected refused"),
        ({"volumes": [{"name": "h", "hostPath": {"path": "/var/lib/kubelet"}}]}, "hostPath refused"),
        ({"volume_mounts": [{"name": "nope", "mountPath": "/x"}]}, "'nope' is not one of fleet.pod.volumes"),
        (
            {"security_context": {**SECURITY, "readOnlyRootFilesystem": False}},
            "readOnlyRootFilesystem must be True",
        ),
        (
            {"security_context": {**SECURITY, "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]}}},
            "capabilities drop [ALL] and add none",
        ),
        ({"security_context": {**SECURITY, "privileged": True}}, "not privileged"),
        ({"pod_security_context": {"runAsNonRoot": False}}, "pod_security_context.runAsNonRoot must be True"),
        ({"pod_security_context": {"runAsNonRoot": True, "runAsUser": 0}}, "runAsUser 0 is root"),
        # shapes a person mistypes: a sentence with the field, never a traceback
        (
            {"volumes": [{"name": "c", "persistentVolumeClaim": "claim"}]},
            "volumes[0] (c): persistentVolumeClaim must be a mapping",
        ),
        ({"security_context": {**SECURITY, "capabilities": "ALL"}}, "security_context.capabilities must be a mapping"),
        ({"env": [{"name": "X", "valueFrom": "secretKeyRef"}]}, "env[0] (X): valueFrom must be a mapping"),
    ],
)
def test_what_would_reach_agents_code_is_refused(pod: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        fleet(**pod)


def test_the_forge_token_and_llm_key_names_are_refused_whatever_they_are_called() -> None:
    cfg = {
        "forge": {"repo": "acme/digits", "token_env": "FORGE"},
        "tracker": {"dir": "/data/wandb"},
        "fleet": FLEET | {"secret_env": [], "pod": {"env": [{"name": "FORGE", "value": "x"}]}},
        "students": [{"name": "ada"}],
        "state_dir": "/data/state",
    }
    with pytest.raises(ValidationError, match=r"env\[0\] \(FORGE\): the name holds a credential"):
        HarnessConfig.model_validate(cfg)


def test_a_volume_holding_the_holdout_is_refused() -> None:
    with pytest.raises(ValidationError, match="mounts the holdout claim 'sealed' into every job"):
        KubernetesFleetSettings.model_validate(
            FLEET
            | {
                "holdout": {"claim": "sealed"},
                "pod": {"volumes": [{"name": "h", "persistentVolumeClaim": {"claimName": "sealed"}}]},
            }
        )


@pytest.mark.parametrize(
    "pod, message",
    [
        ({"volumes": [{"name": "work", "emptyDir": {}}]}, "the name 'work' is senpai's own"),
        ({"volumes": [{"name": "train-home", "emptyDir": {}}]}, "the name 'train-home' is senpai's own"),
        (
            {"volumes": [{"name": "d", "emptyDir": {}}], "volume_mounts": [{"name": "d", "mountPath": "/data/"}]},
            "/data/ is a mount",
        ),
        ({"volumes": [{"name": "d", "emptyDir": {"sizeLimt": "1Gi"}}]}, "does not build a Kubernetes pod"),
        ({"affinity": {"nodeAfinity": {}}}, "does not build a Kubernetes pod"),
    ],
)
def test_check_pod_refuses_senpais_own_names_and_unknown_fields(pod: dict, message: str) -> None:
    from senpai.fleet.k8s_job import check_pod

    with pytest.raises(ConfigError, match=message):
        check_pod(fleet(**pod))
