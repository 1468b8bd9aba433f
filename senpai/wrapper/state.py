"""The wrapper's SQLite state store. It is only a cache: delete it and the next tick rebuilds
everything from the forge and the fleet; only idempotent actions replay.

Tables (an older file's `kv` table is left alone, unread):
    events(id TEXT PRIMARY KEY, first_seen TEXT,  event ids, when first seen (ISO8601 UTC; the
           job TEXT)                              batch window of messages), and the job each was
                                                  handed to (recorded just before the launch)

The file is untrusted input (design §4: a job's code may have reached it). It is opened with
triggers, views and schema functions off for this connection (SQLite's DBCONFIG ENABLE_TRIGGER,
ENABLE_VIEW, TRUSTED_SCHEMA off, DEFENSIVE on), so nothing planted in it runs when senpai writes.
A file that is not a regular file, fails SQLite's `quick_check`, or holds any schema object
senpai does not make (`sqlite_master`: a trigger, a view, another table or index), and any SQLite
error later (a corrupt page, a lock held past LOCK_TIMEOUT), make the store rebuild: the file
(with its -wal and -shm) is moved aside to `<name>.bad` (the last one kept, for a human to look
at), a new empty one is made and one warning is logged. If no file can be made there, the cache
lives in memory until the wrapper restarts. Each row is checked as it is read: a `first_seen`
that is not an aware ISO 8601 time at or before now, or a job that is not a job name, is dropped
(never raised): the message counts as first seen now, the handing as unknown.
"""

