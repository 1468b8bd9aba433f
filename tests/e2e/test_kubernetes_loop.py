"""The research loop with `fleet.backend: kubernetes`, end to end, without a cluster.

There is no cluster here (the live-cluster test is `make kind-e2e`). The wrapper builds its
KubernetesFleet the way it does outside a pod: from a kubeconfig, here one whose context points at
the API-server stand-in (tests/k8s_apiserver.py). Every Job the wrapper creates is schema-checked
for Kubernetes 1.30 and 1.37, and the stand-in's "kubelet" runs it as a local process. The jobs
reach the local forge with a token they get only from a Secret, by reference; the verifier's
score step reads the sealed holdout from a Secret volume that only it mounts.
"""

import pytest
import yaml
from forge_fixtures import TOKEN
from k8s_fixtures import NAMESPACE, SECRET_VALUE, k8s_settings, seed
from research import assert_no_duplicates, make_program, reader, run

from senpai.config import safe_yaml

pytestmark = pytest.mark.e2e

TOKEN_ENV = "SENPAI_DEMO_TOKEN"  # forge.token_env of make_program's config


def kubeconfig(url: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "standin", "cluster": {"server": url}}],
            "users": [{"name": "wrapper", "user": {"token": "standin"}}],
            "contexts": [{"name": "standin", "context": {"cluster": "standin", "user": "wrapper", "namespace": NAMESPACE}}],
            "current-context": "elsewhere",  # the fleet must use kubeconfig_context, not this
        }
    )


@pytest.mark.long
def test_research_loop_on_the_kubernetes_fleet(local_forge, tmp_path, monkeypatch):
    from k8s_apiserver import ApiServer

    from senpai.cli.example_split import DIGITS, HOLDOUT_FILE

    config = make_program(local_forge.base_url, tmp_path, "k8s-loop", experiments=2, target="quick")
    secret_env = [{"env": TOKEN_ENV, "secret": "senpai-secrets", "key": "forge-token"}]
    # the PVC holds tracker.dir and state_dir, as in the chart; the stand-in mounts host paths as they are,
    # and writes the holdout Secret's files at its mount path when the score container starts
    holdout = {"secret": "senpai-holdout", "mount_path": str(tmp_path / "sealed")}
    fleet = k8s_settings(kubeconfig_context="standin", secret_env=secret_env, mount_path=str(config.parent), holdout=holdout)
    raw = yaml.safe_load(config.read_text())
    raw["fleet"] = fleet.model_dump(mode="json", by_alias=True, exclude_none=True)
    config.write_text(safe_yaml.dump(raw))
    with ApiServer() as server:
        seed(server).cluster.secrets[(NAMESPACE, "senpai-secrets")] = {"forge-token": TOKEN}
        server.cluster.secrets[(NAMESPACE, "senpai-holdout")] = {HOLDOUT_FILE: DIGITS.to_csv(*DIGITS.split()["holdout"])}
        (tmp_path / "kubeconfig").write_text(kubeconfig(server.url))
        monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        monkeypatch.setenv(TOKEN_ENV, TOKEN)  # the wrapper's own token; jobs get theirs from the Secret
        try:
            run(config, decided=2, timeout=420)  # the measured start, then a proposal that goes to the verifier
        except AssertionError as e:
            logs = {f"{pod}/{c}": path.read_text()[-2000:] for (_, pod, c), path in server.cluster.logs.items()}
            raise AssertionError(f"{e}\njob logs: {logs}") from None
        posted = [body for method, path, body in server.cluster.requests if method == "POST" and path.endswith("/jobs")]
    roles = {body["metadata"]["labels"]["senpai.dev/role"] for body in posted}
    assert roles == {"advisor", "student", "verifier"}
    # only a verifier's checkout (its fingerprint) and score containers mount the holdout; its train steps have no secret
    for body in posted:
        pod = body["spec"]["template"]["spec"]
        steps = [c["name"] for c in [*pod.get("initContainers", []), *pod["containers"]]]
        holders = [
            c["name"]
            for c in [*pod.get("initContainers", []), *pod["containers"]]
            if any(m["name"] == "holdout" for m in c["volumeMounts"])
        ]
        if body["metadata"]["labels"]["senpai.dev/role"] == "verifier":
            assert (steps, holders) == (["checkout", "train-baseline", "train-candidate", "score"], ["checkout", "score"])
            for train in pod["initContainers"][1:]:  # no secret, and only its own side's volume of the work dir
                assert not [e for e in train["env"] if "valueFrom" in e]
                work_mounts = [m["name"] for m in train["volumeMounts"] if m["mountPath"].startswith("/work")]
                assert work_mounts == [train["name"].replace("train", "side")]
        elif body["metadata"]["labels"]["senpai.dev/role"] == "student":
            assert (steps, holders) == (["prepare", "train", "report"], [])
            train = pod["initContainers"][1]  # the target's code: no secret, the train volume alone of the work dir
            assert not [e for e in train["env"] if "valueFrom" in e]
            assert [m["name"] for m in train["volumeMounts"] if m["mountPath"].startswith("/work")] == ["side-train"]
        else:
            assert (steps, holders) == (["job"], [])
    assert all(TOKEN not in yaml.safe_dump(body) and SECRET_VALUE not in yaml.safe_dump(body) for body in posted)
    measured, exp = reader(config).experiments()  # the measured start, then the proposal
    assert measured.hypothesis.measures_base and measured.decided
    assert exp.decided and exp.evidence and exp.evidence[0].outcome == "ok" and exp.verifications
    assert_no_duplicates(config)
