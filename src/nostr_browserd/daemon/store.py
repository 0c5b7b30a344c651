"""The state store: one SQLite file: the replay guard, rejected wraps, the audit log, and
the conversations of ``ask``.

Seen ids must survive a restart: a relay re-delivers everything since our subscription's
``since`` (two days back for gift wraps), and a command seen again must not run again.  The
ids of gift wraps that carried no command (a stranger's, forged, unreadable) are kept too, so
that re-delivery costs no decryption.  WAL mode with ``synchronous=NORMAL`` keeps a claim plus
an audit row at tens of microseconds, so the store adds nothing noticeable to a command's round
trip.  Every table is bounded: :meth:`Store.prune` drops rows by age and by count.

A command is also held in ``pending`` from the moment it is queued until its reply went out,
so a daemon killed meanwhile answers it at its next start, as not run or as interrupted, and
never runs it again (its ids stay claimed).  A write that fails (a full disk) raises
``UNAVAILABLE`` naming the directory; SQLite's journal keeps the file whole, and ids that could
not be claimed are kept in memory and written with the next write that succeeds.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import BrowserdError, ErrorCode
from ..redact import redact

SCHEMA = """
CREATE TABLE IF NOT EXISTS seen (id TEXT PRIMARY KEY, at REAL NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS seen_at ON seen (at);
CREATE TABLE IF NOT EXISTS rejected (id TEXT PRIMARY KEY, at REAL NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS rejected_at ON rejected (at);
CREATE TABLE IF NOT EXISTS pending (
    outer_id TEXT PRIMARY KEY,
    event_id TEXT NOT NULL,
    sender TEXT NOT NULL,
    scheme TEXT NOT NULL,
    request_id TEXT,
    text INTEGER NOT NULL,
    tool TEXT,
    running INTEGER NOT NULL DEFAULT 0,
    at REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS audit (
    n INTEGER PRIMARY KEY,
    at REAL NOT NULL,
    controller TEXT NOT NULL,
    transport TEXT NOT NULL,
    request_id TEXT,
    tool TEXT,
    params TEXT,
    outcome TEXT NOT NULL,
    duration_ms REAL
);
CREATE TABLE IF NOT EXISTS conversation (
    controller TEXT PRIMARY KEY,
    transcript TEXT NOT NULL,
    at REAL NOT NULL
) WITHOUT ROWID;
"""


@dataclass(frozen=True)
class AuditEntry:
    """One command as it was recorded."""

    at: float
    controller: str
    transport: str
    request_id: str | None
    tool: str | None
    params: Any
    outcome: str
    duration_ms: float | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, for the status page."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class Pending:
    """A command that was queued or running when the daemon stopped without answering it."""

    outer_id: str
    event_id: str
    sender: str
    scheme: str
    request_id: Any
    text: bool
    tool: str | None
    running: bool


class Store:
    """The replay guard and the audit log, in ``<state dir>/state.sqlite3``."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.path = path
        self._owed: set[str] = set()  # claimed while the disk was full: written later
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        with self._writing():
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(SCHEMA)

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Turn SQLite's write failures (a full disk, an I/O error) into a clear error."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            raise BrowserdError(
                ErrorCode.UNAVAILABLE,
                f"The daemon's state store in {self.path.parent} cannot be written ({exc}):"
                " free some space there. Nothing was lost.",
            ) from None

    def close(self) -> None:
        """Checkpoint and close; the store is unusable afterwards."""
        self._db.close()

    def claim(self, ids: Iterable[str], now: float | None = None) -> bool:
        """Record ``ids`` as processed; True only if none of them had been seen before.

        Every id is recorded either way, so a wrap seen for the first time around an old rumor
        is remembered as well.  When the write fails the ids are still remembered (in memory,
        written with the next write that succeeds) and ``UNAVAILABLE`` is raised.
        """
        at = time.time() if now is None else now
        ids = list(ids)
        fresh = not any(i in self._owed for i in ids)
        try:
            with self._writing(), self._db:
                for event_id in [*self._owed, *ids]:
                    cur = self._db.execute(
                        "INSERT OR IGNORE INTO seen (id, at) VALUES (?, ?)", (event_id, at)
                    )
                    if event_id in ids:
                        fresh = fresh and cur.rowcount == 1
        except BrowserdError:
            self._owed.update(ids)
            raise
        self._owed.clear()
        return fresh

    def was_seen(self, event_id: str) -> bool:
        """Whether ``event_id`` was claimed already (a cheap check before unwrapping)."""
        if event_id in self._owed:
            return True
        row = self._db.execute("SELECT 1 FROM seen WHERE id = ?", (event_id,)).fetchone()
        return row is not None

    def reject(self, event_id: str, now: float | None = None) -> None:
        """Remember a gift wrap that carried no command, so it is never decrypted again."""
        at = time.time() if now is None else now
        with self._writing():
            self._db.execute(
                "INSERT OR IGNORE INTO rejected (id, at) VALUES (?, ?)", (event_id, at)
            )

    def hold(
        self,
        *,
        outer_id: str,
        event_id: str,
        sender: str,
        scheme: str,
        request_id: Any,
        text: bool,
        tool: str | None,
    ) -> None:
        """Keep a queued command until :meth:`release`: a restart answers what is left."""
        with self._writing():
            self._db.execute(
                "INSERT OR REPLACE INTO pending (outer_id, event_id, sender, scheme, request_id,"
                " text, tool, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    outer_id,
                    event_id,
                    sender,
                    scheme,
                    json.dumps(request_id),
                    text,
                    tool,
                    time.time(),
                ),
            )

    def mark_running(self, outer_id: str) -> None:
        """The held command has started: after a crash it may have been partly done."""
        with self._writing():
            self._db.execute("UPDATE pending SET running = 1 WHERE outer_id = ?", (outer_id,))

    def release(self, outer_id: str) -> None:
        """The held command was answered."""
        with self._writing():
            self._db.execute("DELETE FROM pending WHERE outer_id = ?", (outer_id,))

    def unanswered(self) -> list[Pending]:
        """Commands a stopped daemon held without answering them, oldest first."""
        rows = self._db.execute(
            "SELECT outer_id, event_id, sender, scheme, request_id, text, tool, running"
            " FROM pending ORDER BY at"
        ).fetchall()
        return [
            Pending(r[0], r[1], r[2], r[3], json.loads(r[4]), bool(r[5]), r[6], bool(r[7]))
            for r in rows
        ]

    def was_rejected(self, event_id: str) -> bool:
        """Whether ``event_id`` was rejected already (checked before any decryption)."""
        row = self._db.execute("SELECT 1 FROM rejected WHERE id = ?", (event_id,)).fetchone()
        return row is not None

    def prune(self, older_than: float, now: float | None = None) -> int:
        """Forget seen and rejected ids older than ``older_than`` seconds; returns how many."""
        cutoff = (time.time() if now is None else now) - older_than
        with self._writing(), self._db:
            seen = self._db.execute("DELETE FROM seen WHERE at < ?", (cutoff,)).rowcount
            rejected = self._db.execute("DELETE FROM rejected WHERE at < ?", (cutoff,)).rowcount
            pending = self._db.execute("DELETE FROM pending WHERE at < ?", (cutoff,)).rowcount
        return seen + rejected + pending

    def trim(
        self, *, max_rejected: int, audit_age: float, max_audit: int, now: float | None = None
    ) -> int:
        """Keep the newest ``max_rejected`` rejected ids, and audit rows younger than
        ``audit_age`` seconds, at most ``max_audit`` of them; returns how many rows went.

        Seen ids are never cut by count: forgetting one early would let its command run again.
        """
        cutoff = (time.time() if now is None else now) - audit_age
        with self._writing(), self._db:
            gone = self._db.execute(
                "DELETE FROM rejected WHERE id IN"
                " (SELECT id FROM rejected ORDER BY at DESC LIMIT -1 OFFSET ?)",
                (max_rejected,),
            ).rowcount
            gone += self._db.execute("DELETE FROM audit WHERE at < ?", (cutoff,)).rowcount
            gone += self._db.execute(
                "DELETE FROM audit WHERE n IN"
                " (SELECT n FROM audit ORDER BY n DESC LIMIT -1 OFFSET ?)",
                (max_audit,),
            ).rowcount
        return gone

    def audit(
        self,
        *,
        controller: str,
        transport: str,
        request_id: str | None,
        tool: str | None,
        params: Any,
        outcome: str,
        duration_ms: float | None,
    ) -> AuditEntry:
        """Append one command (params redacted here, whatever the caller passed)."""
        entry = AuditEntry(
            time.time(),
            controller,
            transport,
            request_id,
            tool,
            redact(params),
            outcome,
            duration_ms,
        )
        with self._writing():
            self._db.execute(
                "INSERT INTO audit (at, controller, transport, request_id, tool, params, outcome,"
                " duration_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    entry.at,
                    controller,
                    transport,
                    request_id,
                    tool,
                    json.dumps(entry.params, ensure_ascii=False, default=str),
                    outcome,
                    duration_ms,
                ),
            )
        return entry

    def recent(self, limit: int = 20) -> list[AuditEntry]:
        """The last ``limit`` commands, newest first."""
        rows = self._db.execute(
            "SELECT at, controller, transport, request_id, tool, params, outcome, duration_ms"
            " FROM audit ORDER BY n DESC LIMIT ?",
            (limit,),
        ).fetchall()
        return [AuditEntry(r[0], r[1], r[2], r[3], r[4], json.loads(r[5]), *r[6:]) for r in rows]

    def conversation(self, controller: str) -> list[dict[str, Any]]:
        """``controller``'s ``ask`` conversation (empty when none, or unreadable)."""
        row = self._db.execute(
            "SELECT transcript FROM conversation WHERE controller = ?", (controller,)
        ).fetchone()
        try:
            transcript = json.loads(row[0]) if row else []
        except ValueError:
            return []
        return transcript if isinstance(transcript, list) else []

    def save_conversation(self, controller: str, transcript: list[dict[str, Any]]) -> None:
        """Keep ``controller``'s conversation across turns and restarts."""
        self._db.execute(
            "INSERT OR REPLACE INTO conversation (controller, transcript, at) VALUES (?, ?, ?)",
            (controller, json.dumps(transcript, ensure_ascii=False), time.time()),
        )

    def forget_conversation(self, controller: str) -> None:
        """``ask --new``: the next turn starts with nothing behind it."""
        self._db.execute("DELETE FROM conversation WHERE controller = ?", (controller,))

    def counts(self) -> dict[str, int]:
        """Sizes for the status page."""
        seen = self._db.execute("SELECT count(*) FROM seen").fetchone()[0]
        rejected = self._db.execute("SELECT count(*) FROM rejected").fetchone()[0]
        audit = self._db.execute("SELECT count(*) FROM audit").fetchone()[0]
        return {"seen_ids": seen, "rejected_ids": rejected, "commands": audit}
