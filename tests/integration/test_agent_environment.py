"""The openhands agent's shell gets the allow-listed environment only; removed secrets stay redacted."""

import os
import subprocess

import pytest

from senpai.config.harness import HarnessConfig
from senpai.ledger.redact import REDACTED, redact

LEAKY = {
    "AWS_SECRET_ACCESS_KEY": "aws-secret-0123456789abcdef",
    "API_KEY": "plain-api-key-0123456789",
    "PGPASSWORD": "pg-password-0123456789",
    "KAGGLE_KEY": "kaggle-key-0123456789",
    "DATABASE_URL": "postgres://ada:db-pass-0123456789@db.internal/runs",
}


@pytest.fixture
def restored_environ():
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def test_agent_shell_gets_no_secret_whatever_its_name(restored_environ) -> None:
    from openhands.tools.terminal.env import build_terminal_env  # what the SDK's terminal spawns bash with

    from senpai.agents.secrets import scrub_environment

    os.environ.update(LEAKY | {"FORGE_PAT": "forge-pat-0123456789", "LLM_KEY": "llm-key-0123456789"})
    os.environ.update({"WANDB_API_KEY": "w" * 40, "WANDB_PROJECT": "digits", "SENPAI_CONFIG": "/etc/h.yaml"})
    cfg = HarnessConfig.model_validate(
        {
            "forge": {"repo": "o/r", "base_url": "http://127.0.0.1:9", "token_env": "FORGE_PAT"},
            "tracker": {"dir": "/tmp/w"},
            "fleet": {"dir": "/tmp/f"},
            "state_dir": "/tmp/s",
            "students": [{"name": "ada"}],
        }
    )
    scrub_environment(cfg, ["LLM_KEY"])
    shell = subprocess.run(["bash", "-c", "env"], env=build_terminal_env({}), capture_output=True, text=True, check=True)
    seen = dict(line.split("=", 1) for line in shell.stdout.splitlines() if "=" in line)
    secrets = [*LEAKY, "FORGE_PAT", "LLM_KEY", "WANDB_API_KEY"]
    assert not set(secrets) & set(seen), sorted(set(secrets) & set(seen))
    assert seen["WANDB_PROJECT"] == "digits" and seen["SENPAI_CONFIG"] == "/etc/h.yaml" and "PATH" in seen
    text = " ".join([*(v for k, v in LEAKY.items() if k != "DATABASE_URL"), "db-pass-0123456789", "forge-pat-0123456789"])
    assert redact(text) == " ".join([REDACTED] * 6)  # scrubbed from the env, still masked in every post
