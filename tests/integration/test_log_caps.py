"""Logs capped on disk (issue 24): a command's `train.log` and a local job's `log` keep the head and
the tail of what real processes print, with a marker between, and a killed writer leaves a
readable, bounded file. Small caps come from $SENPAI_LOG_HEAD_BYTES / $SENPAI_LOG_TAIL_BYTES."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from walled import wall_around

from senpai.fleet.base import JobSpec, JobStatus
from senpai.fleet.local import LocalFleet
from senpai.fleet.logcap import CappedLog
from senpai.fleet.supervise import Claim
from senpai.job.measure import run_command

HEAD, TAIL = 4096, 4096
MARKER = re.compile(rb"\n\[senpai\] (\d+) bytes of output cut here: [^\n]*\n")
CHUNK = 64 * 1024  # one write may be in the file beyond the cap while it is compacted


def spec(name: str, script: str) -> JobSpec:
    return JobSpec(name=name, role="student", student="ada", pr=7, command=["sh", "-c", script], wall_seconds=60)


def wait_for(fleet: LocalFleet, name: str, timeout: float = 60) -> JobStatus:
    deadline = time.monotonic() + timeout
    while (status := fleet.get(name)) is None or not status.done:
        assert time.monotonic() < deadline, f"{name}: still {status} after {timeout} s"
        time.sleep(0.05)
    return status


def stream(n: int, start: int = 0) -> bytes:
    """What `seq -f 'line %07.0f' start n-1` prints."""
    return b"".join(b"line %07d\n" % i for i in range(start, n))


@pytest.fixture(autouse=True)
def small_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SENPAI_LOG_HEAD_BYTES", str(HEAD))
    monkeypatch.setenv("SENPAI_LOG_TAIL_BYTES", str(TAIL))


def split(data: bytes) -> tuple[bytes, int, bytes]:
    """A capped log as (head, bytes cut, what follows the marker); fails if there is no marker."""
    m = MARKER.search(data, HEAD)
    assert m is not None and m.start() == HEAD, data[HEAD - 20 : HEAD + 200]
    return data[:HEAD], int(m[1]), data[m.end() :]


def consecutive(tail: bytes) -> list[int]:
    """The line numbers of the complete lines in `tail` (its first line may be cut), checked consecutive."""
    numbers = [int(line.removeprefix(b"line ")) for line in tail.split(b"\n")[1:-1]]
    assert numbers and numbers == list(range(numbers[0], numbers[0] + len(numbers))), tail[:200]
    return numbers


def test_a_command_that_prints_more_than_the_cap_leaves_its_head_and_tail(tmp_path: Path) -> None:
    printed = stream(200_000) + b"acc: 0.75\n"  # 2.6 MB through the pipe
    log = tmp_path / "train.log"
    out = run_command("seq -f 'line %07.0f' 0 199999; echo 'acc: 0.75'", tmp_path, {}, 60, log, wall=wall_around(tmp_path))
    assert out.returncode == 0 and out.value("acc") == 0.75
    data = log.read_bytes()
    marker_size = CappedLog(-1, HEAD, TAIL).marker_size
    assert len(data) < HEAD + marker_size + 2 * TAIL
    head, cut, tail = split(data)
    assert head == printed[:HEAD] and printed.endswith(tail) and len(tail) >= TAIL
    assert cut == len(printed) - HEAD - len(tail)  # the marker's count is exact
    assert tail.endswith(b"line 0199999\nacc: 0.75\n")


def test_a_short_log_is_written_whole(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    run_command("seq -f 'line %07.0f' 0 99", tmp_path, {}, 60, log, wall=wall_around(tmp_path))
    assert log.read_bytes() == stream(100)


WRITER = """
import sys, time
from pathlib import Path
from senpai.fleet.logcap import CappedLog
log = CappedLog.create(Path(sys.argv[1]))
n, stop = 0, int(sys.argv[2])
while stop < 0 or n < stop:
    log.write(b"".join(b"line %07d\\n" % i for i in range(n, n + 100)))
    n += 100
print("written", flush=True)
time.sleep(60)
"""


def _writer(path: Path, stop: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(stop)], stdout=subprocess.PIPE, text=True)


def test_a_writer_killed_mid_stream_leaves_a_bounded_readable_log(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    writer = _writer(log, -1)  # writes until killed
    deadline = time.monotonic() + 30
    while (not log.exists() or MARKER.search(log.read_bytes()) is None) and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)  # many compactions later, one of them in flight perhaps
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    data = log.read_bytes()
    assert len(data) <= HEAD + CappedLog(-1, HEAD, TAIL).marker_size + 2 * TAIL + CHUNK
    head, cut, tail = split(data)
    assert head == stream(HEAD // 13 + 1)[:HEAD] and cut > 0
    consecutive(tail[-TAIL:])  # the file's end is a run of the stream, whenever the kill came


def test_a_writer_killed_after_its_writes_lost_none_of_them(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    writer = _writer(log, 50_000)
    assert writer.stdout.readline() == "written\n"
    writer.send_signal(signal.SIGKILL)  # nothing was held in the process: every write went to the file
    writer.wait()
    head, cut, tail = split(log.read_bytes())
    printed = stream(50_000)
    assert head == printed[:HEAD] and printed.endswith(tail) and cut == len(printed) - HEAD - len(tail)


def test_a_local_jobs_log_keeps_its_head_and_tail_and_logs_shows_the_real_tail(tmp_path: Path) -> None:
    fleet = LocalFleet(tmp_path / "jobs")  # its supervisor reads the caps from the environment
    fleet.launch(spec("chatty", "seq -f 'line %07.0f' 0 199999; echo oops >&2; exit 3"))
    assert wait_for(fleet, "chatty").exit_code == 3
    data = (fleet.root / "chatty" / "log").read_bytes()
    head, cut, tail = split(data)
    printed = stream(200_000) + b"oops\n"
    assert head == printed[:HEAD] and cut > 0
    kept, failed = tail.rsplit(b"\n[senpai-fleet]", 1)[0] + b"\n", tail.rsplit(b"\n", 2)[-2]
    assert printed.endswith(kept) and len(kept) >= TAIL
    assert len(data) < HEAD + CappedLog(-1, HEAD, TAIL).marker_size + 2 * TAIL + len(failed) + 1
    lines = fleet.logs("chatty", tail_lines=3).splitlines()
    assert lines[:2] == ["line 0199999", "oops"] and "failed: Error (exit code 3)" in lines[2]


def test_a_local_job_whose_supervisor_is_killed_leaves_a_bounded_log(tmp_path: Path) -> None:
    fleet = LocalFleet(tmp_path / "jobs")
    fleet.launch(spec("endless", "seq -f 'line %07.0f' 0 999999999"))
    log = fleet.root / "endless" / "log"
    deadline = time.monotonic() + 30
    while MARKER.search(log.read_bytes()) is None and time.monotonic() < deadline:
        time.sleep(0.01)
    claim = Claim.model_validate_json((fleet.root / "endless" / "supervisor.json").read_text())
    os.kill(claim.pid, signal.SIGKILL)
    status = wait_for(fleet, "endless")  # the job, its pipe's reader gone, is Lost and killed
    assert status.reason == "Lost"
    data = log.read_bytes()
    head, cut, tail = split(data)
    assert head == stream(HEAD // 13 + 1)[:HEAD] and cut > 0
    body, lost = tail.rsplit(b"[senpai-fleet]", 1)  # after a line the job may not have finished
    assert b"failed: Lost" in lost and len(body) <= 2 * TAIL + CHUNK
    consecutive(body[-TAIL:])
