"""Importing senpai changes nothing; the entry points set what the process needs (`senpai.startup`,
`senpai.cli.wiring.redact_secrets`).

The import check runs in a fresh interpreter with none of the startup defaults in its environment,
except LITELLM_LOCAL_MODEL_COST_MAP: without it LiteLLM's import would fetch its price map.
"""

import json
import os
import subprocess
import sys
import time

import yaml

from senpai.fleet.base import JobSpec
from senpai.fleet.local import LocalFleet
from senpai.ledger.redact import REDACTED
from senpai.startup import DEFAULTS

IMPORT_ALL = """
import importlib, json, os, pkgutil
before = dict(os.environ)
import senpai
names = [m.name for m in pkgutil.walk_packages(senpai.__path__, "senpai.") if not m.name.endswith("__main__")]
for name in names:
    importlib.import_module(name)
from senpai.ledger import redact
changed = sorted(k for k in before.keys() | os.environ.keys() if before.get(k) != os.environ.get(k))
print(json.dumps({"imported": len(names), "changed": changed, "registered": len(redact._registered)}))
"""


def clean_env(**extra: str) -> dict[str, str]:
    keep = ("PATH", "HOME", "PYTHONPATH", "LANG", "TMPDIR")
    return {**{k: os.environ[k] for k in keep if k in os.environ}, "WANDB_MODE": "offline", **extra}


def test_importing_every_senpai_module_changes_no_env_var_and_registers_no_secret():
    env = clean_env(LITELLM_LOCAL_MODEL_COST_MAP="True")
    proc = subprocess.run([sys.executable, "-c", IMPORT_ALL], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["imported"] > 90  # every module, the runtimes' and the local forge's included
    assert (result["changed"], result["registered"]) == ([], 0)


def test_a_jobs_output_hides_the_configs_secrets_once_wired(tmp_path):
    """The names are odd on purpose: only the config says these variables hold secrets."""
    config = {
        "forge": {"repo": "o/r", "token_env": "FORGE_ODD"},
        "tracker": {"dir": "w"},
        "fleet": {"dir": "j"},
        "students": [{"name": "ada"}],
        "state_dir": "s",
        "runtime": {"student": {"kind": "openhands", "llm": {"model": "m", "api_key_env": "PROVIDER_ODD"}}},
    }
    (tmp_path / "h.yaml").write_text(yaml.safe_dump(config))
    code = (
        "import os, subprocess\n"
        "from senpai.cli.wiring import secret_envs\nfrom senpai.config.harness import load_harness\n"
        "from senpai.ledger.redact import redact_own_output\n"
        "print('before', os.environ['FORGE_ODD'], flush=True)\n"
        f"redact_own_output(secret_envs(load_harness({str(tmp_path / 'h.yaml')!r})))\n"
        "print('after', os.environ['FORGE_ODD'], flush=True)\n"
        "subprocess.run(['sh', '-c', 'echo child $PROVIDER_ODD'])\n"
    )
    env = clean_env(FORGE_ODD="forge-value-0123456789", PROVIDER_ODD="provider-value-0123456789")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert proc.stdout.splitlines() == ["before forge-value-0123456789", f"after {REDACTED}", f"child {REDACTED}"], proc.stderr


def test_the_local_fleet_starts_its_supervisors_with_the_startup_defaults(tmp_path, monkeypatch):
    """An embedded wrapper (the demo, bench, tests) never ran the CLI's `main`; its supervisors, and
    so their jobs, skip pydantic's plugin scan all the same. A value already set wins."""
    for name in DEFAULTS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "False")
    fleet = LocalFleet(tmp_path / "jobs")
    script = 'echo "$PYDANTIC_DISABLE_PLUGINS $OPENHANDS_SUPPRESS_BANNER $LITELLM_LOCAL_MODEL_COST_MAP"'
    fleet.launch(JobSpec(name="envy", role="advisor", command=["sh", "-c", script], wall_seconds=20))
    deadline = time.monotonic() + 30
    while not ((status := fleet.get("envy")) and status.done) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fleet.logs("envy") == "__all__ 1 False\n"
    assert "PYDANTIC_DISABLE_PLUGINS" not in os.environ  # launching changed nothing here
