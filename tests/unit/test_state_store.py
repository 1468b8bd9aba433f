"""The wrapper's SQLite cache is untrusted input: planted schema objects, a file that is no database,
bad rows and a lock held too long make it rebuild or drop rows, never raise (real SQLite files)."""

import logging
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from senpai.wrapper import state
from senpai.wrapper.state import StateStore

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _plant(path: Path, *sql: str) -> None:
    """Write a cache with `sql` run on it, as a job's code with write access to the file could."""
    store = StateStore(path)
    store.see(["message:1"], NOW - timedelta(minutes=1))
    store.handed(["message:1"], "senpai-advisor-abc-1")
    store.close()
    db = sqlite3.connect(path, isolation_level=None)
    for statement in sql:
        db.execute(statement)
    db.close()


TRIGGER = (
    "CREATE TRIGGER planted AFTER INSERT ON events BEGIN "
    "UPDATE events SET first_seen = 'not a time', job = 'x; rm -rf /' WHERE id = new.id; END"
)


@pytest.mark.parametrize(
    "sql",
    [
        [TRIGGER],
        ["CREATE VIEW planted AS SELECT * FROM events"],
        ["CREATE TABLE planted (x)"],
        ["CREATE INDEX planted ON events (job)"],
    ],
    ids=["trigger", "view", "table", "index"],
)
def test_a_planted_schema_object_rebuilds_the_cache_empty(tmp_path, caplog, sql):
    path = tmp_path / "wrapper.sqlite"
    _plant(path, *sql)
    with caplog.at_level(logging.WARNING, logger=state.__name__):
        store = StateStore(path)
    assert store.rebuilds == 1 and "planted" in caplog.text and "rebuilt empty" in caplog.text
    assert (tmp_path / "wrapper.sqlite.bad").is_file()  # kept aside for a human to look at
    assert store.first_seen(["message:1"], NOW) == {} and store.handed_jobs() == {}
    store.see(["message:2"], NOW)
    assert store.first_seen(["message:2"], NOW) == {"message:2": NOW}
    store.close()
    with sqlite3.connect(path) as db:
        assert {r[0] for r in db.execute("SELECT type FROM sqlite_master")} == {"table", "index"}
    assert StateStore(path).rebuilds == 0  # the rebuilt file is trusted on the next start


def test_a_trigger_planted_while_open_never_fires(tmp_path):
    path = tmp_path / "wrapper.sqlite"
    store = StateStore(path)
    with sqlite3.connect(path, isolation_level=None) as other:  # the job plants it after the check
        other.execute(TRIGGER)
    store.see(["message:1"], NOW)
    store.handed(["message:1"], "senpai-advisor-abc-1")
    assert store.first_seen(["message:1"], NOW) == {"message:1": NOW}
    assert store.handed_jobs() == {"message:1": "senpai-advisor-abc-1"}
    store.close()
    assert StateStore(path).rebuilds == 1  # and the next start finds it and rebuilds


@pytest.mark.parametrize("content", [b"", b"garbage" * 1000, b"SQLite format 3\x00" + b"\xff" * 4000])
def test_a_file_that_is_no_database_is_rebuilt(tmp_path, content):
    path = tmp_path / "wrapper.sqlite"
    path.write_bytes(content)
    store = StateStore(path)
    assert store.rebuilds == (1 if content else 0)  # an empty file is an empty SQLite database
    store.see(["message:1"], NOW)
    assert store.first_seen(["message:1"], NOW) == {"message:1": NOW}


def test_a_symlink_is_moved_aside_not_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("not senpai's")
    path = tmp_path / "state" / "wrapper.sqlite"
    path.parent.mkdir()
    path.symlink_to(elsewhere)
    store = StateStore(path)
    store.see(["message:1"], NOW)
    assert store.rebuilds == 1 and not path.is_symlink() and elsewhere.read_text() == "not senpai's"


@pytest.mark.parametrize(
    "value",
    ["not a time", "2026-12-01T11:00:00", "2027-01-01T00:00:00+00:00", 42, b"\x00", "9" * 10_000],
    ids=["text", "naive", "future", "integer", "blob", "huge"],
)
def test_a_bad_first_seen_is_dropped_and_recorded_again(tmp_path, value):
    path = tmp_path / "wrapper.sqlite"
    _plant(path)
    with sqlite3.connect(path, isolation_level=None) as db:
        db.execute("UPDATE events SET first_seen = ?", (value,))
    store = StateStore(path)
    assert store.rebuilds == 0
    assert store.first_seen(["message:1"], NOW) == {}
    store.see(["message:1"], NOW)
    assert store.first_seen(["message:1"], NOW) == {"message:1": NOW}


@pytest.mark.parametrize("job", ["x; rm -rf /", "A" * 10, "-bad", "a" * 64, b"senpai"])
def test_a_bad_job_name_is_left_out(tmp_path, job):
    path = tmp_path / "wrapper.sqlite"
    _plant(path)
    with sqlite3.connect(path, isolation_level=None) as db:
        db.execute("INSERT INTO events VALUES ('message:2', ?, ?)", ((NOW - timedelta(minutes=1)).isoformat(), job))
    assert StateStore(path).handed_jobs() == {"message:1": "senpai-advisor-abc-1"}


def test_a_lock_held_past_the_timeout_rebuilds_instead_of_raising(tmp_path, monkeypatch):
    monkeypatch.setattr(state, "LOCK_TIMEOUT", 0.2)
    path = tmp_path / "wrapper.sqlite"
    store = StateStore(path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        store.see(["message:1"], NOW)  # the write waits 0.2 s, then the store starts a fresh file
        assert store.rebuilds == 1
        assert store.first_seen(["message:1"], NOW) == {"message:1": NOW}
    finally:
        holder.rollback()
        holder.close()


def test_an_unwritable_folder_keeps_the_cache_in_memory(tmp_path):
    blocker = tmp_path / "state"
    blocker.write_text("a file where the folder should be")
    store = StateStore(blocker / "wrapper.sqlite")
    store.see(["message:1"], NOW)
    assert store.first_seen(["message:1"], NOW) == {"message:1": NOW}


@pytest.mark.parametrize("planted", ["round:b:upto:", "round:b:upto:x9", "round:b:upto:" + "9" * 40, "round:b:upto:٣"])
def test_a_pinned_number_is_kept_and_a_bad_one_recorded_afresh(tmp_path, planted):
    """The round's members (`senpai.wrapper.rounds`): the first number pinned under a prefix stands;
    a row under it that is not one is dropped, and the number given now is pinned."""
    path = tmp_path / "wrapper.sqlite"
    store = StateStore(path)
    assert store.pinned("round:a:upto:", 7, NOW) == 7
    assert store.pinned("round:a:upto:", 12, NOW) == 7  # pinned at the first pass: later PRs are not members
    with sqlite3.connect(path, isolation_level=None) as db:
        db.execute("INSERT INTO events (id, first_seen) VALUES (?, ?)", (planted, NOW.isoformat()))
    assert store.pinned("round:b:upto:", 5, NOW) == 5 and store.pinned("round:b:upto:", 9, NOW) == 5
