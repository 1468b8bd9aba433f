"""CappedLog on real files: what stays of a stream, whatever the sizes of its writes."""

import os
import re
from pathlib import Path

import pytest

from senpai.fleet import logcap
from senpai.fleet.logcap import CappedLog
from senpai.fleet.supervise import LOG, JobDir

MARKER = re.compile(rb"\n\[senpai\] (\d+) bytes of output cut here: [^\n]*\n")


def _kept(path: Path, head: int) -> tuple[bytes, int, bytes]:
    data = path.read_bytes()
    m = MARKER.match(data, head)
    assert m is not None, data[:300]
    return data[:head], int(m[1]), data[m.end() :]


@pytest.mark.parametrize("pieces", [1, 7, 1000, 100_000])
def test_head_marker_and_tail_whatever_the_write_sizes(tmp_path: Path, pieces: int) -> None:
    printed = bytes(range(256)) * 400  # 102400 bytes, each offset recognisable
    step = -(-len(printed) // pieces)
    with CappedLog.create(tmp_path / "log", head=1000, tail=3000) as log:
        for i in range(0, len(printed), step):
            assert log.write(printed[i : i + step]) == len(printed[i : i + step])
    head, cut, tail = _kept(tmp_path / "log", 1000)
    assert head == printed[:1000] and printed.endswith(tail) and 3000 <= len(tail) < 6000
    assert cut == len(printed) - 1000 - len(tail)


def test_a_stream_within_the_cap_is_kept_whole(tmp_path: Path) -> None:
    with CappedLog.create(tmp_path / "log", head=1000, tail=3000) as log:
        log.write(b"x" * 6000)
    assert (tmp_path / "log").read_bytes() == b"x" * 6000


def test_lines_another_writer_appends_stay_in_order(tmp_path: Path) -> None:
    # the supervisor's `[senpai-fleet]` lines go straight to the file (JobDir.log)
    (tmp_path / LOG).touch()
    with JobDir(tmp_path) as jd, CappedLog(os.open(tmp_path / LOG, os.O_RDWR), head=100, tail=300) as log:
        log.write(b"a" * 1000)
        jd.log("waiting for 1 free GPU(s) of 1")
        log.write(b"b" * 100)
    head, _, tail = _kept(tmp_path / LOG, 100)
    assert head == b"a" * 100 and re.fullmatch(rb"a*\[senpai-fleet\] \S+ waiting for 1 free GPU\(s\) of 1\nb{100}", tail)


def test_an_existing_file_is_not_opened(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").write_text("keep")
    (tmp_path / "log").symlink_to(tmp_path / "elsewhere")  # measure.clear removes it first
    with pytest.raises(FileExistsError):
        CappedLog.create(tmp_path / "log")
    assert (tmp_path / "elsewhere").read_text() == "keep"


@pytest.mark.parametrize("value, expected", [("2048", 2048)] + [(bad, logcap.HEAD_BYTES) for bad in ("0", "-5", "8M")])
def test_the_sizes_come_from_the_environment_when_valid(tmp_path: Path, monkeypatch, value: str, expected: int) -> None:
    monkeypatch.setenv(logcap.ENV_HEAD, value)
    with CappedLog.create(tmp_path / "log") as log:
        assert (log.head, log.tail) == (expected, logcap.TAIL_BYTES)