import logging
import os
import re
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (id TEXT PRIMARY KEY, first_seen TEXT NOT NULL, job TEXT);
"""
LEGACY = "CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT);"  # written by older versions, never read
LOCK_TIMEOUT = 5.0  # seconds a statement waits for a lock another process holds, then the store rebuilds
MAX_ID = 512  # characters of an event id read back (senpai's are < 100)
_JOB = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")  # a job name: a DNS-1123 label (`fleet.base.JobSpec.name`)
_OFF = ("ENABLE_TRIGGER", "ENABLE_VIEW", "TRUSTED_SCHEMA")


def _objects(db: sqlite3.Connection) -> frozenset[tuple]:
    return frozenset(db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))


def _made(sql: str) -> frozenset[tuple]:
    db = sqlite3.connect(":memory:")
    try:
        db.executescript(sql)
        return _objects(db)
    finally:
        db.close()


ALLOWED = _made(SCHEMA + LEGACY)  # what senpai ever made: the tables and their primary-key indexes


class _Untrusted(Exception):
    """The file is not a cache senpai wrote: why, for the warning."""


class StateStore:
    """A small SQLite file at `path` (created with its folder if missing); see the module docstring
    for what makes it rebuild. `rebuilds` counts the rebuilds since it was opened."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rebuilds = 0
        try:
            self.db = self._open(check=True)
        except (sqlite3.Error, OSError, _Untrusted) as e:
            self.db = self._rebuild(str(e) if isinstance(e, _Untrusted) else f"{type(e).__name__}: {e}")

    def _open(self, check: bool) -> sqlite3.Connection:
        """A connection to `path` with senpai's schema. Raises _Untrusted or sqlite3.Error (`check`:
        the file's own checks first) and OSError (no folder or file can be made)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if os.path.lexists(self.path) and (self.path.is_symlink() or not self.path.is_file()):
            raise _Untrusted("it is not a regular file")
        db = sqlite3.connect(self.path, isolation_level=None, timeout=LOCK_TIMEOUT)
        try:
            _defend(db)
            if check:
                _check(db)
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)
        except BaseException:
            db.close()
            raise
        return db

    def _rebuild(self, why: str) -> sqlite3.Connection:
        """Move the file aside (`<name>.bad`) and start an empty one; in memory if that fails too."""
        self.rebuilds += 1
        log.warning("wrapper cache %s rebuilt empty (it is only a cache; the forge holds the state): %s", self.path, why)
        try:
            for suffix in ("", "-wal", "-shm"):
                old = self.path.with_name(self.path.name + suffix)
                if os.path.lexists(old):
                    os.replace(old, old.with_name(old.name + ".bad"))
            return self._open(check=False)
        except (OSError, sqlite3.Error) as e:
            log.error("wrapper cache %s cannot be made (%s): it is kept in memory until the wrapper restarts", self.path, e)
            db = sqlite3.connect(":memory:", isolation_level=None)
            db.executescript(SCHEMA)
            return db

    def _run[T](self, what: str, fn: Callable[[sqlite3.Connection], T]) -> T:
        """`fn(db)`; after an SQLite error, once more on a rebuilt store (which starts empty)."""
        try:
            return fn(self.db)
        except sqlite3.Error as e:
            self._close()
            self.db = self._rebuild(f"{what}: {type(e).__name__}: {e}")
            return fn(self.db)

    def see(self, event_ids: list[str], now: datetime | None = None) -> None:
        """Record event ids first seen `now` (default the current UTC time); one seen before keeps its time."""
        stamp = (now or datetime.now(UTC)).isoformat()
        rows = [(e, stamp) for e in event_ids]
        self._run("record events", lambda db: db.executemany("INSERT OR IGNORE INTO events (id, first_seen) VALUES (?, ?)", rows))

    def first_seen(self, event_ids: list[str], now: datetime | None = None) -> dict[str, datetime]:
        """event id -> when it was first seen, for the ids recorded with a valid time: an aware ISO
        8601 time at or before `now` (default the current UTC time). A row with any other value is
        deleted (the next `see` records the event afresh)."""
        now = now or datetime.now(UTC)

        def read(db: sqlite3.Connection) -> dict[str, datetime]:
            out, bad = {}, []
            for eid in event_ids:
                row = db.execute("SELECT first_seen FROM events WHERE id = ?", (eid,)).fetchone()
                if row is None:
                    continue
                if (when := _time(row[0])) is not None and when <= now:
                    out[eid] = when
                else:
                    bad.append(eid)
            if bad:
                log.warning("wrapper cache: dropped %d event(s) whose first_seen is not a time senpai wrote", len(bad))
                db.executemany("DELETE FROM events WHERE id = ?", [(e,) for e in bad])
            return out

        return self._run("read first_seen", read)

    def pinned(self, prefix: str, value: int, now: datetime | None = None) -> int:
        """The number first recorded under `prefix` (as the id `<prefix><number>`), or `value`,
        recorded now if none was. A row under `prefix` whose rest is not such a number is deleted."""
        stamp = (now or datetime.now(UTC)).isoformat()

        def run(db: sqlite3.Connection) -> int:
            rows = db.execute("SELECT id FROM events WHERE substr(id, 1, ?) = ?", (len(prefix), prefix)).fetchall()
            for (eid,) in rows:
                rest = eid[len(prefix) :] if isinstance(eid, str) else ""
                if rest.isascii() and rest.isdigit() and len(rest) <= 12:
                    return int(rest)
            db.executemany("DELETE FROM events WHERE id = ?", rows)
            db.execute("INSERT OR IGNORE INTO events (id, first_seen) VALUES (?, ?)", (f"{prefix}{value}", stamp))
            return value

        return self._run("pin a number", run)

    def handed(self, event_ids: list[str], job: str) -> None:
        rows = [(job, e) for e in event_ids]
        self._run("record a handing", lambda db: db.executemany("UPDATE events SET job = ? WHERE id = ?", rows))

    def handed_jobs(self) -> dict[str, str]:
        """event id -> the advisor job it was handed to; rows whose id or job is not one senpai
        writes are left out."""

        def read(db: sqlite3.Connection) -> dict[str, str]:
            rows = db.execute("SELECT id, job FROM events WHERE job IS NOT NULL").fetchall()
            return {
                i: j
                for i, j in rows
                if isinstance(i, str) and len(i) <= MAX_ID and isinstance(j, str) and _JOB.fullmatch(j) is not None
            }

        return self._run("read handings", read)

    def _close(self) -> None:
        try:
            self.db.close()
        except sqlite3.Error:
            pass

    def close(self) -> None:
        self._close()


def _defend(db: sqlite3.Connection) -> None:
    """Nothing stored in the file runs on this connection: no trigger fires, no view or schema
    function is used, and the schema cannot be written by PRAGMA."""
    for name in _OFF:
        db.setconfig(getattr(sqlite3, f"SQLITE_DBCONFIG_{name}"), False)
    db.setconfig(sqlite3.SQLITE_DBCONFIG_DEFENSIVE, True)


def _check(db: sqlite3.Connection) -> None:
    """Raises _Untrusted unless the file passes quick_check and holds only what senpai makes."""
    result = db.execute("PRAGMA quick_check").fetchone()
    if result is None or result[0] != "ok":
        raise _Untrusted(f"it fails SQLite's quick_check ({str(result[0] if result else None)[:200]})")
    unknown = sorted(f"{kind} {str(name)[:60]!r}" for kind, name, _, _ in _objects(db) - ALLOWED)
    if unknown:
        shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise _Untrusted(f"it holds schema objects senpai never makes: {shown}")


def _time(value: object) -> datetime | None:
    """`value` as an aware datetime if it is an ISO 8601 string with a time zone, else None."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return None
    return when if when.tzinfo is not None else None
