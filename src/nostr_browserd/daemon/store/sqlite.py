"""The state store in one SQLite file, the default: ``<state dir>/state.sqlite3``.

WAL mode with ``synchronous=NORMAL`` keeps a claim plus an audit row at tens of microseconds,
so the store adds nothing noticeable to a command's round trip, and its statements run right
in the event loop: the interface's coroutines never wait on anything here.  A write that
fails (a full disk) raises ``UNAVAILABLE`` naming the directory; SQLite's journal keeps the
file whole.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ...errors import BrowserdError, ErrorCode
from ...nostr.signer import Signer
from .base import Migrations, Store, no_signer, steps_after

log = logging.getLogger(__name__)

MIGRATIONS: Migrations = (
    # 1: the schema before versions were kept (hence IF NOT EXISTS: such files are at 1 now)
    (
        "CREATE TABLE IF NOT EXISTS seen (id TEXT PRIMARY KEY, at REAL NOT NULL) WITHOUT ROWID",
        "CREATE INDEX IF NOT EXISTS seen_at ON seen (at)",
        "CREATE TABLE IF NOT EXISTS rejected (id TEXT PRIMARY KEY, at REAL NOT NULL) WITHOUT ROWID",
        "CREATE INDEX IF NOT EXISTS rejected_at ON rejected (at)",
        "CREATE TABLE IF NOT EXISTS pending (outer_id TEXT PRIMARY KEY, event_id TEXT NOT NULL,"
        " sender TEXT NOT NULL, scheme TEXT NOT NULL, request_id TEXT, text INTEGER NOT NULL,"
        " tool TEXT, running INTEGER NOT NULL DEFAULT 0, at REAL NOT NULL) WITHOUT ROWID",
        "CREATE TABLE IF NOT EXISTS audit (n INTEGER PRIMARY KEY, at REAL NOT NULL,"
        " controller TEXT NOT NULL, transport TEXT NOT NULL, request_id TEXT, tool TEXT,"
        " params TEXT, outcome TEXT NOT NULL, duration_ms REAL)",
        "CREATE TABLE IF NOT EXISTS conversation (controller TEXT PRIMARY KEY,"
        " transcript TEXT NOT NULL, at REAL NOT NULL) WITHOUT ROWID",
    ),
    # 2: saved browser states (were <state_dir>/<owner>/<name>.json)
    (
        "CREATE TABLE saved_state (owner TEXT NOT NULL, name TEXT NOT NULL,"
        " state TEXT NOT NULL, at REAL NOT NULL, PRIMARY KEY (owner, name)) WITHOUT ROWID",
    ),
    # 3: approvals waiting, and which worker's command waits for each
    (
        "CREATE TABLE approval (code TEXT PRIMARY KEY, worker TEXT NOT NULL,"
        " controller TEXT NOT NULL, approver TEXT NOT NULL, tool TEXT NOT NULL,"
        " at REAL NOT NULL, expires REAL NOT NULL) WITHOUT ROWID",
    ),
    # 4: workers, their controller leases, and the worker holding each pending command
    (
        "CREATE TABLE worker (name TEXT PRIMARY KEY, instance TEXT NOT NULL,"
        " started REAL NOT NULL, heartbeat REAL NOT NULL,"
        " draining INTEGER NOT NULL DEFAULT 0, gone INTEGER NOT NULL DEFAULT 0,"
        " running INTEGER NOT NULL DEFAULT 0, queued INTEGER NOT NULL DEFAULT 0,"
        " contexts INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID",
        "CREATE TABLE lease (controller TEXT PRIMARY KEY, worker TEXT NOT NULL,"
        " expires REAL NOT NULL, since REAL NOT NULL) WITHOUT ROWID",
        "CREATE INDEX lease_worker ON lease (worker)",
        "ALTER TABLE pending ADD COLUMN worker TEXT NOT NULL DEFAULT ''",
        "CREATE INDEX pending_sender ON pending (sender)",
    ),
    # 5: the credential vault, per owner (values sealed to the daemon's key)
    (
        "CREATE TABLE vault (owner TEXT NOT NULL, name TEXT NOT NULL, origins TEXT NOT NULL,"
        " totp INTEGER NOT NULL, sealed TEXT NOT NULL, at REAL NOT NULL,"
        " PRIMARY KEY (owner, name)) WITHOUT ROWID",
    ),
    # 6: blobs on Blossom servers, until they are deleted ([files] keep)
    (
        "CREATE TABLE blob (server TEXT NOT NULL, sha256 TEXT NOT NULL,"
        " expires REAL NOT NULL, PRIMARY KEY (server, sha256)) WITHOUT ROWID",
    ),
    # 7: monitors and schedules, per owner (daemon/schedule)
    (
        "CREATE TABLE monitor (owner TEXT NOT NULL, id TEXT NOT NULL, n INTEGER NOT NULL,"
        " spec TEXT NOT NULL, state TEXT NOT NULL, due REAL NOT NULL, at REAL NOT NULL,"
        " PRIMARY KEY (owner, id)) WITHOUT ROWID",
        "CREATE TABLE schedule (owner TEXT NOT NULL, id TEXT NOT NULL, n INTEGER NOT NULL,"
        " spec TEXT NOT NULL, state TEXT NOT NULL, due REAL NOT NULL, at REAL NOT NULL,"
        " PRIMARY KEY (owner, id)) WITHOUT ROWID",
    ),
)


def _owner_only(path: Path) -> None:
    """The file 0600 before SQLite opens it, whatever the umask: SQLite gives its ``-wal``
    and ``-shm`` the main file's mode.  A file an older release left 0644 is narrowed."""
    os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600))
    for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        with contextlib.suppress(FileNotFoundError):
            name.chmod(0o600)


