"""The state store on PostgreSQL: ``[state] database = "postgresql://…"``.

Several daemons sharing one identity can share this store: a claim is one ``INSERT … ON
CONFLICT DO NOTHING RETURNING``, so of all the workers that receive a command exactly one gets
its ids back.  This uses psycopg 3's asynchronous connections from a small pool
(``AsyncConnectionPool``), each statement in its own (autocommit) transaction, so a round trip
to the server never stops the event loop.  The schema is migrated by :meth:`PostgresStore.open`,
under an advisory lock so that workers starting together migrate once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from ...errors import BrowserdError, ErrorCode
from ...nostr.signer import Signer
from .base import Migrations, Store, no_signer, steps_after

log = logging.getLogger(__name__)

MIGRATIONS: Migrations = (
    (
        "CREATE TABLE seen (id TEXT PRIMARY KEY, at DOUBLE PRECISION NOT NULL)",
        "CREATE INDEX seen_at ON seen (at)",
        "CREATE TABLE rejected (id TEXT PRIMARY KEY, at DOUBLE PRECISION NOT NULL)",
        "CREATE INDEX rejected_at ON rejected (at)",
        "CREATE TABLE pending (outer_id TEXT PRIMARY KEY, event_id TEXT NOT NULL,"
        " sender TEXT NOT NULL, scheme TEXT NOT NULL, request_id TEXT, text INTEGER NOT NULL,"
        " tool TEXT, running INTEGER NOT NULL DEFAULT 0, at DOUBLE PRECISION NOT NULL)",
        "CREATE TABLE audit (n BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
        " at DOUBLE PRECISION NOT NULL, controller TEXT NOT NULL, transport TEXT NOT NULL,"
        " request_id TEXT, tool TEXT, params TEXT, outcome TEXT NOT NULL,"
        " duration_ms DOUBLE PRECISION)",
        "CREATE INDEX audit_at ON audit (at)",
        "CREATE TABLE conversation (controller TEXT PRIMARY KEY, transcript TEXT NOT NULL,"
        " at DOUBLE PRECISION NOT NULL)",
    ),
    # 2: saved browser states (were <state_dir>/<owner>/<name>.json)
    (
        "CREATE TABLE saved_state (owner TEXT NOT NULL, name TEXT NOT NULL,"
        " state TEXT NOT NULL, at DOUBLE PRECISION NOT NULL, PRIMARY KEY (owner, name))",
    ),
    # 3: approvals waiting, and which worker's command waits for each
    (
        "CREATE TABLE approval (code TEXT PRIMARY KEY, worker TEXT NOT NULL,"
        " controller TEXT NOT NULL, approver TEXT NOT NULL, tool TEXT NOT NULL,"
        " at DOUBLE PRECISION NOT NULL, expires DOUBLE PRECISION NOT NULL)",
    ),
    # 4: workers, their controller leases, and the worker holding each pending command
    (
        "CREATE TABLE worker (name TEXT PRIMARY KEY, instance TEXT NOT NULL,"
        " started DOUBLE PRECISION NOT NULL, heartbeat DOUBLE PRECISION NOT NULL,"
        " draining INTEGER NOT NULL DEFAULT 0, gone INTEGER NOT NULL DEFAULT 0,"
        " running INTEGER NOT NULL DEFAULT 0, queued INTEGER NOT NULL DEFAULT 0,"
        " contexts INTEGER NOT NULL DEFAULT 0)",
        "CREATE TABLE lease (controller TEXT PRIMARY KEY, worker TEXT NOT NULL,"
        " expires DOUBLE PRECISION NOT NULL, since DOUBLE PRECISION NOT NULL)",
        "CREATE INDEX lease_worker ON lease (worker)",
        "ALTER TABLE pending ADD COLUMN worker TEXT NOT NULL DEFAULT ''",
        "CREATE INDEX pending_sender ON pending (sender)",
    ),
    # 5: the credential vault, per owner (values sealed to the daemon's key)
    (
        "CREATE TABLE vault (owner TEXT NOT NULL, name TEXT NOT NULL, origins TEXT NOT NULL,"
        " totp INTEGER NOT NULL, sealed TEXT NOT NULL, at DOUBLE PRECISION NOT NULL,"
        " PRIMARY KEY (owner, name))",
    ),
    # 6: blobs on Blossom servers, until they are deleted ([files] keep)
    (
        "CREATE TABLE blob (server TEXT NOT NULL, sha256 TEXT NOT NULL,"
        " expires DOUBLE PRECISION NOT NULL, PRIMARY KEY (server, sha256))",
    ),
    # 7: monitors and schedules, per owner (daemon/schedule)
    (
        "CREATE TABLE monitor (owner TEXT NOT NULL, id TEXT NOT NULL, n INTEGER NOT NULL,"
        " spec TEXT NOT NULL, state TEXT NOT NULL, due DOUBLE PRECISION NOT NULL,"
        " at DOUBLE PRECISION NOT NULL, PRIMARY KEY (owner, id))",
        "CREATE TABLE schedule (owner TEXT NOT NULL, id TEXT NOT NULL, n INTEGER NOT NULL,"
        " spec TEXT NOT NULL, state TEXT NOT NULL, due DOUBLE PRECISION NOT NULL,"
        " at DOUBLE PRECISION NOT NULL, PRIMARY KEY (owner, id))",
    ),
)

MIGRATION_LOCK = 0x6E62_7264  # pg_advisory_xact_lock key: one migrating worker at a time
CONNECT_TIMEOUT = 10.0


def describe(dsn: str) -> str:
    """``postgresql://user@host:port/db``: where the store is, without its password."""
    parts = conninfo_to_dict(dsn)
    user = f"{parts['user']}@" if parts.get("user") else ""
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{user}{parts.get('host', '')}{port}/{parts.get('dbname', '')}"


