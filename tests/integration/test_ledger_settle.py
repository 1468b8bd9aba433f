"""The ledger reader never misses a comment: its comments cache holds a thread while the PR's
`updated_at` (whole seconds, the forge's clock) stays, once read more than SETTLE seconds after it
by the forge's own clock (its answers' Date header), whatever the reader's clock says. Against a
local forge on a clock of its own (bench/forge_seed.serve)."""

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from forge_fixtures import commit_and_push, new_repository

from senpai.ledger.labels import SENPAI
from senpai.ledger.table import LedgerReader

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from forge_seed import serve, stop  # noqa: E402


@pytest.fixture
def skewed_forge(tmp_path):
    """A local forge whose clock stands 10 s behind the reader's (an NTP fault, or a forge that
    stamps a change before it shows it): every change it stamps falls in one second."""
    proc, url = serve(tmp_path / "forge", tmp_path / "clock", datetime.now(UTC) - timedelta(seconds=10))
    try:
        yield url
    finally:
        stop(proc)


def test_a_comment_in_the_same_forge_second_is_read_whatever_the_clocks(skewed_forge, tmp_path):
    forge, _ = new_repository(skewed_forge, tmp_path / "seed")
    commit_and_push(forge, tmp_path / "seed", "senpai/ada/h1", {"x.txt": "x\n"}, start="advisor")
    pr = forge.create_pull("h1", "body", "senpai/ada/h1", "advisor", [SENPAI])
    forge.create_comment(pr.number, "first")
    reader = LedgerReader(forge)
    reader.refresh()
    assert [c.body for c in reader.comments(reader.pull(pr.number))] == ["first"]
    forge.create_comment(pr.number, "/senpai stop")  # a human's command, the same forge second
    reader.refresh()
    assert [c.body for c in reader.comments(reader.pull(pr.number))] == ["first", "/senpai stop"]
