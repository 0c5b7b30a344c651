"""The state store's interface, and the SQL both backends share.

Seen ids must survive a restart: a relay re-delivers everything since our subscription's
``since`` (two days back for gift wraps), and a command seen again must not run again.  The
ids of gift wraps that carried no command (a stranger's, forged, unreadable) are kept too, so
that re-delivery costs no decryption.  Every table is bounded: :meth:`Store.prune` drops rows
by age and :meth:`Store.trim` by count.

A command is also held in ``pending`` from the moment it is queued until its reply went out,
so a daemon killed meanwhile answers it at its next start, as not run or as interrupted, and
never runs it again (its ids stay claimed).  A write that fails (a full disk, a lost database
server) raises ``UNAVAILABLE``; ids that could not be claimed are kept in memory and written
with the next claim that succeeds.

The SQL below is written once, with ``?`` placeholders, in the dialect SQLite (3.35+) and
PostgreSQL share (``ON CONFLICT``, ``RETURNING``); a backend supplies the connection, the
schema and its migrations.  Every method is a coroutine: PostgreSQL's round trips must not
stop the event loop (docs/design.md, "The state store").
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ...dm.messages import Scheme
from ...errors import BrowserdError, ErrorCode
from ...login.envelope import Envelopes
from ...nostr.signer import Signer
from ...redact import redact
from .blobs import BlobTables
from .leases import DEAD_HOLDER, LeaseTables
from .sealed_rows import SealedRows
from .vault_rows import VaultRows
from .watch_rows import WatchRows

KNOWN_AT_ONCE = 500  # ids per query of Store.known (twice that many parameters)
# Each migration is a list of statements; a database at version n runs the steps after n.
Migrations = Sequence[Sequence[str]]


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
    """A command that was queued or running when the daemon stopped without answering it.

    It is a reply address (``dm.messages.ReplyAddress``): its sender is answered in the
    scheme the command came in, citing its event, without the message that brought it.
    """

    outer_id: str
    event_id: str
    sender: str
    scheme: Scheme
    request_id: Any
    text: bool
    tool: str | None
    running: bool


PENDING_COLUMNS = "outer_id, event_id, sender, scheme, request_id, text, tool, running"


def _pending(row: Sequence[Any]) -> Pending:
    scheme: Scheme = "nip04" if row[3] == "nip04" else "nip17"  # as hold() wrote it
    return Pending(
        row[0], row[1], row[2], scheme, json.loads(row[4]), bool(row[5]), row[6], bool(row[7])
    )


def steps_after(version: int, migrations: Migrations, where: str) -> list[tuple[int, list[str]]]:
    """The migrations a database at ``version`` still needs, numbered from 1.

    A database migrated by a newer release is refused rather than written with an old schema.
    """
    if version > len(migrations):
        raise BrowserdError(
            ErrorCode.UNAVAILABLE,
            f"The state store {where} has schema version {version}; this nostr-browserd knows"
            f" {len(migrations)} at most: upgrade it.",
        )
    return [(n, list(steps)) for n, steps in enumerate(migrations, 1) if n > version]


def no_signer() -> Signer | None:
    """A store opened without an identity: it keeps no saved state and no conversation."""
    return None


class Store(LeaseTables, VaultRows, SealedRows, BlobTables, WatchRows, ABC):
    """The replay guard, the held commands, the audit log, the workers and their controller
    leases (``LeaseTables``), the credential vault (``VaultRows``), ``ask``'s conversations and
    the saved browser states (``SealedRows``: what ``browser.shelf.StateShelf`` asks of it),
    the blobs kept on Blossom servers (``BlobTables``), and monitors and schedules
    (``WatchRows``)."""

    # How the dialect says "no limit" before an OFFSET.
    unlimited = "LIMIT -1"

    def __init__(self, signer: Callable[[], Signer | None] = no_signer) -> None:
        """``signer()``: the identity logged in now, which seals states and conversations."""
        self._owed: set[str] = set()  # claimed while the store was unwritable: written later
        self.envelopes = Envelopes(signer)

    @property
    @abstractmethod
    def where(self) -> str:
        """The store's place, for messages and the status page (never a password)."""

    @abstractmethod
    async def _execute(
        self, sql: str, params: Sequence[Any] = ()
    ) -> tuple[list[tuple[Any, ...]], int]:
        """Run one statement in its own transaction: its rows and its row count.

        A failure to write or reach the store raises ``UNAVAILABLE``.
        """

    @abstractmethod
    async def close(self) -> None:
        """Release the connection(s); the store is unusable afterwards."""

    def _among(self, ids: list[str]) -> tuple[str, list[Any]]:
        """SQL that tests a column against ``ids``, and its parameters: one per id here."""
        return f"IN ({', '.join('?' * len(ids))})", list(ids)

    async def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return (await self._execute(sql, params))[0]

    async def _change(self, sql: str, params: Sequence[Any] = ()) -> int:
        return (await self._execute(sql, params))[1]

    async def claim(
        self, ids: Iterable[str], now: float | None = None, *, owe: bool = True
    ) -> bool:
        """Record ``ids`` as processed; True only if none of them had been seen before.

        One statement, ``INSERT … ON CONFLICT DO NOTHING RETURNING id``: of several workers
        claiming the same id at once exactly one gets it back.  Every id is recorded either
        way, so a wrap seen for the first time around an old rumor is remembered as well.
        When the write fails ``UNAVAILABLE`` is raised, and the ids are still remembered (in
        memory, written with the next claim that succeeds) unless ``owe`` is False.
        """
        at = time.time() if now is None else now
        ids = list(dict.fromkeys(ids))
        fresh = not any(i in self._owed for i in ids)
        # One order in every worker: two inserting the same ids in different orders (a set's
        # order differs between processes) would each wait for the other's row: a deadlock.
        todo = sorted({*self._owed, *ids})
        if not todo:
            return fresh
        values = ", ".join(["(?, ?)"] * len(todo))
        try:
            rows = await self._rows(
                f"INSERT INTO seen (id, at) VALUES {values} ON CONFLICT DO NOTHING RETURNING id",
                [v for event_id in todo for v in (event_id, at)],
            )
        except BrowserdError:
            if owe:
                self._owed.update(ids)
            raise
        self._owed.clear()
        inserted = {row[0] for row in rows}
        return fresh and all(i in inserted for i in ids)

    async def known(self, ids: Iterable[str]) -> set[str]:
        """Which of ``ids`` were claimed or rejected already: the inbox's check, before any
        decryption, of everything that arrived since its last look (one query per 500)."""
        ids = list(dict.fromkeys(ids))
        found = {i for i in ids if i in self._owed}
        for start in range(0, len(ids), KNOWN_AT_ONCE):
            among, params = self._among(ids[start : start + KNOWN_AT_ONCE])
            rows = await self._rows(
                f"SELECT id FROM seen WHERE id {among}"
                f" UNION SELECT id FROM rejected WHERE id {among}",
                [*params, *params],
            )
            found.update(row[0] for row in rows)
        return found

    async def reject(self, event_id: str, now: float | None = None) -> None:
        """Remember a gift wrap that carried no command, so it is never decrypted again."""
        at = time.time() if now is None else now
        await self._change(
            "INSERT INTO rejected (id, at) VALUES (?, ?) ON CONFLICT DO NOTHING", (event_id, at)
        )

    async def hold(
        self,
        *,
        outer_id: str,
        event_id: str,
        sender: str,
        scheme: str,
        request_id: Any,
        text: bool,
        tool: str | None,
        worker: str = "",
    ) -> None:
        """Keep a queued command until :meth:`release`: a restart answers what is left, and
        so does a worker that takes ``worker``'s controller over."""
        await self._change(
            "INSERT INTO pending (outer_id, event_id, sender, scheme, request_id, text, tool,"
            " running, at, worker) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?) ON CONFLICT (outer_id)"
            " DO UPDATE SET event_id = excluded.event_id, sender = excluded.sender,"
            " scheme = excluded.scheme, request_id = excluded.request_id, text = excluded.text,"
            " tool = excluded.tool, running = 0, at = excluded.at, worker = excluded.worker",
            (
                outer_id,
                event_id,
                sender,
                scheme,
                json.dumps(request_id),
                int(text),
                tool,
                time.time(),
                worker,
            ),
        )

    async def mark_running(self, outer_id: str) -> None:
        """The held command has started: after a crash it may have been partly done."""
        await self._change("UPDATE pending SET running = 1 WHERE outer_id = ?", (outer_id,))

    async def release(self, outer_id: str) -> None:
        """The held command was answered."""
        await self._change("DELETE FROM pending WHERE outer_id = ?", (outer_id,))

    async def unanswered(self, worker: str = "") -> list[Pending]:
        """Commands ``worker`` held without answering them when it stopped, oldest first."""
        rows = await self._rows(
            f"SELECT {PENDING_COLUMNS} FROM pending WHERE worker = ? ORDER BY at", (worker,)
        )
        return [_pending(r) for r in rows]

    async def adopt_held(self, controller: str, worker: str, *, silent_for: float) -> list[Pending]:
        """Make ``worker`` the holder of what dead workers left unanswered for ``controller``,
        oldest first.

        Called by the worker that has just taken the controller's lease: one statement moves
        the rows, so of two workers that did, only one answers each row, and a worker that
        was paused finds its rows gone (``start_held``, ``answering``).  Only the rows of a
        worker that is dead (gone, or silent for ``silent_for`` seconds): a live one that was
        merely late answers its own, truly (it ran them, or it did not).
        """
        rows = await self._rows(
            self._now(
                f"UPDATE pending SET worker = ? WHERE sender = ? AND worker <> ? AND {DEAD_HOLDER}"
                f" RETURNING {PENDING_COLUMNS}, at"
            ),
            (worker, controller, worker, silent_for),
        )
        return [_pending(r) for r in sorted(rows, key=lambda r: r[-1])]

    async def prune(self, older_than: float, now: float | None = None) -> int:
        """Forget seen and rejected ids older than ``older_than`` seconds, and approvals that
        expired (a killed worker's); returns how many."""
        at = time.time() if now is None else now
        gone = 0
        for table in ("seen", "rejected", "pending"):
            gone += await self._change(f"DELETE FROM {table} WHERE at < ?", (at - older_than,))
        return gone + await self._change("DELETE FROM approval WHERE expires < ?", (at,))

    async def trim(
        self, *, max_rejected: int, audit_age: float, max_audit: int, now: float | None = None
    ) -> int:
        """Keep the newest ``max_rejected`` rejected ids, and audit rows younger than
        ``audit_age`` seconds, at most ``max_audit`` of them; returns how many rows went.

        Seen ids are never cut by count: forgetting one early would let its command run again.
        """
        cutoff = (time.time() if now is None else now) - audit_age
        gone = await self._change(
            "DELETE FROM rejected WHERE id IN"
            f" (SELECT id FROM rejected ORDER BY at DESC {self.unlimited} OFFSET ?)",
            (max_rejected,),
        )
        gone += await self._change("DELETE FROM audit WHERE at < ?", (cutoff,))
        gone += await self._change(
            f"DELETE FROM audit WHERE n IN (SELECT n FROM audit ORDER BY n DESC {self.unlimited}"
            " OFFSET ?)",
            (max_audit,),
        )
        return gone

    async def audit(
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
        await self._change(
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

    async def recent(self, limit: int = 20) -> list[AuditEntry]:
        """The last ``limit`` commands, newest first."""
        rows = await self._rows(
            "SELECT at, controller, transport, request_id, tool, params, outcome, duration_ms"
            " FROM audit ORDER BY n DESC LIMIT ?",
            (limit,),
        )
        return [AuditEntry(r[0], r[1], r[2], r[3], r[4], json.loads(r[5]), *r[6:]) for r in rows]

    async def hold_approval(
        self,
        code: str,
        *,
        worker: str,
        controller: str,
        approver: str,
        tool: str,
        expires_in: float,
    ) -> bool:
        """Record that ``worker`` asked ``approver`` about ``controller``'s ``tool`` under
        ``code``; False when a live approval has that code already (pick another).

        Every worker reads the approver's ``approve CODE`` DM: :meth:`approval_holder` says
        which one's command waits for it.  A row outlives a killed worker until ``expires_in``
        seconds have passed; then its code may be taken again.
        """
        at = time.time()
        rows = await self._rows(
            "INSERT INTO approval (code, worker, controller, approver, tool, at, expires)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (code) DO UPDATE SET"
            " worker = excluded.worker, controller = excluded.controller,"
            " approver = excluded.approver, tool = excluded.tool, at = excluded.at,"
            " expires = excluded.expires WHERE approval.expires <= excluded.at RETURNING code",
            (code, worker, controller, approver, tool, at, at + expires_in),
        )
        return bool(rows)

    async def drop_approval(self, code: str) -> None:
        """The approval was decided, timed out or given up."""
        await self._change("DELETE FROM approval WHERE code = ?", (code,))

    async def approval_holder(self, code: str) -> str | None:
        """The worker whose command waits for the approval ``code``; None when none does."""
        rows = await self._rows(
            "SELECT worker FROM approval WHERE code = ? AND expires > ?", (code, time.time())
        )
        return rows[0][0] if rows else None

    async def approvals(self) -> list[dict[str, Any]]:
        """The approvals waiting on every worker, oldest first, for the status page: who
        asks whom about which tool, never the code (it is the approver's to send)."""
        rows = await self._rows(
            "SELECT worker, controller, approver, tool, at, expires FROM approval"
            " WHERE expires > ? ORDER BY at",
            (time.time(),),
        )
        keys = ("worker", "controller", "approver", "tool", "at", "expires")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    async def counts(self) -> dict[str, int]:
        """Sizes for the status page."""
        tables = {"seen_ids": "seen", "rejected_ids": "rejected", "commands": "audit"}
        return {
            name: (await self._rows(f"SELECT count(*) FROM {t}"))[0][0]
            for name, t in tables.items()
        }