class PostgresStore(Store):
    """The store in the PostgreSQL database at ``dsn``: :meth:`open` it before use."""

    now_sql = "extract(epoch from clock_timestamp())::float8"

    unlimited = "LIMIT ALL"

    def __init__(
        self,
        dsn: str,
        *,
        max_connections: int = 4,
        signer: Callable[[], Signer | None] = no_signer,
    ) -> None:
        super().__init__(signer)
        self._where = describe(dsn)
        self._pool = AsyncConnectionPool(
            dsn,
            min_size=1,
            max_size=max_connections,
            kwargs={"autocommit": True},
            open=False,
            name="state",
        )

    @classmethod
    async def connect(
        cls,
        dsn: str,
        *,
        max_connections: int = 4,
        wait: float = CONNECT_TIMEOUT,
        signer: Callable[[], Signer | None] = no_signer,
    ) -> PostgresStore:
        """A store at ``dsn``, reached within ``wait`` seconds and migrated; ``signer()``
        seals its saved states and conversations."""
        store = cls(dsn, max_connections=max_connections, signer=signer)
        await store.open(wait)
        return store

    async def open(self, wait: float = CONNECT_TIMEOUT) -> None:
        """Connect, and run the migrations the database still needs."""
        try:
            await self._pool.open(wait=True, timeout=wait)
            await self._migrate()
        except PoolTimeout:
            await self._pool.close()
            raise BrowserdError(
                ErrorCode.UNAVAILABLE,
                f"The state store {self._where} cannot be reached"
                f" (no connection within {wait:g} s): check [state] database.",
            ) from None
        except BaseException:
            await self._pool.close()
            raise

    @property
    def where(self) -> str:
        return self._where

    async def _migrate(self) -> None:
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"
            )
            cur = await conn.execute("SELECT max(version) FROM schema_version")
            row = await cur.fetchone()
            version = (row[0] if row else None) or 0
            for n, steps in steps_after(version, MIGRATIONS, self.where):
                for step in steps:
                    await conn.execute(step.encode())
                await conn.execute("INSERT INTO schema_version (version) VALUES (%s)", (n,))

    def _among(self, ids: list[str]) -> tuple[str, list[Any]]:
        """One array parameter: the same statement whatever the number of ids (psycopg
        parses it once; hundreds of placeholders cost the kept-aside watcher a millisecond)."""
        return "= ANY(?)", [ids]

    async def _execute(
        self, sql: str, params: Sequence[Any] = ()
    ) -> tuple[list[tuple[Any, ...]], int]:
        try:
            async with self._pool.connection() as conn:
                cur = await conn.execute(sql.replace("?", "%s").encode(), params)
                rows = await cur.fetchall() if cur.description else []
                return rows, cur.rowcount
        except (psycopg.OperationalError, PoolTimeout) as exc:
            # Where, and why, is the operator's to read: a reply carries no store detail
            # (the database's user, host, port and name, or the server's own words).
            log.error(
                "the state store %s cannot be written: %s: %s",
                self.where,
                type(exc).__name__,
                str(exc).strip(),
            )
            raise BrowserdError(
                ErrorCode.UNAVAILABLE,
                "The daemon's state store cannot be reached just now. Nothing was lost.",
            ) from None

    async def seal_plaintext(self) -> int:
        """Seal what an older release kept in plaintext, then rewrite both tables: the rows
        the sealing replaced stay, dead, in the tables' files until then."""
        sealed = await super().seal_plaintext()
        if sealed:  # VACUUM FULL: a new file each, the old unlinked (plain VACUUM reuses pages)
            await self._execute("VACUUM FULL saved_state, conversation")
        return sealed

    async def close(self) -> None:
        """Close every connection of the pool."""
        await self._pool.close()