class SqliteStore(Store):
    """The store in ``path``; one connection, used from the daemon's event loop."""

    now_sql = "(julianday('now') - 2440587.5) * 86400.0"

    def __init__(self, path: Path, signer: Callable[[], Signer | None] = no_signer) -> None:
        super().__init__(signer)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.path = path
        _owner_only(path)
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._run("PRAGMA journal_mode=WAL")
        self._run("PRAGMA synchronous=NORMAL")
        # A replaced row's bytes are zeroed, not left in the file's free space.
        self._run("PRAGMA secure_delete=ON")
        self._migrate()

    @property
    def where(self) -> str:
        return str(self.path)

    def _migrate(self) -> None:
        """Run the missing migrations in one write transaction (another process waits)."""
        self._run("BEGIN IMMEDIATE")
        try:
            self._run("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            version = self._run("SELECT max(version) FROM schema_version")[0][0][0] or 0
            for n, steps in steps_after(version, MIGRATIONS, self.where):
                for step in steps:
                    self._run(step)
                self._run("INSERT INTO schema_version (version) VALUES (?)", (n,))
        except BaseException:
            self._db.rollback()
            raise
        self._run("COMMIT")

    async def seal_plaintext(self) -> int:
        """Seal what an older release kept in plaintext, then write the sealed pages into the
        file itself at once (a checkpoint), so no plaintext page stays behind in it."""
        sealed = await super().seal_plaintext()
        if sealed:
            self._run("PRAGMA wal_checkpoint(TRUNCATE)")
        return sealed

    async def _execute(
        self, sql: str, params: Sequence[Any] = ()
    ) -> tuple[list[tuple[Any, ...]], int]:
        return self._run(sql, params)

    def _run(self, sql: str, params: Sequence[Any] = ()) -> tuple[list[tuple[Any, ...]], int]:
        try:
            cur = self._db.execute(sql, params)
            rows = cur.fetchall()
        except sqlite3.OperationalError as exc:
            # Where, and why, is the operator's to read: a reply carries no store detail.
            log.error("the state store %s cannot be written: %s", self.path, exc)
            raise BrowserdError(
                ErrorCode.UNAVAILABLE,
                "The daemon's state store cannot be written (is its disk full?): free some"
                " space on the daemon's machine. Nothing was lost.",
            ) from None
        return rows, cur.rowcount

    async def close(self) -> None:
        """Checkpoint and close."""
        self._db.close()
