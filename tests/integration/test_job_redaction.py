"""A job masks its own keys in what it writes, before the fleet returns its log: a real job process
on the local fleet, with a child process and a native write of its own."""

import sys
import time

from senpai.ledger.redact import REDACTED

JOB = """
import os, subprocess, sys
from senpai.config import credentials
from senpai.ledger.redact import redact_own_output
assert not [k for k in os.environ if k in ("FORGE_PAT", "GEMINI_API_KEY", "HF_TOKEN", "VLLM_API_KEY")], "in the env"
credentials.adopt()  # the launcher's secrets, off the pipe the fleet handed them on
redact_own_output(["FORGE_PAT"])
print("forge", credentials.get("FORGE_PAT"), "gemini", credentials.get("GEMINI_API_KEY")[:12], flush=True)
hf = {**os.environ, "HF_TOKEN": credentials.get("HF_TOKEN")}
subprocess.run(["sh", "-c", "echo child sees $HF_TOKEN >&2"], env=hf)  # a child writing to the inherited fd
os.write(2, ("native write " + credentials.get("VLLM_API_KEY") + chr(10)).encode())
raise RuntimeError("crashed holding " + credentials.get("FORGE_PAT"))
"""


def test_a_jobs_own_output_is_redacted_before_the_fleet_returns_it(tmp_path):
    """The wrapper posts `fleet.logs()` of a dead job: the job itself must already have masked its keys."""
    from senpai.fleet.base import JobSpec
    from senpai.fleet.local import LocalFleet

    keys = {
        "FORGE_PAT": "forge-pat-value-0123456789",  # an odd name: known to the job by its config only
        "GEMINI_API_KEY": "AIzaSy-gemini-0123456789",
        "HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz",
        "VLLM_API_KEY": "vllm-key-0123456789",
    }
    from senpai.config import credentials

    for name, value in keys.items():
        credentials.hold(name, value)  # as the wrapper holds them: they reach a job on a pipe, never in its env
    fleet = LocalFleet(tmp_path / "jobs")
    fleet.launch(JobSpec(name="leaky", role="student", command=[sys.executable, "-c", JOB], env=keys, wall_seconds=60))
    deadline = time.monotonic() + 60
    while not (status := fleet.get("leaky")).done and time.monotonic() < deadline:
        time.sleep(0.05)
    assert status.phase == "failed"
    logs = fleet.logs("leaky", 100)
    assert "crashed holding" in logs and "child sees" in logs and "native write" in logs, logs
    assert not any(v[:8] in logs for v in keys.values()), logs
    assert logs.count(REDACTED) == 5, logs
