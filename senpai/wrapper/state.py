"""The wrapper's SQLite state store. It is only a cache: delete it and the next tick rebuilds
everything from the forge and the fleet; only idempotent actions replay.

Tables:
    kv(key TEXT PRIMARY KEY, value TEXT)          poll ETag and other cursors
    events(id TEXT PRIMARY KEY, first_seen TEXT,  event ids, when first seen (ISO8601 UTC; the
           job TEXT)                              batch window of messages), and the job each was
                                                  handed to (recorded just before the launch)
"""

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS events (id TEXT PRIMARY KEY, first_seen TEXT NOT NULL, job TEXT);
"""


class StateStore:
    """A small SQLite file at `path` (created with its folder if missing)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, isolation_level=None, timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.executescript(SCHEMA)

    def get(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, value: str | None) -> None:
        self.db.execute("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)", (key, value))

    def see(self, event_ids: list[str], now: datetime | None = None) -> list[str]:
        """Record event ids (first seen `now`, default the current UTC time); return those not seen before."""
        stamp = (now or datetime.now(UTC)).isoformat()
        new = []
        for eid in event_ids:
            cur = self.db.execute("INSERT OR IGNORE INTO events (id, first_seen) VALUES (?, ?)", (eid, stamp))
            if cur.rowcount:
                new.append(eid)
        return new

    def first_seen(self, event_ids: list[str]) -> dict[str, datetime]:
        """event id -> when it was first seen, for the ids recorded."""
        out = {}
        for eid in event_ids:
            row = self.db.execute("SELECT first_seen FROM events WHERE id = ?", (eid,)).fetchone()
            if row:
                out[eid] = datetime.fromisoformat(row[0])
        return out

    def handed(self, event_ids: list[str], job: str) -> None:
        self.db.executemany("UPDATE events SET job = ? WHERE id = ?", [(job, e) for e in event_ids])

    def handed_jobs(self) -> dict[str, str]:
        """event id -> the advisor job it was handed to."""
        return dict(self.db.execute("SELECT id, job FROM events WHERE job IS NOT NULL").fetchall())

    def close(self) -> None:
        self.db.close()
