"""`senpai wrapper run --health-port`: real HTTP probes and metrics against a running wrapper and local forge.

Readiness follows the forge: 200 while ticks reach it, 503 once it is stopped, 200 again when it
comes back on the same port. Liveness stays 200 throughout, since failing ticks still finish.
/metrics counts the ticks, the forge's requests and the failed ticks.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from forge_fixtures import TOKEN, new_repository, register_bot, wait_healthy
from prometheus_client.parser import text_string_to_metric_families

from senpai.fleet.local import LocalFleet
from senpai.forge.localforge.server import LocalForgeServer

pytestmark = pytest.mark.e2e


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def metrics(url: str) -> dict[str, float]:
    """The samples of GET /metrics, as `name{labels}` -> value, parsed by prometheus_client."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as r:
        text = r.read().decode()
    return {
        s.name + ("{" + ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items())) + "}" if s.labels else ""): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def wait_for(what: str, check, timeout: float = 60.0):
    """Poll `check()` until it returns a truthy value; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)
    return value


def write_config(tmp: Path, base_url: str, repo: str) -> Path:
    cfg = {
        "forge": {"base_url": base_url, "repo": repo, "token_env": "SENPAI_HEALTH_TOKEN"},
        "tracker": {"dir": str(tmp / "wandb"), "mode": "offline"},
        "fleet": {"backend": "local", "dir": str(tmp / "jobs")},
        "students": [{"name": "ada"}],
        "state_dir": str(tmp / "state"),
        "tick_seconds": 0.2,
    }
    path = tmp / "harness.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_probes_follow_the_forge(tmp_path: Path) -> None:
    server = register_bot(LocalForgeServer(tmp_path / "forge")).start()
    wrapper = None
    try:
        wait_healthy(server.url)
        _, settings = new_repository(server.url, tmp_path / "seed")
        config = write_config(tmp_path, server.url, settings.repo)
        log = tmp_path / "wrapper.log"
        env = {**os.environ, "SENPAI_HEALTH_TOKEN": TOKEN}
        cmd = [sys.executable, "-m", "senpai", "wrapper", "run", "--config", str(config), "--health-port", "0", "--quiet"]
        with log.open("w") as out:
            wrapper = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        url = wait_for("the health line", lambda: re.search(r"^health: (\S+)$", log.read_text(), re.M), 30).group(1)

        status, body = wait_for("readiness", lambda: (r := get(f"{url}/readyz"))[0] == 200 and r, 30)
        assert body["status"] == "ok" and body["consecutive_failures"] == 0 and body["last_success"]
        assert get(f"{url}/healthz")[0] == 200
        samples = metrics(url)
        assert samples["senpai_wrapper_ticks_total"] >= 1 and samples["senpai_wrapper_tick_failures_total"] == 0
        assert samples['senpai_forge_requests_total{cached="false"}'] > 0  # the first tick's listings
        assert 'senpai_experiments{state="wip"}' in samples and samples["senpai_wrapper_tick_duration_seconds_count"] >= 1
        assert samples['senpai_jobs_launched_total{role="advisor"}'] == 0  # no senpai.yaml in this repository: no job

        port = server.port
        server.stop()
        status, body = wait_for("readiness to fail", lambda: (r := get(f"{url}/readyz"))[0] == 503 and r)
        assert body["status"] == "failing" and body["consecutive_failures"] >= 1 and body["last_error"]
        assert "last tick failed" in body["reason"]
        status, body = get(f"{url}/healthz")
        assert status == 200, body  # the loop is alive: failing ticks still finish
        assert metrics(url)["senpai_wrapper_tick_failures_total"] >= 1

        server = LocalForgeServer(tmp_path / "forge", port=port).start()
        status, body = wait_for("readiness to recover", lambda: (r := get(f"{url}/readyz"))[0] == 200 and r)
        assert body["consecutive_failures"] == 0

        wrapper.send_signal(signal.SIGTERM)
        assert wrapper.wait(30) == 0, log.read_text()
    finally:
        if wrapper and wrapper.poll() is None:
            wrapper.kill()
        fleet = LocalFleet(tmp_path / "jobs")
        for job in fleet.list():
            fleet.delete(job.name)
        server.stop()
