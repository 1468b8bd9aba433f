"""The wrapper's SQLite state store. It is only a cache: delete it and the next tick rebuilds
everything from the forge and the fleet; only idempotent actions replay.

Tables (an older file's `kv` table is left alone, unread):
    events(id TEXT PRIMARY KEY, first_seen TEXT,  event ids, when first seen (ISO8601 UTC; the
           job TEXT)                              batch window of messages), and the job each was
                                                  handed to (recorded just before the launch)
"""

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (id TEXT PRIMARY KEY, first_seen TEXT NOT NULL, job TEXT);
"""


class StateStore:
    """A small SQLite file at `path` (created with its folder if missing)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, isolation_level=None, timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.executescript(SCHEMA)

    def see(self, event_ids: list[str], now: datetime | None = None) -> None:
        """Record event ids first seen `now` (default the current UTC time); one seen before keeps its time."""
        stamp = (now or datetime.now(UTC)).isoformat()
        self.db.executemany("INSERT OR IGNORE INTO events (id, first_seen) VALUES (?, ?)", [(e, stamp) for e in event_ids])

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
