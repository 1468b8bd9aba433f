"""`senpai wrapper run --max-ticks N` stops after N ticks even when every tick fails."""

import socket
import subprocess
import sys
from pathlib import Path

import yaml


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_max_ticks_counts_failed_ticks_and_exits_3(tmp_path: Path) -> None:
    config = {
        "forge": {"base_url": f"http://127.0.0.1:{closed_port()}", "repo": "senpai/digits"},
        "tracker": {"dir": str(tmp_path / "wandb")},
        "fleet": {"dir": str(tmp_path / "jobs")},
        "students": [{"name": "ada"}],
        "state_dir": str(tmp_path / "state"),
        "tick_seconds": 0.1,
    }
    (tmp_path / "h.yaml").write_text(yaml.safe_dump(config))
    cmd = [sys.executable, "-m", "senpai", "wrapper", "run", "--config", str(tmp_path / "h.yaml"), "--max-ticks", "2"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    assert "the last 2 tick(s) failed" in proc.stderr and "connection refused: is the forge running?" in proc.stderr
