"""The train command: output streamed with a bounded tail, an allow-listed environment, nothing left behind."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from senpai.agents.measure import TAIL_BYTES, run_command

LEAKY = {
    "AWS_SECRET_ACCESS_KEY": "aws-secret-0123456789abcdef",
    "API_KEY": "plain-api-key-0123456789",
    "PGPASSWORD": "pg-password-0123456789",
    "KAGGLE_KEY": "kaggle-key-0123456789",
    "DATABASE_URL": "postgres://ada:db-pass-0123456789@db.internal/runs",
}

# VmHWM is the peak RSS of this process image (ru_maxrss would carry the forking pytest's over exec).
PEAK = """
import json, sys
from pathlib import Path
from senpai.agents.measure import run_command
out = run_command(sys.argv[1], Path(sys.argv[2]), {}, 600, Path(sys.argv[3]))
hwm = [line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmHWM:")]
peak_mb = int(hwm[0].split()[1]) / 1024
print(json.dumps({"peak_mb": peak_mb, "rc": out.returncode, "acc": out.value("acc"), "tail": len(out.output)}))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_hundreds_of_mb_of_output_stream_to_the_log_with_bounded_memory(tmp_path: Path) -> None:
    mb = 400
    printer = f"import sys; line = 'x' * 1023 + chr(10)\nfor i in range({mb} * 1024): sys.stdout.write(line)\nprint('acc: 0.75')"
    (tmp_path / "spam.py").write_text(printer)
    log = tmp_path / "train.log"
    child = subprocess.run(
        [sys.executable, "-c", PEAK, f"{sys.executable} spam.py", str(tmp_path), str(log)],
        capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip
    result = json.loads(child.stdout)
    assert result["rc"] == 0 and result["acc"] == 0.75  # parsed from the stream, past 400 MB of noise
    assert log.stat().st_size > mb * 1024 * 1024  # the whole output is on disk
    assert result["tail"] <= TAIL_BYTES
    assert result["peak_mb"] < 150, result  # the old run_command held it all: > 2 x 400 MB


def test_key_value_lines_split_across_reads_and_the_last_one_wins(tmp_path: Path) -> None:
    out = run_command("printf 'loss: 1\\nacc: 0.'; sleep 0.2; printf '5\\nacc: 0.6\\r\\nnote: a b\\nacc:nan'", tmp_path, {}, 60)
    assert out.returncode == 0
    assert out.value("loss") == 1.0 and out.value("note") is None
    assert out.value("acc") != out.value("acc")  # nan, the last line without a newline
    assert run_command("printf 'acc: 0.5\\nacc: 0.6\\n'", tmp_path, {}, 60).value("acc") == 0.6


def test_the_command_gets_no_secret_whatever_its_name(tmp_path: Path, monkeypatch) -> None:
    for name, value in LEAKY.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    out = run_command("env", tmp_path, {"SEED": "3"}, 60, tmp_path / "env.log")
    seen = dict(line.split("=", 1) for line in (tmp_path / "env.log").read_text().splitlines() if "=" in line)
    assert not set(LEAKY) & set(seen), sorted(set(LEAKY) & set(seen))
    assert not any(v in out.output for v in LEAKY.values())
    assert seen["SEED"] == "3" and seen["LC_ALL"] == "C.UTF-8" and seen["HOME"] == os.environ["HOME"]


def _daemons(marker: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        if marker in " ".join(p.info["cmdline"] or []) and p.status() != psutil.STATUS_ZOMBIE:
            found.append(p)
    return found


@pytest.mark.parametrize(
    "launch",
    [
        "setsid",  # its own session: no longer in the command's process group
        "env -i setsid",  # and no tag in its environment: only being our descendant (we reap orphans) finds it
    ],
)
def test_a_daemon_that_leaves_the_group_dies_with_the_command(tmp_path: Path, launch: str) -> None:
    marker = f"{1000 + os.getpid() % 1000}.{time.monotonic_ns() % 1000}"
    cmd = f"{launch} sleep {marker} > /dev/null 2>&1 < /dev/null & sleep 0.3; echo 'acc: 1'"
    out = run_command(cmd, tmp_path, {}, 60)
    assert out.returncode == 0 and out.value("acc") == 1.0
    assert _daemons(f"sleep {marker}") == []


def test_the_timeout_kills_the_whole_tree_even_a_daemon_holding_the_pipe(tmp_path: Path) -> None:
    marker = f"{2000 + os.getpid() % 1000}.{time.monotonic_ns() % 1000}"
    out = run_command(f"setsid sleep {marker} & echo 'acc: 2'; sleep {marker}", tmp_path, {}, 1)
    assert out.returncode is None and out.value("acc") == 2.0
    assert _daemons(f"sleep {marker}") == []


def test_the_train_timeout_ends_before_the_jobs_deadline(monkeypatch) -> None:
    from senpai.agents.evidence import train_timeout
    from senpai.config.budgets import StudentBudget
    from senpai.fleet.base import ENV_DEADLINE

    budget = StudentBudget(deadline=100, run=100, train=90, post=10, turn=None, attempts=1)  # a budget of 100 s
    monkeypatch.delenv(ENV_DEADLINE, raising=False)
    assert train_timeout(budget, now=0) == 90  # no fleet deadline: 0.9 x the budget
    monkeypatch.setenv(ENV_DEADLINE, "1000")
    assert train_timeout(budget, now=500) == 90  # the job has time: the budget rules
    assert train_timeout(budget, now=950) == 40  # clone, checkout, an agent's turn spent 350 s: 10 s left to post
    assert train_timeout(budget, now=995) == 1.0
    monkeypatch.setenv(ENV_DEADLINE, "soon")
    assert train_timeout(budget, now=995) == 90
